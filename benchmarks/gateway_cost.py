"""Never worse than sending direct? The input cost of long agent sessions through the gateway
against the same sessions sent direct, with the providers' prompt caches simulated.

    python benchmarks/gateway_cost.py [WORKSPACE] [--turns 50 200 500] [--modes off light]

Sessions are shaped like Claude Code's under `ctx-lsp wrap claude` (Anthropic Messages: a system
prompt of three blocks and 24 tools of their real sizes plus the 7 read-only MCP tools wrap
registers, so it can expand what is shortened; cache_control on the system and on the newest
block, moved each turn)
and Codex's (OpenAI Responses: developer instructions and 9 tools of their sizes): the assistant
reads files of WORKSPACE (default: sympy's size, generated), greps it, runs a test suite with a
planted failure, and a new user message comes every 15 turns, after the model's answer. Each
request is sent through an in-process gateway to a fake upstream, whose reply is the model message
the next request resends (its tool call with the call's id, or its answer), as in an agent's loop
(before, a fixed text no request resent: the stored conversation forked at every request); the
forwarded bodies and the client's own bodies are then priced with a cache simulation:

- Anthropic: each cache_control breakpoint writes the prefix up to the end of its block; a
  request reads the longest prefix that ends at an earlier request's breakpoint (still warm: the
  last 16 requests) and that it repeats byte for byte — sharing part of the way to a breakpoint
  reads nothing there; it writes from there to its own last breakpoint (1.25×); reads cost
  0.1×; nothing under 1,024 tokens is cached; a request with more than 4 markers is counted.
- OpenAI: automatic: the longest prefix shared with an earlier request, in 128-token steps from
  1,024 tokens, at 0.1× (gpt-5's price); no write premium.

Printed per run: the cache share from the 10th request on (the first ones warm the cache), the
share per tenth of the session, and every request whose forwarded body does not repeat the one
before and append — with what changed first (the tools, the system prompt, ctx_lsp's stable
block, a compaction step, the per-turn block, a tool result masked, history shed) and the
tokens billed again; a request whose compaction summary names a later step than the one before
is one compaction step, whatever changed first. ``--per-request`` prints every request's cache
share, ``--html PAGE`` charts them per run (direct against through) with the breaks.

``--idle-every N``: every Nth user turn starts after the user was away longer than the providers'
cache lifetime (5 minutes): the simulated caches are empty there, direct and through, and the
gateway's ledger says how long ago the previous request was (a step there costs nothing extra).

Printed per run besides: what ctx_lsp's blocks add (tokens × the requests that carry them) and
what the compaction steps cost — where the default mode's extra cost over mode off comes from —
and each mode against mode off in dollars (``light vs off: +x%``: the ratio columns are rounded
to two places). Each run starts from a memory store of its own, as a new user's: in the
workspace's store, what one run learned (the model's calibration above all) moved the next.

``--window 48000 --result-chars 3500`` replays issue 32's case: at 200 turns the raw history
outgrows the window 3.9× (Claude Code's shape) and 3.6× (Codex's), printed as "raw/window". The
issue's 32k window leaves Claude Code's own system prompt and tools (21k tokens) too little room.

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

Targets (issues 20, 32): through ≤ direct in every session and mode (the same where it fits); ≤ 50% of direct at 200
and 500 turns; cache share ≥ 0.90 from the 10th request; light within 10% of off; every forwarded request inside
the window.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import msgspec

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).parent))

from index_speed import DATA, generate  # noqa: E402

from ctx_lsp.cli.wrap import READ_ONLY_TOOLS  # noqa: E402
from ctx_lsp.config import ModelOverride, load_workspace_config  # noqa: E402
from ctx_lsp.core.render import CONTEXT_HEADER, STABLE_HEADER  # noqa: E402
from ctx_lsp.engine import Engine  # noqa: E402
from ctx_lsp.gateway.direct import shared_prefix  # noqa: E402
from ctx_lsp.gateway.options import GatewayOptions  # noqa: E402
from ctx_lsp.gateway.proxy import Gateway  # noqa: E402
from ctx_lsp.memory.store import MemoryStore  # noqa: E402
from ctx_lsp.report_html import _figure, _page  # noqa: E402
from ctx_lsp.report_svg import Series, line_chart  # noqa: E402
from ctx_lsp.sessions.engine import SessionEngine  # noqa: E402
from ctx_lsp.workspace.files import WorkspaceWalker  # noqa: E402
from ctx_lsp.workspace.languages import SOURCE_SUFFIXES  # noqa: E402
from tests.gateway.fake_upstream import FakeUpstream, Reply  # noqa: E402

SHAPES = {
    "claude": ("claude-sonnet-4-5", 200_000, 3.00),
    "codex": ("gpt-5", 400_000, 1.25),
    "sdk": ("gpt-5", 400_000, 1.25),
}
READ, WRITE = 0.1, 1.25
RESULT_CHARS = 9_000
MASK_MARK = "masked by ctx_lsp"
STEP_MARK = re.compile(r"\[Compaction #(\d+)")  # the compaction summary names its step
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


MIN_CACHED = 1_024  # tokens: a shorter prefix is not cached (either provider)
WARM = 16  # earlier requests whose cache entries are still warm: an agent loop's last minutes
MAX_MARKS = 4  # Anthropic refuses a request with more cache_control blocks


class Cache:
    """The provider's prompt cache over one session's requests, billed as the provider bills.

    - Anthropic: an entry is written at each cache_control breakpoint of a request (the prefix up
      to the end of the marked block). A request reads the longest prefix that ends at an earlier
      request's breakpoint and that it repeats byte for byte — a prefix shared only part of the
      way to a breakpoint reads nothing there; it writes from there to its own last breakpoint
      (1.25×); the rest is fresh input. Below 1,024 tokens nothing is cached.
    - OpenAI: automatic: the longest prefix shared with an earlier request, in 128-token steps
      from 1,024 tokens, read at 0.1×; no write premium."""

    def __init__(self, api: str) -> None:
        self.api = api
        self.entries: list[tuple[bytes, list[int]]] = []  # (body, breakpoint offsets)

    def price(self, body: bytes, marks: list[int], price: float) -> tuple[float, int, int]:
        """(input cost in dollars, tokens read from the cache, tokens in all)."""
        total = tokens(body)
        if self.api == "claude":
            read_bytes = 0
            for prev, prev_marks in self.entries:
                shared = shared_prefix(body, prev)
                hits = [m for m in prev_marks if m <= shared and tokens(b"x" * m) >= MIN_CACHED]
                read_bytes = max([read_bytes, *hits])
            last = max(marks) if marks else 0
            last = last if tokens(b"x" * last) >= MIN_CACHED else 0
            write_bytes = max(0, last - read_bytes)
            self.entries.append((body, marks))
            read, write = len(body[:read_bytes]) // 4, write_bytes // 4
            fresh = total - read - write
            cost = (fresh + READ * read + WRITE * write) * price / 1e6
        else:
            shared = max((shared_prefix(body, prev) for prev, _ in self.entries), default=0)
            read = shared // 4
            read = read - read % 128 if read >= MIN_CACHED else 0
            self.entries.append((body, []))
            cost = (total - read + READ * read) * price / 1e6
        self.entries = self.entries[-WARM:]
        return cost, read, total


def regions(api: str, body: dict[str, Any]) -> list[tuple[str, str]]:
    """A body in the provider's cache order as (region, the JSON of one element): the tools, each
    system block (ctx_lsp's stable block apart), then each conversation message — what a break
    is named by."""
    out = [("tools", json.dumps(body.get("tools"), sort_keys=True))]

    def text(x: Any) -> str:
        return json.dumps(strip_marks(x), sort_keys=True, ensure_ascii=False)

    if api == "claude":
        system = body.get("system")
        for block in system if isinstance(system, list) else [system]:
            out.append(("stable" if STABLE_HEADER in text(block) else "system", text(block)))
        messages = body.get("messages") or []
    else:
        out.append(("system", text(body.get("instructions"))))
        messages = body.get("input") or body.get("messages") or []
    for m in messages:
        t = text(m)
        role = m.get("role") if isinstance(m, dict) else None
        if STABLE_HEADER in t:
            out.append(("stable", t))
        elif role in ("system", "developer"):
            out.append(("system", t))
        else:
            out.append(("message", t))
    return out


def strip_marks(v: Any) -> Any:
    if isinstance(v, dict):
        return {k: strip_marks(x) for k, x in v.items() if k != "cache_control"}
    if isinstance(v, list):
        return [strip_marks(x) for x in v]
    return v


def break_reason(prev: list[tuple[str, str]], cur: list[tuple[str, str]]) -> str | None:
    """Why ``cur`` does not repeat ``prev`` and append (None: it does): what changed at the first
    element that differs — the tools, the system prompt, ctx_lsp's stable block (with history
    shed: a compaction step), the per-turn context block, a tool result masked, history shed."""
    k = next((n for n, (a, b) in enumerate(zip(prev, cur, strict=False)) if a != b), None)
    if k is None:
        return None if len(cur) >= len(prev) else "history shed"
    (region, a), (_, b) = prev[k], cur[k]
    prev_msgs = [t for r, t in prev if r == "message"]
    cur_msgs = [t for r, t in cur if r == "message"]
    shed = bool(prev_msgs and cur_msgs and prev_msgs[0] != cur_msgs[0] and prev_msgs[0] not in cur_msgs[:1])
    if region in ("tools", "system") and cur[k][0] == region:
        return region
    if region == "stable" or cur[k][0] == "stable":
        return "compaction step (stable block, history shed)" if shed else "stable block changed"
    if CONTEXT_HEADER in a or CONTEXT_HEADER in b:
        return "per-turn block"
    if MASK_MARK in b and MASK_MARK not in a:
        return "tool result masked"
    if shed or (a in cur_msgs and cur_msgs.index(a) < cur_msgs.index(b) if b in cur_msgs else False):
        return "history shed"
    return "message changed"


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


ANSWER = "Done: the failing test passes now."


def resent_reply(body: dict[str, Any], after: dict[str, Any] | None) -> Reply:
    """The model's reply to ``body``: the model message the client's next request (``after``)
    resends, as an agent's loop does (a reply the client did not resend would fork the stored
    conversation at every request); a plain answer after the last."""
    key = "messages" if "messages" in body else "input"
    for item in (after or {}).get(key, [])[len(body[key]) :]:
        if item.get("type") == "function_call":  # the Responses API (Codex)
            return Reply.tool_call(item["name"], item["arguments"], tool_id=item["call_id"])
        if item.get("role") != "assistant":
            continue
        content = item["content"]
        block = content[0] if isinstance(content, list) else {"type": "text", "text": content}
        if block["type"] == "tool_use":
            return Reply.tool_call(block["name"], block["input"], tool_id=block["id"])
        return Reply.text(block["text"])
    return Reply.text(ANSWER)


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
            if n:  # the model's answer to the task before
                messages.append({"role": "assistant", "content": [{"type": "text", "text": ANSWER}]})
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
            if n:  # the model's answer to the task before
                items.append(
                    {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": ANSWER}]}
                )
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


IDLE_SECONDS = 600  # the user away: past both providers' cache lifetime


def idle_requests(bodies: list[dict[str, Any]], every: int) -> set[int]:
    """The requests that start every ``every``-th user turn after the first (0: none)."""
    if every <= 0:
        return set()
    starts = [n for n, b in enumerate(bodies) if _starts_turn(b)]
    return {n for k, n in enumerate(starts) if k and k % every == 0}


def _starts_turn(body: dict[str, Any]) -> bool:
    """Whether a body's newest item is a user's own message (not a tool result)."""
    items = body.get("messages") or body.get("input") or []
    last = items[-1] if items else {}
    content = last.get("content")
    blocks = content if isinstance(content, list) else []
    return last.get("role") == "user" and not any(b.get("type") == "tool_result" for b in blocks)


def _age(sessions: SessionEngine, seconds: float) -> None:
    """Every request the ledger holds, ``seconds`` further back: the user was away."""
    with sessions.store.write() as conn:
        conn.execute("UPDATE gateway_requests SET created = created - ?", (seconds,))


async def through(
    workspace: Path,
    shape: str,
    mode: str,
    bodies: list[dict[str, Any]],
    context_cost: str | None = None,
    window: int | None = None,
    idle: set[int] | None = None,
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
    if window:  # the shape's model with a smaller window (its prices stay the built-in ones)
        name = SHAPES[shape][0]
        small = ModelOverride(
            name=name, context_length=window, max_output=8192, calibration=1.4 if shape == "claude" else 1.0
        )
        config = msgspec.structs.replace(config, models=(*config.models, small))
    # a store of its own per run, as a new user's: what an earlier run learned (the model's
    # calibration, above all) moved later runs' costs when it was the workspace's
    scratch = tempfile.TemporaryDirectory(prefix="gateway-cost-")
    store = MemoryStore(Path(scratch.name) / "memory.sqlite3")
    sessions = await run(lambda: SessionEngine(Engine(workspace, config), store))
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
            for n, body in enumerate(bodies):
                if n in (idle or ()):
                    await run(_age, sessions, IDLE_SECONDS)
                up.set_default(resent_reply(body, bodies[n + 1] if n + 1 < len(bodies) else None))
                async with http.post(url + path, json=body, headers=headers) as r:
                    await r.read()
                    if r.status != 200:
                        raise SystemExit(f"HTTP {r.status} through the gateway")
                sent.append(up.model_requests[-1].json)
        await gateway.close()
    await run(sessions.close)
    worker.shutdown()
    scratch.cleanup()
    return sent


FROM_TURN = 10  # cache share counted from this request on: the first ones warm the cache


@dataclass
class Priced:
    cost: float = 0.0
    share: float = 0.0  # of input tokens read from the cache, from request FROM_TURN on
    tokens: int = 0
    over: int = 0  # requests over the window
    marks: int = 0  # requests with more than 4 cache_control blocks (Anthropic refuses them)
    breaks: list[tuple[int, str, int]] = field(default_factory=list)  # (request, why, tokens billed again)
    shares: list[float] = field(default_factory=list)  # per request
    largest: int = 0  # tokens of the largest request
    stable: int = 0  # tokens × requests of ctx_lsp's stable block
    per_turn: int = 0  # tokens × requests of ctx_lsp's per-turn blocks
    steps: int = 0  # compaction steps
    step_cost: float = 0.0  # what the requests that took them cost


def step_of(body: dict[str, Any]) -> int:
    """The compaction step a forwarded body is in (0: none yet), from the summary it carries."""
    return max(map(int, STEP_MARK.findall(json.dumps(body, ensure_ascii=False))), default=0)


def added(body: Any) -> tuple[int, int]:
    """The tokens of ctx_lsp's stable block and of its per-turn blocks in a body."""
    stable = per_turn = 0
    if isinstance(body, str):
        if STABLE_HEADER in body:
            stable = len(body.encode()) // 4
        elif CONTEXT_HEADER in body:
            per_turn = len(body[body.index(CONTEXT_HEADER) :].encode()) // 4
    elif isinstance(body, dict | list):
        for x in body.values() if isinstance(body, dict) else body:
            s, t = added(x)
            stable, per_turn = stable + s, per_turn + t
    return stable, per_turn


def price(shape: str, bodies: list[dict[str, Any]], window: int | None = None, idle: set[int] | None = None) -> Priced:
    _, model_window, p = SHAPES[shape]
    window = window or model_window
    cache = Cache(shape)
    out = Priced()
    read_late = total_late = 0
    prev: tuple[list[tuple[str, str]], bytes] | None = None
    step = 0
    for n, body in enumerate(bodies):
        data, marks = serialise(shape, body)
        if n in (idle or ()):  # the user was away: the provider's cache expired
            cache.entries.clear()
        c, r, t = cache.price(data, marks, p)
        s, b = added(body)
        out.stable, out.per_turn = out.stable + s, out.per_turn + b
        out.cost, out.tokens = out.cost + c, out.tokens + t
        out.largest = max(out.largest, t)
        out.over += t > window
        out.marks += len(marks) > MAX_MARKS
        out.shares.append(r / t if t else 0.0)
        if n >= FROM_TURN:
            read_late, total_late = read_late + r, total_late + t
        parts = regions(shape, body)
        stepped, step = step_of(body) > step, max(step, step_of(body))
        if stepped:
            out.steps, out.step_cost = out.steps + 1, out.step_cost + c
        if prev is not None and (why := break_reason(prev[0], parts)) is not None:
            why = "compaction step" if stepped else why  # one step, in one go, whatever changed first
            out.breaks.append((n, why, (len(prev[1]) - shared_prefix(data, prev[1])) // 4))
        prev = (parts, data)
    out.share = read_late / total_late if total_late else 0.0
    return out


def breaks_line(priced: Priced) -> str:
    """Where the forwarded prefix broke: how often for each reason, and the tokens billed again."""
    if not priced.breaks:
        return "no break: every request repeats the one before and appends"
    by: dict[str, list[int]] = {}
    for _, why, lost in priced.breaks:
        by.setdefault(why, []).append(lost)
    parts = [f"{why} ×{len(v)} ({sum(v) / 1e3:.0f}k tok)" for why, v in sorted(by.items(), key=lambda x: -sum(x[1]))]
    first = ", ".join(f"#{n}" for n, _, _ in priced.breaks[:8])
    return f"breaks: {'; '.join(parts)} — requests {first}{' …' if len(priced.breaks) > 8 else ''}"


def cost_line(priced: Priced) -> str:
    """What ctx_lsp's blocks added and what the steps cost: where a mode's cost goes."""
    share = priced.step_cost / priced.cost if priced.cost else 0.0
    return (
        f"ctx_lsp's blocks: stable {priced.stable / 1e3:.0f}k + per-turn {priced.per_turn / 1e3:.0f}k tokens×requests; "
        f"{priced.steps} steps cost ${priced.step_cost:.2f} ({share:.0%} of the run)"
    )


def share_curve(priced: Priced, buckets: int = 10) -> str:
    """Cache share per tenth of the session: where it sags."""
    s = priced.shares
    step = max(1, len(s) // buckets)
    return " ".join(f"{sum(s[i : i + step]) / len(s[i : i + step]):.2f}" for i in range(0, len(s), step))


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
    ap.add_argument("--window", type=int, help="the model's window in tokens (default: the model's own)")
    ap.add_argument(
        "--result-chars",
        type=int,
        default=RESULT_CHARS,
        help="characters of each tool output",
    )
    ap.add_argument("--no-breaks", dest="breaks", action="store_false", help="no per-run break lines")
    ap.add_argument(
        "--idle-every",
        type=int,
        default=0,
        help="every Nth user turn starts after the user was away past the cache lifetime (0: never)",
    )
    ap.add_argument("--per-request", action="store_true", help="print every request's cache share")
    ap.add_argument("--html", type=Path, help="write a page with each run's cache share per request, charted")
    args = ap.parse_args(argv)
    workspace = args.workspace or generate(DATA / "synthetic_1600x330", 1600, 330)
    files, greps, log = corpus(workspace)
    if args.result_chars != RESULT_CHARS:  # smaller (or larger) tool outputs
        files = [(p, t[: args.result_chars]) for p, t in files]
        greps, log = [g[: args.result_chars] for g in greps], log[-args.result_chars :]
    window = f" · window {args.window:,}" if args.window else ""
    print(f"gateway cost · {workspace} · {os.cpu_count()} cores · input cost, cache simulated{window}")
    head = f"{'session':<16} {'mode':<6} {'direct $':>9} {'through $':>10} {'ratio':>6} {'cache≥10 d/t':>11}"
    print(f"{head} {'tokens d → t':>20} {'over window d/t':>16} {'raw/window':>10}")
    figures: list[str] = []
    for shape in args.shapes:
        make = {"claude": claude_session, "sdk": sdk_session}.get(shape, codex_session)
        small = ([(p, t[:SMALL_CHARS]) for p, t in files], [g[:SMALL_CHARS] for g in greps], log[-SMALL_CHARS:])
        runs = [(f"{turns}", make(turns, files, greps, log)) for turns in args.turns]
        if args.fits:
            runs.insert(0, (f"{args.fits} fits", make(args.fits, *small)))
        if shape == "sdk":
            runs = [("3 requests", make(3, files, greps, log))]
        for label, bodies in runs:
            idle = idle_requests(bodies, args.idle_every)
            d = price(shape, [without_ctx_tools(b) for b in bodies], args.window, idle)
            off_cost: float | None = None
            for mode in args.modes:
                sent = asyncio.run(through(workspace, shape, mode, bodies, args.context_cost, args.window, idle))
                t = price(shape, sent, args.window, idle)
                ratio = f"{t.cost / d.cost:>6.2f}" if d.cost else f"{'–':>6}"
                money = f"{d.cost:>9.2f} {t.cost:>10.2f} {ratio}"
                cache = f"{d.share:>5.2f}/{t.share:<5.2f}"
                moved = f"{d.tokens / 1e6:>8.2f}M → {t.tokens / 1e6:.2f}M"
                if t.tokens < 100_000:  # a short script: its tokens, not millions
                    moved = f"{d.tokens / 1e3:>8.1f}k → {t.tokens / 1e3:.1f}k"
                grown = f"{d.largest / (args.window or SHAPES[shape][1]):>5.1f}×"
                print(f"{shape + ' ' + label:<16} {mode:<6} {money} {cache} {moved} {d.over:>8}/{t.over:<7} {grown}")
                if mode == "off":
                    off_cost = t.cost
                elif off_cost:  # the target: the default mode within 10% of mode off
                    print(f"{'':<23} {mode} vs off: {t.cost / off_cost - 1:+.1%} (${t.cost:.4f} / ${off_cost:.4f})")
                if args.breaks and shape != "sdk":
                    print(f"{'':<23} {breaks_line(t)}")
                    print(f"{'':<23} cache share by tenths: {share_curve(t)}")
                    print(f"{'':<23} {cost_line(t)}")
                    if t.marks:
                        print(f"{'':<23} {t.marks} requests with more than {MAX_MARKS} cache_control blocks")
                if args.per_request:
                    print(f"{'':<23} cache share per request: {' '.join(f'{x:.2f}' for x in t.shares)}")
                figures.append(share_figure(f"{shape} {label}, {mode}", d, t, len(figures)))
    if args.html:
        args.html.write_text(_page("gateway cost: cache share per request", figures))
        print(f"charts: {args.html}")
    return 0


def share_figure(label: str, direct: Priced, through: Priced, n: int) -> str:
    """A run's cache share per request, through the gateway against direct, with its breaks."""
    chart = line_chart(
        chart_id=f"b{n}",
        kind="cache",
        title=f"Cache share per request: {label}",
        desc=f"{len(through.shares)} requests in order: the share of each request's input read from the "
        "simulated provider cache, direct and through the gateway.",
        x_label="request (1 = first)",
        y_label="input read from cache (%)",
        series=[
            Series("direct", "direct", direct.shares, "dashed"),
            Series("forwarded", "through the gateway", through.shares),
        ],
        y_format=lambda v: f"{v:.0%}",
        y_max=1.0,
        combine=lambda vs: sum(vs) / len(vs),
    )
    ratio = through.cost / direct.cost if direct.cost else 0.0
    where = "; ".join(f"#{k + 1} {why}" for k, why, _ in through.breaks[:12])
    more = f" and {len(through.breaks) - 12} more" if len(through.breaks) > 12 else ""
    caption = f"<h2>{label}</h2>cost {ratio:.2f} of direct; the prefix broke at: {where or 'no request'}{more}."
    return _figure(chart, len(through.shares), "mean", caption)


if __name__ == "__main__":
    sys.exit(main())
