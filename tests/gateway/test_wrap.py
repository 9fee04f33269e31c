"""`ctx-lsp wrap` with the real assistants, offline in a loopback-only network namespace: the
assistant runs through a gateway started for the run, the upstream sees the rewritten requests,
the assistant's output and exit status are its own, and one summary line follows."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from ctx_lsp.core.render import CONTEXT_HEADER, STABLE_HEADER
from tests.gateway import assistants
from tests.gateway.netns import netns_unavailable, run_offline, target_urls
from tests.workspaces import copy_sample

pytestmark = pytest.mark.slow
VENV_BIN = Path(sys.executable).parent
UPSTREAM = target_urls(False)  # the fake upstream inside the namespace


@pytest.fixture
def netns() -> None:
    reason = netns_unavailable()
    if reason:
        pytest.skip(reason)


def _workspace(tmp_path: Path) -> Path:
    ws = copy_sample(tmp_path / "ws")
    (ws / "ctx.toml").write_text(
        f'[gateway]\nopenai_upstream = "{UPSTREAM.openai}"\nanthropic_upstream = "{UPSTREAM.anthropic}"\n'
        'context_cost = "always"\n'  # these tests look for the context in the bodies sent
    )
    return ws


@pytest.mark.parametrize("name", assistants.NAMES)
def test_wrap_runs_the_assistant_through_the_gateway(netns: None, name: str, tmp_path: Path) -> None:
    if not assistants.installed(name):
        pytest.skip(f"{name} is not installed (make assistants)")
    ws = _workspace(tmp_path)
    reply = f"WRAPPED-{name.upper()}: hello."
    inv = assistants.invocation(name, ws, "Say hello. Do not edit any file.", UPSTREAM, tmp_path / "home")
    env = {**inv.env, "PATH": f"{VENV_BIN}:{inv.env['PATH']}", "OPENAI_API_KEY": assistants.API_KEY}
    command = ["ctx-lsp", "wrap", name, *inv.argv[1:]]
    r = run_offline(command, tmp_path / "run", env=env, cwd=ws, timeout=180, reply=reply)
    assert r.rc == 0, r.summary()
    assert reply in r.stdout, r.summary()
    (body,) = [req["body"] for req in r.requests if req["path"].split("?")[0] == assistants.ROUTES[name]]
    assert STABLE_HEADER in body and CONTEXT_HEADER in body, r.summary()
    assert "requests through the gateway" in r.stderr, r.summary()
    assert r.dns == [], r.summary()


def test_wrap_passes_the_exit_status_and_the_environment(netns: None, tmp_path: Path) -> None:
    ws = _workspace(tmp_path)
    script = (
        "import os, sys; from openai import OpenAI; "
        "c = OpenAI(max_retries=0); "
        "ask = [{'role': 'user', 'content': 'How is stock reserved?'}]; "
        "r = c.chat.completions.create(model='gpt-4o', messages=ask); "
        "print(r.choices[0].message.content, os.environ['ANTHROPIC_BASE_URL']); sys.exit(5)"
    )
    env = {"PATH": f"{VENV_BIN}:/usr/bin:/bin", "HOME": str(tmp_path), "OPENAI_API_KEY": "sk-wrap"}
    r = run_offline(
        ["ctx-lsp", "wrap", "--", sys.executable, "-c", script], tmp_path / "run", env=env, cwd=ws, reply="via wrap"
    )
    assert r.rc == 5, r.summary()
    assert "via wrap http://127.0.0.1:" in r.stdout
    assert "1 requests through the gateway" in r.stderr and "forwarded" in r.stderr, r.summary()
    # gpt-4o has list prices: what this run's input cost, through ctx_lsp and sent direct
    assert re.search(r"cost \$[\d.]+ through ctx_lsp vs \$[\d.]+ direct \([\d.]+×\)", r.stderr), r.summary()
    assert json.loads(r.requests[-1]["body"])["messages"][0]["content"].startswith(STABLE_HEADER)


def test_wrap_says_what_is_missing(tmp_path: Path) -> None:
    ws = copy_sample(tmp_path / "ws")
    done = subprocess.run(
        [sys.executable, "-m", "ctx_lsp", "wrap", "--workspace", str(ws), "claude", "-p", "hi"],
        capture_output=True,
        text=True,
        env={"PATH": "/nonexistent", "HOME": str(tmp_path)},
        timeout=60,
    )
    assert done.returncode == 2 and "claude is not installed: npm install -g @anthropic-ai/claude-code" in done.stderr
    printed = subprocess.run(
        [sys.executable, "-m", "ctx_lsp", "wrap", "--workspace", str(ws), "--print-env", "claude"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert printed.returncode == 0 and "export ANTHROPIC_BASE_URL=http://127.0.0.1:8787" in printed.stdout


def test_wrap_claude_shrinks_a_test_log_and_the_model_expands_it(netns: None, tmp_path: Path) -> None:
    if not assistants.installed("claude"):
        pytest.skip("claude is not installed (make assistants)")
    ws = _workspace(tmp_path)
    tests = [f"def test_ok_{n}():\n    assert {n} >= 0\n" for n in range(400)]
    tests.append(
        "def test_reserve():\n    stock = {'widget': 1}\n    assert stock['widget'] - 2 >= 0, 'oversold widget'\n"
    )
    (ws / "test_stock.py").write_text("\n".join(tests))
    command = "python -m pytest -v -p no:cacheprovider test_stock.py"
    queue = [
        {"kind": "tool_call", "tool_name": "Bash", "tool_arguments": {"command": command}},
        {"kind": "tool_call", "tool_name": "mcp__ctx__expand", "tool_arguments": {"id": "{expand_id}"}},
        {"text": "WRAPPED: the widget is oversold."},
    ]
    inv = assistants.invocation("claude", ws, "Run the tests and explain the failure.", UPSTREAM, tmp_path / "home")
    # Claude Code keeps 30,000 characters of a command's output by default; this log is longer
    env = {**inv.env, "PATH": f"{VENV_BIN}:{inv.env['PATH']}", "BASH_MAX_OUTPUT_LENGTH": "200000"}
    argv = ["ctx-lsp", "wrap", "claude", "--allowedTools", "Bash,mcp__ctx__expand", *inv.argv[1:]]
    r = run_offline(argv, tmp_path / "run", env=env, cwd=ws, timeout=240, queue=queue)
    assert r.rc == 0, r.summary()
    assert "WRAPPED: the widget is oversold." in r.stdout, r.summary()
    posts = [
        json.loads(req["body"])
        for req in r.requests
        if req["path"].startswith("/v1/messages") and req["method"] == "POST"
    ]
    posts = [p for p in posts if p.get("tools")]  # the conversation's requests (not a title or a probe)
    assert len(posts) >= 3, r.summary()

    def result_of(body: dict) -> str:
        blocks = [b for m in body["messages"] for b in (m["content"] if isinstance(m["content"], list) else [])]
        results = [b for b in blocks if b.get("type") == "tool_result"]
        content = results[-1]["content"]
        return content if isinstance(content, str) else json.dumps(content)

    shrunk = result_of(posts[1])
    assert shrunk.startswith("[ctx_lsp shortened this test log output"), shrunk[:300]
    assert "oversold widget" in shrunk and "test_reserve" in shrunk and "test_ok_200 PASSED" not in shrunk
    expanded = json.loads(result_of(posts[2]))["text"]  # Claude Code hands the model MCP's structured content
    passed = [line for line in expanded.splitlines() if " PASSED " in line]
    assert "oversold widget" in expanded and len(expanded) > len(shrunk)
    assert passed and not any(line in shrunk for line in passed[5:-5])  # the original, one call away
    assert "requests through the gateway" in r.stderr, r.summary()
