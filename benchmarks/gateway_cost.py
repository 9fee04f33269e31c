"""Never worse than sending direct? The input cost of long agent sessions through the gateway
against the same sessions sent direct, with the providers' prompt caches simulated.

    python benchmarks/gateway_cost.py [WORKSPACE] [--turns 50 200 500] [--modes off light]

Sessions are shaped like Claude Code's under `ctx-lsp wrap claude` (Anthropic Messages: a system
prompt of three blocks and 24 tools of their real sizes plus the 7 read-only MCP tools wrap
registers, so it can expand what is shortened; cache_control on the system and on the newest
block, moved each turn)
and Codex's (OpenAI Responses: developer instructions and 9 tools of their sizes): the assistant
reads files of WORKSPACE (default: sympy's size, generated), greps it, runs a test suite with a
planted failure, and a new user message comes every 15 turns. Each request is sent through an
in-process gateway to a fake upstream; the forwarded bodies and the client's own bodies are then
priced with a cache simulation:

- Anthropic: a request reads from the cache the longest prefix that an earlier request (within 5
  minutes; here, the previous ones) wrote at one of its cache_control breakpoints; it writes up to
  its own last breakpoint (1.25×); reads cost 0.1×.
- OpenAI: the longest prefix shared with an earlier request, in 128-token blocks from 1,024
  tokens, at 0.1× (gpt-5's price); no write premium.

Tokens are counted as UTF-8 bytes / 4 on the provider-ordered body (tools, system, messages), the
same for both sides. Sent direct, a request over the model's window would be refused: it is still
priced (what the client would pay if the provider took it), and counted.

A session that fits ("30 fits": every tool output under 1,500 characters, nothing to shrink or
shed) shows what the gateway costs where it has nothing to save.

The "sdk" shape is a short script on the openai SDK (Chat Completions, no tools): a question about
a file, a follow-up, then a one-line summary of the chat (a side request). ``--context-cost
always`` adds context whatever it costs (``[gateway] context_cost``), as in issue 31's runs.

Direct is priced without ctx_lsp's own MCP tools (``mcp__ctx__*``): sent direct, the client
would not have them.

Targets (issue 20): through ≤ direct in every session and mode (the same where it fits); ≤ 50% of direct at 200 and 500
turns; every forwarded request inside the window.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import aiohttp
import msgspec

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).parent))

from index_speed import DATA, generate  # noqa: E402

from ctx_lsp.config import load_workspace_config  # noqa: E402
from ctx_lsp.engine import Engine  # noqa: E402
from ctx_lsp.gateway.direct import shared_prefix  # noqa: E402
from ctx_lsp.gateway.options import GatewayOptions  # noqa: E402
from ctx_lsp.gateway.proxy import Gateway  # noqa: E402
from ctx_lsp.sessions.engine import SessionEngine  # noqa: E402
from ctx_lsp.workspace.files import WorkspaceWalker  # noqa: E402
from ctx_lsp.workspace.languages import SOURCE_SUFFIXES  # noqa: E402
from ctx_lsp.wrap import READ_ONLY_TOOLS  # noqa: E402
from tests.gateway.fake_upstream import FakeUpstream  # noqa: E402

SHAPES = {
    "claude": ("claude-sonnet-4-5", 200_000, 3.00),
    "codex": ("gpt-5", 400_000, 1.25),
    "sdk": ("gpt-5", 400_000, 1.25),
}
READ, WRITE = 0.1, 1.25
RESULT_CHARS = 9_000
TOOL_OUTPUT_CHARS = 30_000  # what Claude Code keeps of a command's output
SMALL_CHARS = 1_500  # a session that fits: each tool output well under the shrink threshold


def tokens(data: bytes) -> int:
    return len(data) // 4


def provider_order(api: str, body: dict[str, Any]) -> list[Any]:
    keys = {"claude": ("tools", "system", "messages"), "sdk": ("tools", "messages")}
    return [body.get(k) for k in keys.get(api, ("tools", "instructions", "input"))]


def without_ctx_tools(body: dict[str, Any]) -> dict[str, Any]:
    """The body as the client would send it direct: without the MCP tools ``wrap`` registers."""
    tools = [t for t in body.get("tools") or [] if not str(t.get("name", "")).startswith("mcp__ctx__")]
    return {**body, "tools": tools} if "tools" in body else body


def serialise(api: str, body: dict[str, Any]) -> tuple[bytes, list[int]]:
    """The cacheable bytes, and (Anthropic) the byte offsets right after each cache_control block."""
    parts = provider_order(api, body)
    out = json.dumps(parts, separators=(",", ":"), ensure_ascii=False)
    marks = []
    if api == "claude":
        start = 0
        while (i := out.find('"cache_control"', start)) >= 0:
            end = out.find("}", out.find("}", i) + 1)  # the end of the block holding the marker
            marks.append(len(out[: end + 1].encode()))
            start = i + 1
    clean = out.replace(',"cache_control":{"type":"ephemeral"}', "")  # a marker is not content
    shift = len(out.encode()) - len(clean.encode())
    return clean.encode(), [max(0, m - shift) for m in marks] if marks else []


class Cache:
    """The provider's prompt cache over one session's requests."""

    def __init__(self, api: str) -> None:
        self.api = api
        self.entries: list[tuple[bytes, int]] = []  # (body, written prefix length in bytes)

    def price(self, body: bytes, marks: list[int], price: float) -> tuple[float, int, int]:
        """(input cost in dollars, tokens read from the cache, tokens in all)."""
        total = tokens(body)
        if self.api == "claude":
            read_bytes = 0
            for prev, written in self.entries[-4:]:
                shared = shared_prefix(body, prev)
                read_bytes = max(read_bytes, min(shared, written))
            last = max(marks) if marks else 0
            write_bytes = max(0, last - read_bytes)
            self.entries.append((body, last))
            read, write = tokens(b"x" * read_bytes), tokens(b"x" * write_bytes)
            fresh = total - read - write
            cost = (fresh + READ * read + WRITE * write) * price / 1e6
        else:
            shared = max((shared_prefix(body, prev) for prev, _ in self.entries[-4:]), default=0)
            read = tokens(b"x" * shared)
            read = read - read % 128 if read >= 1024 else 0
            self.entries.append((body, len(body)))
            cost = (total - read + READ * read) * price / 1e6
        self.entries = self.entries[-4:]
        return cost, read, total


def corpus(workspace: Path) -> tuple[list[tuple[str, str]], list[str], str]:
    files = []
    for entry in WorkspaceWalker(workspace, check_content=False).walk()[:600]:  # source files of any language
        files.append((entry.rel, entry.path.read_text(errors="replace")[:RESULT_CHARS]))
    greps = []
    includes = [f"--include=*{suffix}" for suffix in SOURCE_SUFFIXES]
    for word in ("def __init__", "import ", "return self", "raise ", "class "):
        done = subprocess.run(["grep", "-rn", *includes, word, "."], cwd=workspace, capture_output=True, text=True)
        greps.append(done.stdout[:TOOL_OUTPUT_CHARS])
    proj = DATA / "gateway_cost_tests"
    proj.mkdir(parents=True, exist_ok=True)
    tests = [f"def test_ok_{n}():\n    assert {n} >= 0\n" for n in range(600)]
    tests.append("def test_planted():\n    assert 1 + 1 == 3, 'planted failure'\n")
    (proj / "test_many.py").write_text("\n".join(tests))
    log = subprocess.run(
        [sys.executable, "-m", "pytest", "-v", "-p", "no:cacheprovider", "test_many.py"],
        cwd=proj,
        capture_output=True,
        text=True,
    ).stdout[-TOOL_OUTPUT_CHARS:]
    return files, greps, log


def claude_session(turns: int, files, greps, log) -> list[dict[str, Any]]:
    tools = [
        {"name": f"Tool{n}", "description": "Does a thing. " * 190, "input_schema": {"type": "object"}}
        for n in range(24)
    ] + [  # what `ctx-lsp wrap claude` registers: the workspace's read-only MCP tools
        {"name": f"mcp__ctx__{name}", "description": "Reads the workspace. " * 30, "input_schema": {"type": "object"}}
        for name in READ_ONLY_TOOLS
    ]
    system = [
        {"type": "text", "text": "x-anthropic-billing-header: cc_version=2.1.197"},
        {"type": "text", "text": "You are Claude Code. " * 600, "cache_control": {"type": "ephemeral"}},
        {"type": "text", "text": "Environment: linux. " * 50, "cache_control": {"type": "ephemeral"}},
    ]
    messages: list[dict[str, Any]] = []
    bodies = []
    for n in range(turns):
        if n % 15 == 0:
            path = files[n % len(files)][0]
            messages.append(
                {
                    "role": "user",
                    "content": [{"type": "text", "text": f"Task {n // 15}: look at {path} and fix the failing test."}],
                }
            )
        else:
            kind = n % 5
            tid = f"toolu_{n:04d}"
            if kind == 3:
                use, result = {"name": "Grep", "input": {"pattern": "x"}}, greps[n % len(greps)]
            elif kind == 4:
                use, result = {"name": "Bash", "input": {"command": "pytest -v"}}, log
            else:
                path, text = files[n % len(files)]
                use, result = {"name": "Read", "input": {"file_path": path}}, text
            messages.append({"role": "assistant", "content": [{"type": "tool_use", "id": tid, **use}]})
            messages.append(
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": tid, "content": result}]}
            )
        for m in messages:  # Claude Code marks the newest block only
            if isinstance(m["content"], list):
                for b in m["content"]:
                    b.pop("cache_control", None)
        messages[-1]["content"][-1]["cache_control"] = {"type": "ephemeral"}
        bodies.append(
            json.loads(
                json.dumps(
                    {
                        "model": SHAPES["claude"][0],
                        "max_tokens": 8192,
                        "system": system,
                        "tools": tools,
                        "messages": messages,
                    }
                )
            )
        )
    return bodies


def codex_session(turns: int, files, greps, log) -> list[dict[str, Any]]:
    tools = [
        {
            "type": "function",
            "name": f"tool{n}",
            "description": "Does a thing. " * 110,
            "parameters": {"type": "object"},
        }
        for n in range(9)
    ]
    items: list[dict[str, Any]] = [
        {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "You are Codex. " * 1200}]},
        {
            "type": "message",
            "role": "user",
            "content": [{"type": "input_text", "text": "<environment_context>linux</environment_context>"}],
        },
    ]
    bodies = []
    for n in range(turns):
        if n % 15 == 0:
            path = files[n % len(files)][0]
            items.append(
                {
                    "type": "message",
                    "role": "user",
                    "content": [{"type": "input_text", "text": f"Task {n // 15}: look at {path}."}],
                }
            )
        else:
            kind = n % 5
            cid = f"call_{n:04d}"
            if kind == 3:
                args, out = {"cmd": "grep -rn x ."}, greps[n % len(greps)]
            elif kind == 4:
                args, out = {"cmd": "pytest -v"}, log
            else:
                path, text = files[n % len(files)]
                args, out = {"cmd": f"sed -n 1,200p {path}"}, text
            items.append(
                {"type": "function_call", "call_id": cid, "name": "exec_command", "arguments": json.dumps(args)}
            )
            items.append({"type": "function_call_output", "call_id": cid, "output": out})
        bodies.append(
            json.loads(
                json.dumps(
                    {
                        "model": SHAPES["codex"][0],
                        "input": items,
                        "tools": tools,
                        "prompt_cache_key": "bench",
                        "store": False,
                    }
                )
            )
        )
    return bodies


def sdk_session(turns: int, files, greps, log) -> list[dict[str, Any]]:
    """A script's three requests (``turns`` is not used): a question, a follow-up, a summary."""
    path = files[0][0]
    system = {"role": "system", "content": "You are a helpful assistant for this repository."}
    ask = {"role": "user", "content": f"What does {path} do, and where is it used?"}
    follow = [ask, {"role": "assistant", "content": "ok"}, {"role": "user", "content": "And how is it tested?"}]
    summary = {"role": "system", "content": "Summarize this conversation in one short title."}
    chats = [[system, ask], [system, *follow], [summary, {"role": "user", "content": ask["content"]}]]
    return [{"model": SHAPES["sdk"][0], "messages": m} for m in chats]


async def through(
    workspace: Path, shape: str, mode: str, bodies: list[dict[str, Any]], context_cost: str | None = None
) -> list[dict[str, Any]]:
    loop = asyncio.get_running_loop()
    worker = ThreadPoolExecutor(max_workers=1)

    def run(fn, *args):
        return loop.run_in_executor(worker, lambda: fn(*args))

    config, _ = load_workspace_config(workspace)
    if context_cost:
        config = msgspec.structs.replace(
            config, gateway=msgspec.structs.replace(config.gateway, context_cost=context_cost)
        )
    sessions = await run(lambda: SessionEngine(Engine(workspace, config)))
    await run(sessions.engine.refresh_index)
    sent = []
    async with FakeUpstream(reply="ok") as up:
        options = GatewayOptions(
            host="127.0.0.1", port=0, openai_upstream=up.openai_url, anthropic_upstream=up.url, mode=mode
        )  # type: ignore[arg-type]
        gateway = Gateway(sessions, options, run)
        url = await gateway.start()
        path = {"claude": "/v1/messages", "sdk": "/v1/chat/completions"}.get(shape, "/v1/responses")
        headers = {
            "x-api-key": "k",
            "authorization": "Bearer k",
            "anthropic-version": "2023-06-01",
        }
        if shape != "sdk":  # a script sends no session header: the gateway tells its conversations apart
            headers["X-Ctx-Session"] = f"bench-{shape}-{mode}-{time.time_ns()}"
        async with aiohttp.ClientSession() as http:
            for body in bodies:
                async with http.post(url + path, json=body, headers=headers) as r:
                    await r.read()
                    if r.status != 200:
                        raise SystemExit(f"HTTP {r.status} through the gateway")
                sent.append(up.model_requests[-1].json)
        await gateway.close()
    await run(sessions.close)
    worker.shutdown()
    return sent


def price(shape: str, bodies: list[dict[str, Any]]) -> tuple[float, float, int, int]:
    """(cost, cache share, tokens in all, requests over the window)."""
    _, window, p = SHAPES[shape]
    cache = Cache(shape)
    cost = read = total = over = 0
    for body in bodies:
        data, marks = serialise(shape, body)
        c, r, t = cache.price(data, marks, p)
        cost, read, total = cost + c, read + r, total + t
        over += t > window
    return cost, read / total if total else 0.0, total, over


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("workspace", nargs="?", type=Path)
    ap.add_argument("--turns", type=int, nargs="+", default=[50, 200, 500])
    ap.add_argument("--modes", nargs="+", default=["off", "light"])
    ap.add_argument("--shapes", nargs="+", default=list(SHAPES))
    ap.add_argument("--context-cost", choices=["savings", "always"], help="override [gateway] context_cost")
    ap.add_argument(
        "--fits",
        type=int,
        default=30,
        help="turns of a session that fits the window, every tool output under the shrink threshold (0: none)",
    )
    args = ap.parse_args(argv)
    workspace = args.workspace or generate(DATA / "synthetic_1600x330", 1600, 330)
    files, greps, log = corpus(workspace)
    print(f"gateway cost · {workspace} · {os.cpu_count()} cores · input cost, cache simulated")
    head = f"{'session':<16} {'mode':<6} {'direct $':>9} {'through $':>10} {'ratio':>6} {'cache d/t':>11}"
    print(f"{head} {'tokens d → t':>20} {'over window d/t':>16}")
    for shape in args.shapes:
        make = {"claude": claude_session, "sdk": sdk_session}.get(shape, codex_session)
        small = ([(p, t[:SMALL_CHARS]) for p, t in files], [g[:SMALL_CHARS] for g in greps], log[-SMALL_CHARS:])
        runs = [(f"{turns}", make(turns, files, greps, log)) for turns in args.turns]
        if args.fits:
            runs.insert(0, (f"{args.fits} fits", make(args.fits, *small)))
        if shape == "sdk":
            runs = [("3 requests", make(3, files, greps, log))]
        for label, bodies in runs:
            d_cost, d_share, d_tokens, d_over = price(shape, [without_ctx_tools(b) for b in bodies])
            for mode in args.modes:
                sent = asyncio.run(through(workspace, shape, mode, bodies, args.context_cost))
                t_cost, t_share, t_tokens, t_over = price(shape, sent)
                money = f"{d_cost:>9.2f} {t_cost:>10.2f} {t_cost / d_cost:>6.2f}"
                cache = f"{d_share:>5.0%}/{t_share:<5.0%}"
                moved = f"{d_tokens / 1e6:>8.2f}M → {t_tokens / 1e6:.2f}M"
                if t_tokens < 100_000:  # a short script: its tokens, not millions
                    moved = f"{d_tokens / 1e3:>8.1f}k → {t_tokens / 1e3:.1f}k"
                print(f"{shape + ' ' + label:<16} {mode:<6} {money} {cache} {moved} {d_over:>8}/{t_over:<7}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
