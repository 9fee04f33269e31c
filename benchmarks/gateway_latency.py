"""What the gateway costs and what it keeps: added latency per request, streaming overhead, RSS,
and the provider-cache figure over a long agent session that overflows the window.

    python benchmarks/gateway_latency.py [WORKSPACE] [--turns 200] [--result-chars 9000]

WORKSPACE: a source tree to plan over (default: a generated tree of sympy's size under
benchmarks/.data, or CTX_BENCH_DATA). The gateway runs as `ctx-lsp gateway` (a separate process,
as a user runs it) in front of the fake upstream of the tests (in this process). Each request of a
simulated Claude Code session (Anthropic Messages, streamed; one tool exchange per request, a new
user message every 10 after the model's answer) is sent through the gateway and, with the same
body, straight to the upstream; the upstream's reply to each request is the model message the next
request resends, as in an agent's loop (before, the replies were a fixed text no request resent,
and the stored conversation forked at every request). Reported:

- added latency: total time through the gateway minus straight, per request (p50 / p95);
- the same for its first request after start, which pays for whatever start-up left to build;
- time to first byte, through vs straight; per-chunk overhead on a 400-chunk streamed reply;
- the gateway's RSS after the session;
- cache: the share of each request's input that repeats the previous request's byte for byte in
  the provider's cache order (tools, system, messages), and what that costs cache-weighted
  (a cached input token at 0.1 of an uncached one, Anthropic's price) against sending direct —
  which stops working once the conversation outgrows the window.

Concurrency (``--streams 1,30``): that many conversations at once, each a session of its own
sending ``--stream-requests`` requests one after another, each reply streamed over
``--reply-seconds`` as a model does (sub-agents, parallel tool calls); the same bodies with the
same concurrency straight to the upstream in the same run. Reported per concurrency: time to the
first byte through and straight (p50 / p99), and what the gateway added; then the same without
each conversation's first request (those arrive in the same millisecond, and a new
conversation's first plan is its most expensive). With every reply taking the same time the
conversations stay in step and each round is such a burst again; ``--reply-jitter 0.5`` draws
each reply's time from ±50% of it (the same for a request through the gateway and straight), so
they drift apart as real agents do. ``--reply-seconds 0`` makes the upstream answer at once: the
gateway's one engine thread is then busy all the time, which is the saturated case (the added
latency grows with the number of streams).

Targets (the gateway issue): added p50 ≤ 30 ms, per chunk ≤ 0.2 ms, cache share ≥ 90% on average
with every request inside the window; with 30 streams the added time to first byte within 2× of
one stream's.
"""

from __future__ import annotations

import argparse
import dataclasses
import gc
import http.client
import json
import os
import random
import re
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TextIO
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).parent))

from index_speed import DATA, _loadavg, generate  # noqa: E402
from lsp_client import cpu_seconds, status_mb  # noqa: E402

from ctx_lsp.workspace.files import WorkspaceWalker  # noqa: E402
from tests.gateway.fake_upstream import FakeUpstream, Reply, _common_prefix, cacheable  # noqa: E402

MODEL = "claude-sonnet-4-5"  # 200k window
WINDOW = 200_000
CACHED_PRICE = 0.1  # a cache read costs a tenth of an uncached input token
BREAK_SHARE = 0.5  # a request repeating less of the previous one than this broke the cached prefix


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def start_gateway(workspace: Path, up: FakeUpstream) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "ctx_lsp",
            "gateway",
            str(workspace),
            "--listen",
            "127.0.0.1:0",
            "--anthropic-upstream",
            up.url,
            "--openai-upstream",
            up.openai_url,
        ],
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stderr is not None
    url, ready = None, False
    for line in proc.stderr:
        found = re.search(r"listening on (http://\S+)", line)
        url = found.group(1) if found else url
        ready = ready or "search ready" in line
        if url and ready:  # listening, and its start-up work is over: requests are timed alone
            # its log goes on (a line a request): read, or the gateway blocks on a full pipe
            threading.Thread(target=_drain, args=(proc.stderr,), daemon=True).start()
            return proc, url
    raise SystemExit(f"the gateway did not start (exit {proc.wait()})")


FAILED_OPEN: list[str] = []  # the gateway's log lines of requests it could not plan


def _drain(stream: TextIO) -> None:
    for line in stream:
        if "planning failed" in line:  # a benchmark of a gateway that fails open measures nothing
            FAILED_OPEN.append(line.strip())


def sources(workspace: Path, limit: int) -> list[tuple[str, str]]:
    walked = WorkspaceWalker(workspace, check_content=False).walk()[:limit]  # source files of any language
    return [(entry.rel, entry.path.read_text(errors="replace")) for entry in walked]


DONE = "Done: the task is explained and its bugs are fixed."


def session_requests(workspace: Path, turns: int, result_chars: int) -> tuple[list[dict], list[Reply]]:
    """A Claude Code-like session: system, tools, and one tool exchange per request; a new task
    every 10 requests after the model's answer. With each request, the reply the model gives to
    it: what the next request resends as the model's message (its tool call, with the call's id),
    as an agent's loop does — a reply the client did not resend would fork the stored
    conversation at every request."""
    files = sources(workspace, turns)
    tools = [
        {"name": "Read", "description": "Read a file from the workspace. " * 20, "input_schema": {"type": "object"}},
        {"name": "Grep", "description": "Search the workspace. " * 20, "input_schema": {"type": "object"}},
    ]
    # a new conversation every run: the same one again would go on in the store of the last run
    agent = f"You are a coding agent (run {time.time_ns()}). " + "You are a coding agent. " * 200
    system = [{"type": "text", "text": agent, "cache_control": {"type": "ephemeral"}}]
    messages: list[dict] = []
    bodies = []
    for n in range(turns):
        if n % 10 == 0:
            path = files[n % len(files)][0]
            if n:
                messages.append({"role": "assistant", "content": [{"type": "text", "text": DONE}]})
            messages.append({"role": "user", "content": f"Task {n // 10}: explain how {path} works and fix its bugs."})
        else:
            path, text = files[n % len(files)]
            prev = f"toolu_{n - 1:04d}"
            messages.append(
                {
                    "role": "assistant",
                    "content": [{"type": "tool_use", "id": prev, "name": "Read", "input": {"path": path}}],
                }
            )
            messages.append(
                {
                    "role": "user",
                    "content": [{"type": "tool_result", "tool_use_id": prev, "content": text[:result_chars]}],
                }
            )
        body = {
            "model": MODEL,
            "max_tokens": 8192,
            "stream": True,
            "system": system,
            "tools": tools,
            "messages": messages,
        }
        bodies.append(json.loads(json.dumps(body)))
    replies = []
    for n in range(turns):
        after = n + 1  # the request that resends this reply
        if after % 10 == 0 or after == turns:
            replies.append(Reply.text(DONE))
        else:
            path = files[after % len(files)][0]
            replies.append(Reply.tool_call("Read", {"path": path}, tool_id=f"toolu_{n:04d}"))
    return bodies, replies


def timed_stream(url: str, body: bytes) -> tuple[float, float, int]:
    """(seconds to the first byte, seconds in all, chunks read) of one streamed request."""
    where = urlsplit(url)
    conn = http.client.HTTPConnection(where.hostname, where.port, timeout=120)
    headers = {"x-api-key": "sk-bench", "anthropic-version": "2023-06-01", "content-type": "application/json"}
    t0 = time.perf_counter()
    conn.request("POST", "/v1/messages", body=body, headers=headers)
    resp = conn.getresponse()
    first = None
    chunks = 0
    while resp.read1(65536):
        first = first or time.perf_counter()
        chunks += 1
    end = time.perf_counter()
    conn.close()
    if resp.status != 200:
        raise SystemExit(f"{url}: HTTP {resp.status}")
    return (first or end) - t0, end - t0, chunks


def concurrent_ttfb(url: str, streams: list[list[bytes]]) -> list[tuple[int, float]]:
    """Each stream's requests one after another, the streams at once: (the request's place in
    its stream, ms to its first byte) for every request."""
    out: list[tuple[int, float]] = []
    lock = threading.Lock()
    start = threading.Barrier(len(streams))

    def one(bodies: list[bytes]) -> None:
        start.wait()
        for n, raw in enumerate(bodies):
            first, _, _ = timed_stream(url, raw)
            with lock:
                out.append((n, first * 1000))

    threads = [threading.Thread(target=one, args=(s,)) for s in streams]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return out


def _responder(
    steps: dict[int, Reply], seconds: float, chunks: int, jitter: float = 0.0
) -> Callable[[dict], Reply | None]:
    """The reply to a request of a concurrent conversation, by where it is in its loop (how many
    messages it has), streamed over ``seconds`` — times a factor in [1 − jitter, 1 + jitter] drawn
    from the conversation's system prompt and the step, so the same request gets the same reply
    time through the gateway and straight, and conversations drift apart as real agents' do."""

    def reply(body: dict) -> Reply | None:
        n = len(body.get("messages") or ())
        found = steps.get(n)
        if found is None:
            return None
        events = chunks if found.kind == "text" else 8  # a tool call streams as a few events
        factor = random.Random(f"{json.dumps(body.get('system'))}:{n}").uniform(1 - jitter, 1 + jitter)
        return dataclasses.replace(found, delay=seconds * factor / events)

    return reply


def concurrency_rows(url: str, up: FakeUpstream, workspace: Path, args: argparse.Namespace) -> list[tuple[str, ...]]:
    """Per number of streams: time to first byte through and straight, p50 / p99, and the difference."""
    rows = []
    chunks = max(1, args.chunks // 10)
    words = " ".join(f"w{n}" for n in range(chunks))
    up.set_default(Reply.text(words, delay=args.reply_seconds / chunks))
    for k in args.streams:
        # each conversation an agent's loop of its own (its own system prompt), all with the same
        # steps: the reply to each request is the model message its next one resends
        sessions = [session_requests(workspace, args.stream_requests, args.result_chars) for _ in range(k)]
        steps = {len(b["messages"]): r for b, r in zip(*sessions[0], strict=True)}
        up.set_responder(_responder(steps, args.reply_seconds, chunks, args.reply_jitter))
        streams = [[json.dumps(b).encode() for b in bodies] for bodies, _ in sessions]
        through = concurrent_ttfb(url, streams)
        straight = concurrent_ttfb(up.url, streams)
        up.set_responder(None)
        # all requests; then without each conversation's first, which all arrive in the same
        # millisecond (a new conversation's first plan is its most expensive one)
        for label, keep in (("", lambda n: True), (", later requests", lambda n: n > 0)):
            t = [ms for n, ms in through if keep(n)]
            d = [ms for n, ms in straight if keep(n)]
            for q, name in ((0.5, "p50"), (0.99, "p99")):
                rows.append(
                    (
                        f"{k} streams{label}: first byte through / straight / added, ms {name}",
                        f"{pct(t, q):.0f}",
                        f"{pct(d, q):.0f}",
                        f"{pct(t, q) - pct(d, q):.0f}",
                    )
                )
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("workspace", nargs="?", type=Path)
    ap.add_argument("--turns", type=int, default=200)
    ap.add_argument("--result-chars", type=int, default=9000, help="size of each tool result (default 9000)")
    ap.add_argument("--chunks", type=int, default=400, help="chunks of the streamed reply timed per chunk")
    ap.add_argument(
        "--streams",
        type=lambda s: [int(x) for x in s.split(",") if x],
        default=[1, 30],
        help="concurrent conversations to time (default 1,30; '' for none)",
    )
    ap.add_argument("--stream-requests", type=int, default=6, help="requests of each concurrent conversation")
    ap.add_argument("--reply-seconds", type=float, default=1.0, help="how long each reply streams (0: at once)")
    ap.add_argument(
        "--reply-jitter",
        type=float,
        default=0.0,
        help="each concurrent reply's time × a factor in [1 − J, 1 + J] (0: the same for all, so the"
        " conversations stay in step and every round is a burst)",
    )
    args = ap.parse_args(argv)
    workspace = args.workspace or generate(DATA / "synthetic_1600x330", 1600, 330)
    bodies, replies = session_requests(workspace, args.turns, args.result_chars)
    load_before = _loadavg()
    # this process times both paths: what it built so far set apart from its own garbage
    # collector, whose full collections (20-40 ms here) would land on either path's timings
    gc.collect()
    gc.freeze()
    with FakeUpstream(reply="ok") as up:
        proc, url = start_gateway(workspace, up)
        try:
            added, ttfb_gw, ttfb_up, shares, costs_gw, costs_direct, over = [], [], [], [], [], [], 0
            previous, prev_body = None, bodies[0]
            cpu0 = cpu_seconds(proc.pid)
            for body, reply in zip(bodies, replies, strict=True):
                up.set_default(reply)  # through the gateway and straight: the same reply
                raw = json.dumps(body).encode()
                f_gw, t_gw, _ = timed_stream(url, raw)
                sent = up.model_requests[-1].json
                f_up, t_up, _ = timed_stream(up.url, raw)
                added.append((t_gw - t_up) * 1000)
                ttfb_gw.append(f_gw * 1000)
                ttfb_up.append(f_up * 1000)
                key = cacheable("messages", sent)
                if previous is not None:
                    shares.append(_common_prefix(key, previous) / len(key))
                    cached = _common_prefix(key, previous) // 4
                    costs_gw.append(len(key) // 4 - cached + CACHED_PRICE * cached)
                    direct = cacheable("messages", body)
                    # sent direct, the whole history each time; the prefix repeats the previous body
                    d_cached = _common_prefix(direct, cacheable("messages", prev_body)) // 4
                    costs_direct.append(len(direct) // 4 - d_cached + CACHED_PRICE * d_cached)
                    over += len(direct) // 4 > WINDOW
                previous, prev_body = key, body
            cpu_ms = (cpu_seconds(proc.pid) - cpu0) * 1000 / len(bodies)
            sizes = [len(cacheable("messages", r.json)) // 4 for r in up.model_requests[::2]]
            rss = status_mb(proc.pid)
            # streaming: one long reply, through vs straight
            words = " ".join(f"w{n}" for n in range(args.chunks))
            small = json.dumps({**bodies[0], "messages": bodies[0]["messages"][:1]}).encode()
            up.queue(Reply.text(words), Reply.text(words))
            _, t1, _c1 = timed_stream(url, small)
            _, t2, _c2 = timed_stream(up.url, small)
            concurrency = concurrency_rows(url, up, workspace, args) if args.streams else []
        finally:
            proc.terminate()
            proc.wait(10)
    print(
        f"gateway benchmark · {workspace} · {len(bodies)} requests · {os.cpu_count()} cores · "
        f"load average before / after {load_before} / {_loadavg()}"
    )

    def row(label: str, *values: str) -> None:
        print(f"{label:<72}" + "".join(f"{v:>11}" for v in values))

    row("measure", "p50", "p95")
    row("added latency per request (through − straight), ms", f"{pct(added, 0.5):.1f}", f"{pct(added, 0.95):.1f}")
    row("added latency of its first request after start, ms", f"{added[0]:.1f}")
    row("gateway CPU per request (all threads, reply recorded), ms", f"{cpu_ms:.1f}")
    row("time to first byte through the gateway, ms", f"{pct(ttfb_gw, 0.5):.1f}", f"{pct(ttfb_gw, 0.95):.1f}")
    row("time to first byte straight to the upstream, ms", f"{pct(ttfb_up, 0.5):.1f}", f"{pct(ttfb_up, 0.95):.1f}")
    row(f"per-chunk overhead on a {args.chunks}-chunk reply, ms", f"{(t1 - t2) * 1000 / max(1, args.chunks):.3f}")
    row("gateway RSS after the session, MB", f"{rss:.0f}")
    row("largest request forwarded / the window (tokens)", str(max(sizes)), str(WINDOW))
    row("requests whose body was over the window if sent direct", str(over))
    row("requests the gateway could not plan (sent as they came)", str(len(FAILED_OPEN)))
    if shares:
        row(
            "input repeating the previous request (cacheable), mean / min",
            f"{statistics.mean(shares):.1%}",
            f"{min(shares):.1%}",
        )
        # where the cached prefix breaks: a compaction step, not a turn inside an agent loop
        breaks = [f"#{n + 2} {share:.0%}" for n, share in enumerate(shares) if share < BREAK_SHARE]
        print(f"requests repeating under {BREAK_SHARE:.0%} of the previous one: {', '.join(breaks) or 'none'}")
    if costs_direct:
        row("cache-weighted input cost, through / direct", f"{sum(costs_gw) / sum(costs_direct):.2f}")
    if concurrency:
        each = f"{args.stream_requests} requests each, replies streamed over {args.reply_seconds:g} s"
        if args.reply_jitter:
            each += f" ± {args.reply_jitter:.0%}"
        print(f"concurrent conversations ({each})")
        for label, *values in concurrency:
            row(label, *values)
    return 0


if __name__ == "__main__":
    sys.exit(main())
