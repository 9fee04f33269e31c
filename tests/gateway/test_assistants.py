"""The real assistants (aider, Claude Code, Codex), offline, against the fake upstream.

Each run is a fresh network namespace with only loopback (tests/gateway/netns.py): the fake
upstream and the assistant start inside it, so nothing can leave the machine. `make test`
installs the assistants first (`make assistants`, into .tools/) and sets CTX_ASSISTANTS=1, which
turns a missing install into a failure; run alone without .tools/, these tests skip.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ctx_lsp.cli.wrap import READ_ONLY_TOOLS
from ctx_lsp.core.render import CONTEXT_HEADER, STABLE_HEADER
from ctx_lsp.engine import Engine
from ctx_lsp.sessions import SessionEngine
from tests.gateway import assistants
from tests.gateway.harness import PAID_CONTEXT
from tests.gateway.netns import netns_unavailable, run_in_netns, run_offline, target_urls
from tests.workspaces import copy_poly, copy_sample

pytestmark = pytest.mark.slow

PROMPT = "Say hello in one short sentence. Do not edit any file."
TIMEOUT = 180


def _unavailable(reason: str) -> None:
    if os.environ.get("CTX_ASSISTANTS"):
        pytest.fail(reason)
    pytest.skip(reason)


@pytest.fixture(scope="module")
def netns() -> None:
    reason = netns_unavailable()
    if reason:
        _unavailable(f"no network namespace: {reason}")


def _require(name: str) -> None:
    if not assistants.installed(name):
        _unavailable(f"{name} is not installed in .tools/: run `make assistants`")


def _reply(name: str) -> str:
    return f"OFFLINE-REPLY-{name.upper()}: hello from the fake upstream."


def _run(
    name: str,
    tmp_path: Path,
    *,
    gateway: bool = False,
    copy=copy_sample,
    prompt: str = PROMPT,
    adjust: Callable[[assistants.Invocation], object] | None = None,
    **recipe: Any,
):
    """One run of assistant ``name`` offline (``recipe``: the recipe's options, ``adjust``: a
    change to its command line or environment)."""
    ws = copy(tmp_path / "ws")
    if gateway:  # the tests look for the context in the bodies sent: added whatever it costs
        (ws / "ctx.toml").write_text(PAID_CONTEXT)
    inv = assistants.invocation(name, ws, prompt, target_urls(gateway), tmp_path / "home", **recipe)
    if adjust is not None:
        adjust(inv)
    return run_offline(
        inv.argv,
        tmp_path / "run",
        env=inv.env,
        cwd=inv.cwd,
        timeout=TIMEOUT,
        reply=_reply(name),
        gateway=gateway,
        gateway_workspace=ws,
    )


def test_namespace_has_only_loopback(netns: None) -> None:
    routes = run_in_netns(["sh", "-c", "ip route; ip -6 route"], timeout=30)
    assert routes.returncode == 0, routes.stderr
    assert routes.stdout.strip() == ""
    links = run_in_netns(["ip", "-o", "link"], timeout=30)
    assert [line.split(":")[1].strip() for line in links.stdout.splitlines()] == ["lo"]


@pytest.mark.parametrize("name", assistants.NAMES)
def test_assistant_against_fake_upstream(netns: None, name: str, tmp_path: Path) -> None:
    _require(name)
    r = _run(name, tmp_path)
    assert r.rc == 0, r.summary()
    routes = [req["path"].split("?")[0] for req in r.requests if req["method"] == "POST"]
    assert assistants.ROUTES[name] in routes, r.summary()
    assert _reply(name) in r.stdout, r.summary()
    # the switches in assistants.py leave nothing to look up: no host name was even resolved
    assert r.dns == [], r.summary()


# a tool the assistant runs without asking, and where its result comes back in the next request
TOOL_CALLS = {
    "claude": ("Read", lambda ws: {"file_path": str(ws / "README.md")}),
    "codex": ("exec_command", lambda ws: {"cmd": "cat README.md"}),
}


def _tool_result(name: str, body: dict) -> str:
    if name == "claude":
        (block,) = [b for b in body["messages"][-1]["content"] if b["type"] == "tool_result"]
        return json.dumps(block["content"])
    (item,) = [i for i in body["input"] if i["type"] == "function_call_output"]
    return json.dumps(item["output"])


@pytest.mark.parametrize("name", sorted(TOOL_CALLS))
def test_assistant_tool_call_round_trip(netns: None, name: str, tmp_path: Path) -> None:
    """The fake's streamed tool calls are ones the real clients run; the result comes back."""
    _require(name)
    ws = copy_sample(tmp_path / "ws")
    tool, args = TOOL_CALLS[name]
    queue = [{"kind": "tool_call", "tool_name": tool, "tool_arguments": args(ws)}, {"text": _reply(name)}]
    inv = assistants.invocation(name, ws, "Read README.md and summarise it.", target_urls(), tmp_path / "home")
    r = run_offline(inv.argv, tmp_path / "run", env=inv.env, cwd=inv.cwd, timeout=TIMEOUT, queue=queue)
    assert r.rc == 0, r.summary()
    posts = [req for req in r.requests if req["method"] == "POST"]
    assert len(posts) == 2, r.summary()
    assert "A tiny inventory/billing app" in _tool_result(name, json.loads(posts[1]["body"])), r.summary()
    assert _reply(name) in r.stdout, r.summary()


@pytest.mark.parametrize("name", assistants.NAMES)
def test_assistant_through_gateway(netns: None, name: str, tmp_path: Path) -> None:
    _require(name)
    r = _run(name, tmp_path, gateway=True)
    assert r.rc == 0, r.summary()
    routes = [req["path"].split("?")[0] for req in r.requests if req["method"] == "POST"]
    assert assistants.ROUTES[name] in routes, r.summary()
    assert _reply(name) in r.stdout, r.summary()
    # the model got the plan: the workspace's layout after the system prompt, code for the question
    (body,) = [req["body"] for req in r.requests if req["path"].split("?")[0] == assistants.ROUTES[name]]
    assert STABLE_HEADER in body and CONTEXT_HEADER in body, r.summary()
    assert "shop/inventory.py" in body, r.summary()
    assert "plan-" in r.gateway_log and "fail-open" not in r.gateway_log, r.gateway_log
    # retrieval searched for the user's words: no reminder, environment block or edit-format text
    assert _queries(tmp_path / "ws") == [PROMPT], r.gateway_log


def _queries(ws: Path) -> list[str]:
    """The queries of the plans the gateway stored for the run's requests."""
    store = SessionEngine(Engine(ws))
    try:
        sessions = [s for (s,) in store.store._read("SELECT DISTINCT session FROM plans", ())]
        return [p["query"] for s in sessions for p in store.store.session_plans(s)]
    finally:
        store.close()


def test_claude_codes_title_request_gets_no_context(netns: None, tmp_path: Path) -> None:
    """With its non-essential traffic on, Claude Code also asks for a session title (no tools, a
    short system prompt): that request goes upstream without context; the conversation's has it."""
    _require("claude")
    r = _run(
        "claude", tmp_path, gateway=True, adjust=lambda inv: inv.env.pop("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC")
    )
    assert r.rc == 0, r.summary()
    bodies = [req["body"] for req in r.requests if req["path"].split("?")[0] == "/v1/messages"]
    titles = [body for body in bodies if "sentence-case title" in body]
    assert len(titles) == 1 and len(bodies) == 2, r.summary()
    assert CONTEXT_HEADER not in titles[0] and STABLE_HEADER not in titles[0]
    (main,) = [body for body in bodies if body not in titles]
    assert CONTEXT_HEADER in main, r.summary()
    assert "side request (title): no context added" in r.gateway_log, r.gateway_log


# a question about a mixed repository's Rust or TypeScript code, and a line of the code that answers it
POLY_QUESTIONS = {
    "claude": ("How does the error chain iterate over source errors? Do not edit any file.", "current.source()"),
    "codex": ("How does the api client retry failed requests? Do not edit any file.", "await backoff(attempt)"),
    "aider": ("How does the error chain iterate over source errors? Do not edit any file.", "current.source()"),
}


@pytest.mark.parametrize("name", assistants.NAMES)
def test_assistant_through_gateway_in_a_rust_and_typescript_repository(netns: None, name: str, tmp_path: Path) -> None:
    """The same run in a repository of Rust, TypeScript, Go, Java and C++: the model gets that
    language's code for the question."""
    _require(name)
    prompt, code = POLY_QUESTIONS[name]
    r = _run(name, tmp_path, gateway=True, copy=copy_poly, prompt=prompt)
    assert r.rc == 0, r.summary()
    assert _reply(name) in r.stdout, r.summary()
    (body,) = [req["body"] for req in r.requests if req["path"].split("?")[0] == assistants.ROUTES[name]]
    assert CONTEXT_HEADER in body, r.summary()
    assert code in body, r.summary()
    assert "plan-" in r.gateway_log and "fail-open" not in r.gateway_log, r.gateway_log


def test_codex_default_model_keeps_its_own_instructions_first(netns: None, tmp_path: Path) -> None:
    """Codex's default model sends its system prompt as developer items (no ``instructions``):
    our block goes after them, and what the model reads answers the question."""
    _require("codex")
    r = _run("codex", tmp_path, gateway=True, model=None)
    assert r.rc == 0 and _reply("codex") in r.stdout, r.summary()
    (body,) = [json.loads(q["body"]) for q in r.requests if q["path"].split("?")[0] == "/v1/responses"]
    roles = [i.get("role") for i in body["input"]]
    ours = next(n for n, i in enumerate(body["input"]) if STABLE_HEADER in json.dumps(i))
    assert "instructions" not in body and roles[0] == "developer", roles  # the newer shape, as sent
    assert all(role == "developer" for role in roles[:ours]) and roles[ours + 1] != "developer", roles
    assert any("Codex" in json.dumps(i) for i in body["input"][:ours]), roles  # its own prompt is first
    assert CONTEXT_HEADER in json.dumps(body["input"][ours + 1 :]), r.summary()


def test_a_gateway_that_does_not_start_is_reported(netns: None, tmp_path: Path) -> None:
    # an argument no gateway accepts: it exits at once, whether or not it has landed
    r = run_offline(["true"], tmp_path, gateway=True, gateway_args=["--no-such-flag"], timeout=30)
    assert r.rc is None and "did not say 'listening'" in r.error
    assert r.gateway_log  # its complaint, for the assertion message
    assert r.requests == []


@pytest.mark.parametrize("name", sorted(TOOL_CALLS))
def test_assistant_tool_round_trip_through_gateway_is_one_conversation(netns: None, name: str, tmp_path: Path) -> None:
    """The reply read from the stream and the client's resend of it are the same message: the
    second request continues the session's branch instead of forking one."""
    _require(name)
    ws = copy_sample(tmp_path / "ws")
    tool, args = TOOL_CALLS[name]
    queue = [{"kind": "tool_call", "tool_name": tool, "tool_arguments": args(ws)}, {"text": _reply(name)}]
    inv = assistants.invocation(name, ws, "Read README.md and summarise it.", target_urls(True), tmp_path / "home")
    r = run_offline(
        inv.argv,
        tmp_path / "run",
        env=inv.env,
        cwd=inv.cwd,
        timeout=TIMEOUT,
        queue=queue,
        gateway=True,
        gateway_workspace=ws,
    )
    assert r.rc == 0, r.summary()
    assert _reply(name) in r.stdout, r.summary()
    store = SessionEngine(Engine(ws))
    try:
        rows = store.store._read("SELECT session, name FROM branches", ())
        sessions = {s for s, _ in rows}
        assert rows and all(b == "main" for _, b in rows), rows
        (session,) = [s for s in sessions if s != "default"]
        roles = [m.role for m in store.messages(session).messages]
        assert roles[-3:] == ["assistant", "tool", "assistant"], roles  # call, its result, the answer
    finally:
        store.close()


def test_wrap_gives_codex_the_ctx_tools_and_the_gateway_knows_it_can_expand(netns: None, tmp_path: Path) -> None:
    """`ctx-lsp wrap codex` registers the workspace's MCP server: Codex's first request already
    carries its read-only tools (one namespace, ``mcp__ctx``), so a long test log its shell printed
    is shortened with the ``expand`` tool named as the way back."""
    _require("codex")
    ws = copy_sample(tmp_path / "ws")
    (ws / "ctx.toml").write_text(PAID_CONTEXT)
    tests = [f"def test_ok_{n}():\n    assert {n} >= 0\n" for n in range(400)]
    tests.append("def test_reserve():\n    assert 1 - 2 >= 0, 'oversold widget'\n")
    (ws / "test_stock.py").write_text("\n".join(tests))
    command = f"{sys.executable} -B -m pytest -v -p no:cacheprovider test_stock.py"
    queue = [
        {"kind": "tool_call", "tool_name": "exec_command", "tool_arguments": {"cmd": command}},
        {"text": _reply("codex")},
    ]
    inv = assistants.invocation("codex", ws, "Run the tests and explain the failure.", target_urls(), tmp_path / "home")
    env = {**inv.env, "PATH": f"{Path(sys.executable).parent}:{inv.env['PATH']}", "OPENAI_API_KEY": assistants.API_KEY}
    # pytest needs a writable temporary directory: not in Codex's default read-only sandbox
    argv = ["ctx-lsp", "wrap", "codex", "exec", "--sandbox", "workspace-write", *inv.argv[2:]]
    r = run_offline(argv, tmp_path / "run", env=env, cwd=ws, timeout=TIMEOUT, queue=queue)
    assert r.rc == 0 and _reply("codex") in r.stdout, r.summary()
    posts = [json.loads(req["body"]) for req in r.requests if req["path"].startswith("/v1/responses")]
    assert len(posts) == 2, r.summary()
    for body in posts:
        (ctx,) = [t for t in body["tools"] if t.get("name") == "mcp__ctx"]
        assert ctx["type"] == "namespace"
        assert {t["name"] for t in ctx["tools"]} == set(READ_ONLY_TOOLS)  # no tool that would need approval
    (output,) = [i["output"] for i in posts[1]["input"] if i["type"] == "function_call_output"]
    text = output if isinstance(output, str) else json.dumps(output)
    assert "[ctx_lsp shortened this test log output" in text and "oversold widget" in text, text[:2000]
    assert "with the ctx tools" in text, text[:2000]  # the gateway knows Codex can call expand


def test_a_file_aider_added_to_the_chat_is_not_injected_again(netns: None, tmp_path: Path) -> None:
    """aider sends a file the user added in a user message of its own: the context block brings
    none of that file's functions or classes again (before: 4 of its 15 blocks did)."""
    _require("aider")
    prompt = "How does reserving stock work? Do not edit any file."
    r = _run("aider", tmp_path, gateway=True, prompt=prompt, adjust=lambda inv: inv.argv.append("shop/inventory.py"))
    assert r.rc == 0, r.summary()
    (body,) = [req["body"] for req in r.requests if req["path"].split("?")[0] == assistants.ROUTES["aider"]]
    messages = json.loads(body)["messages"]
    assert any("def reserve(" in m["content"] for m in messages if m["role"] == "user"), r.summary()  # the file
    (context,) = [m["content"] for m in messages if m["content"].startswith(CONTEXT_HEADER)]
    headers = [line for line in context.splitlines() if line.startswith("# shop/inventory.py:")]
    assert all("(module shop.inventory)" in h for h in headers), headers  # its two-line module card at most
    assert "def reserve(" not in context
