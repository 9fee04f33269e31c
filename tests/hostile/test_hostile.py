"""The hostile tree end to end: the CLI and the real server over stdio index it, plan on it and
render prompts from it without reading anything outside the root, without an ignored file or a
secret file, and without stalling on devices, FIFOs, loops or a 100 MB file."""

from __future__ import annotations

import asyncio
import os
import sqlite3
import subprocess
import sys

import pytest
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient

from tests.hostile.builder import ENV_MARKER, IGNORED_MARKER, HostileTree, build
from tests.lsp.conftest import server_command, start

QUERY = "how is the order total computed with tax? compute_total leaked api_settings keys"


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> HostileTree:
    return build(tmp_path_factory.mktemp("hostile"))


def ctx(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "CTX_HOSTILE_CANARY": ENV_MARKER}  # what /proc/self/environ would show
    return subprocess.run(
        [sys.executable, "-m", "ctx_lsp", *args], capture_output=True, text=True, timeout=600, env=env
    )


def test_cli_index_and_prompt_leak_nothing(tree: HostileTree):
    indexed = ctx("index", str(tree.root), "--quiet")
    assert indexed.returncode == 0, indexed.stderr
    assert "Traceback" not in indexed.stderr

    out = ctx("plan", str(tree.root), "--query", QUERY, "--format", "prompt")
    assert out.returncode == 0, out.stderr
    assert "def compute_total" in out.stdout or "compute_total(" in out.stdout  # the real code is there
    assert tree.leaks(out.stdout + out.stderr) == []
    # the instruction files that are links out were left out, and the user is told why
    tree_out = ctx("plan", str(tree.root), "--query", QUERY, "--no-index-refresh")
    assert "AGENTS.md" in tree_out.stdout and "left out of the prompt" in tree_out.stdout
    assert "ctx.toml: cannot read it" in tree_out.stderr

    with sqlite3.connect(tree.root / ".ctx" / "index.sqlite3") as db:
        paths = {r[0] for r in db.execute("SELECT rel FROM files")}
        bodies = "\n".join(r[0] for r in db.execute("SELECT body FROM symbols"))
    assert tree.leaks(bodies) == []
    assert "pkg/core.py" in paths and "d/" * 299 + "d/leaf.py" in paths
    assert not paths & {"ignored_secret.py", "private/keys.py", "pkg/outside_mod.py", "zero.py", "fifo.py"}
    assert not any(p.startswith(("etc/", "elsewhere/", "self/", "loop/")) for p in paths)


@pytest.fixture
async def hostile_client(tree: HostileTree):
    client = await ClientServerConfig(
        server_command=server_command(), server_env={**os.environ, "CTX_HOSTILE_CANARY": ENV_MARKER}
    ).start()
    await start(client, tree.root, session="hostile")
    yield client
    await client.shutdown_session()


async def _error(client: LanguageClient, method: str, params: dict) -> Exception:
    with pytest.raises(Exception) as info:
        await client.protocol.send_request_async(method, params)
    return info.value


async def test_server_paths_go_through_one_check(hostile_client: LanguageClient, tree: HostileTree):
    c = hostile_client
    outside = tree.outside / "outside_mod.py"
    # outside the root — existing or not, by absolute path, by .., or by a link — all the same error
    paths = ("/etc/passwd", "/etc/no-such-file", str(outside), "../outside/outside_mod.py", "elsewhere/x.py")
    errors = [await _error(c, "ctx/refreshCapsules", {"paths": [p]}) for p in paths]
    assert all(getattr(e, "code", None) == -32602 for e in errors), errors
    assert len({str(e).replace(p, "PATH") for e, p in zip(errors, paths, strict=True)}) == 1  # no existence oracle
    # devices and FIFOs are refused at once, never read
    for p in ("zero.py", "fifo.py", "CLAUDE.md"):
        err = await _error(c, "ctx/refreshCapsules", {"paths": [p]})
        assert getattr(err, "code", None) == -32602, err
    for uri in ((tree.root / "zero.py").as_uri(), "untitled:Untitled-1", outside.as_uri()):
        err = await _error(c, "ctx/planContext", {"query": "x", "focus": {"uri": uri}})
        assert getattr(err, "code", None) == -32602, err
    plan = await c.protocol.send_request_async("ctx/planContext", {"query": QUERY})
    assert plan.totals.tokens <= plan.promptBudget
    rendered = await c.protocol.send_request_async("ctx/renderPrompt", {"format": "text"})
    assert "compute_total" in rendered.text
    assert tree.leaks(rendered.text) == []


async def test_ignored_file_open_in_the_editor_stays_out(hostile_client: LanguageClient, tree: HostileTree):
    c = hostile_client
    uri = (tree.root / "ignored_secret.py").as_uri()
    text = f'def api_settings():\n    return "{IGNORED_MARKER} edited"\n'
    c.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(uri=uri, language_id="python", version=1, text=text)
        )
    )
    c.text_document_did_save(types.DidSaveTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri)))
    # an ordinary file opened the same way is indexed from its buffer: the control case
    control = (tree.root / "pkg" / "fresh.py").as_uri()
    c.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(
                uri=control, language_id="python", version=1, text="def api_settings_fresh():\n    return 1\n"
            )
        )
    )
    for _ in range(100):  # the index debounces document events
        plan = await c.protocol.send_request_async("ctx/planContext", {"query": QUERY, "mode": "heavy"})
        if any(i.symbol == "pkg.fresh.api_settings_fresh" for i in plan.included + plan.excluded):
            break
        await asyncio.sleep(0.1)
    else:
        pytest.fail("the control buffer was never indexed")
    rendered = await c.protocol.send_request_async("ctx/renderPrompt", {"format": "text"})
    assert tree.leaks(rendered.text) == []
    assert not any("ignored_secret" in (i.path or "") for i in plan.included + plan.excluded)
    err = await _error(c, "ctx/pinSymbol", {"symbol": "ignored_secret.api_settings"})
    assert getattr(err, "code", None) == -32002, err
    c.text_document_did_close(types.DidCloseTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri)))
