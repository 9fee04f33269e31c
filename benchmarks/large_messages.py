"""Huge messages through `ctx-lsp serve`: what one big tool result costs, and whether plan time
depends on how much conversation a session has stored.

    .venv/bin/python benchmarks/large_messages.py                      # 1/10/50 MB; 1/50/200 MB stored
    .venv/bin/python benchmarks/large_messages.py --sizes 1,10 --stored 1,20 --repeat 3
    .venv/bin/python benchmarks/large_messages.py --json               # one JSON object instead

Part 1, per message size (a fresh workspace and server each run): the agent-loop case — the
user's question, the assistant's tool call and a tool result of that size (a log, ~2.6 bytes per
cl100k token) through one ``ctx/appendMessages``, timing the append and a cheap request
(``ctx/showBudget``) sent right behind it (how long the server is unresponsive); then a plan for
the same question; then ``shutdown`` and ``exit`` (until the process is gone); then a fresh
server on the same store and its first plan. Peak RSS of each server. A refused plan (an
overflow) is timed too; the table says how the plans were answered.

Part 2, per stored size (one session made of N 1-MB tool results, each in its own turn, written
through the engine's append, as a client's appends would): a fresh server, its first plan (which
counts what was never counted, and compacts) and ``--plans`` more plans of the same session.

To measure another checkout (the code before a change), run from outside the repository (the
server is started with ``python -m ctx_lsp``, which looks in the current folder first) with
``PYTHONPATH=<checkout>``; the table's ``code`` row says which code ran.

Every row is the median and the 95th percentile over ``--repeat`` runs (p95 of few runs is their
maximum). Run it on a quiet machine; the table says the core count and the load average.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import select
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.append(str(HERE.parent))  # after PYTHONPATH: another checkout's ctx_lsp can be measured

from lsp_client import RpcError, StdioClient  # noqa: E402

FIXTURE = HERE.parent / "tests" / "fixtures" / "sample_ws"
MB = 1_000_000
_WORDS = [
    "INFO",
    "WARN",
    "ERROR",
    "DEBUG",
    "request",
    "response",
    "GET",
    "POST",
    "/api/v1/items",
    "/api/v1/orders",
    "status=200",
    "status=500",
    "latency_ms",
    "user_id",
    "order_id",
    "retry",
    "timeout",
    "connection",
    "pool",
    "worker-3",
    "worker-7",
    "cache",
    "miss",
    "hit",
    "Traceback",
    "File",
    "line",
    "raise",
    "ValueError",
    "KeyError",
    "invoice",
    "total",
    "discount",
    "tax",
    "rounding",
]


def log_text(size: int, seed: int) -> str:
    """``size`` bytes of log lines, different for every seed (no two messages share a body)."""
    rnd = random.Random(seed)
    lines = []
    n = 0
    while n < size:
        line = f"{n:>10} " + " ".join(rnd.choice(_WORDS) for _ in range(rnd.randint(6, 14))) + "\n"
        lines.append(line)
        n += len(line)
    return "".join(lines)[:size]


def big_block(size: int, seed: int, base: list[str]) -> str:
    """Like ``log_text`` but fast for many messages: a shuffled copy of one pool of lines."""
    rnd = random.Random(seed)
    out = base[:]
    rnd.shuffle(out)
    text = f"seed {seed}\n" + "".join(out)
    while len(text) < size:
        text += text
    return text[:size]


def tool_turn(k: int, content: str) -> list[dict]:
    return [
        {"id": f"u{k}", "role": "user", "content": f"Step {k}: read the server log and tell me what failed."},
        {
            "id": f"a{k}",
            "role": "assistant",
            "content": "",
            "toolCalls": [
                {"id": f"c{k}", "name": "read_file", "arguments": json.dumps({"path": f"logs/{k}.log"})},
            ],
        },
        {"id": f"t{k}", "role": "tool", "toolCallId": f"c{k}", "content": content},
        {"id": f"r{k}", "role": "assistant", "content": f"Step {k}: the log shows retries on worker-3."},
    ]


def workspace(tmp: Path) -> Path:
    root = tmp / "ws"
    shutil.copytree(FIXTURE, root, ignore=shutil.ignore_patterns(".ctx"))
    return root


def timed(fn, *args):
    t0 = time.perf_counter()
    out = fn(*args)
    return time.perf_counter() - t0, out


def stop(client: StdioClient, timeout: float) -> tuple[float, float]:
    """(seconds until ``shutdown`` is answered, seconds from ``exit`` until the process is gone);
    a value of ``timeout`` means it did not happen in time (the process is then killed)."""
    t0 = time.perf_counter()
    msg_id = 10**6
    client._send({"jsonrpc": "2.0", "id": msg_id, "method": "shutdown", "params": None})
    t_shutdown = timeout
    assert client.proc.stdout is not None
    while time.perf_counter() - t0 < timeout:
        if b"\r\n\r\n" not in client._buf:
            ready, _, _ = select.select([client.proc.stdout], [], [], max(0.0, timeout - (time.perf_counter() - t0)))
            if not ready:
                break
        try:
            msg = client._read()
        except EOFError:
            break
        if msg.get("id") == msg_id and "method" not in msg:
            t_shutdown = time.perf_counter() - t0
            break
    t1 = time.perf_counter()
    try:
        client.notify("exit", None)
        client.proc.wait(timeout=timeout)
        t_exit = time.perf_counter() - t1
    except Exception:
        t_exit = timeout
        client.proc.kill()
        client.proc.wait()
    return t_shutdown, t_exit


def plan(client: StdioClient, params: dict) -> tuple[float, str]:
    """(seconds, "ok" or the error code): a refusal (an overflow) is timed like an answer."""
    t0 = time.perf_counter()
    try:
        out = client.request("ctx/planContext", params)
    except RpcError as err:
        return time.perf_counter() - t0, f"error {err.code}"
    dt = time.perf_counter() - t0
    assert out["totals"]["tokens"] <= out["promptBudget"]
    return dt, "ok"


def one_message(size_mb: float, timeout: float, context_length: int | None) -> tuple[dict[str, float], set[str]]:
    """The agent-loop case: the user asks, the assistant calls a tool, the huge result arrives and
    the next model call is planned (for the same question: the result is the pending exchange)."""
    size = int(size_mb * MB)
    turn = tool_turn(1, log_text(size, seed=size))[:3]
    params = {"query": turn[0]["content"], **({"contextLength": context_length} if context_length else {})}
    outcomes = set()
    with tempfile.TemporaryDirectory() as tmp:
        root = workspace(Path(tmp))
        client = StdioClient(root, session="big")
        try:
            client.request("ctx/planContext", {"query": "warm up: index and capsules"})
            t0 = time.perf_counter()
            client._send({"jsonrpc": "2.0", "id": 900, "method": "ctx/appendMessages", "params": {"messages": turn}})
            t_sent = time.perf_counter()
            client._send({"jsonrpc": "2.0", "id": 901, "method": "ctx/showBudget", "params": {}})
            done: dict[int, float] = {}
            while len(done) < 2:
                msg = client._read()
                if msg.get("id") in (900, 901) and "method" not in msg:
                    if "error" in msg:
                        raise RuntimeError(msg["error"])
                    done[msg["id"]] = time.perf_counter()
                elif "method" in msg and "id" in msg:
                    client._send({"jsonrpc": "2.0", "id": msg["id"], "result": None})
            row = {"append": done[900] - t0, "answer behind append": done[901] - t_sent}
            row["plan after append"], outcome = plan(client, params)
            outcomes.add(outcome)
            row["peak RSS MB"] = client.peak_rss_mb()
            row["shutdown"], row["exit"] = stop(client, timeout)
        except BaseException:
            client.proc.kill()
            raise
        client = StdioClient(root, session="big")
        try:
            row["plan after restart"], outcome = plan(client, params)
            outcomes.add(outcome)
            row["peak RSS MB, restarted"] = client.peak_rss_mb()
        finally:
            stop(client, timeout)
    return row, outcomes


def stored_session(
    total_mb: int, plans: int, timeout: float, context_length: int | None, run: int = 0
) -> dict[str, float]:
    from ctx_lsp.engine import Engine
    from ctx_lsp.sessions import SessionEngine

    base = log_text(MB, seed=1).splitlines(keepends=True)
    with tempfile.TemporaryDirectory() as tmp:
        root = workspace(Path(tmp))
        core = SessionEngine(Engine(root))
        try:
            t0 = time.perf_counter()
            for k in range(total_mb):
                core.append_raw("stored", None, tool_turn(k, big_block(MB, run * 100_000 + k, base)))
            build = time.perf_counter() - t0
        finally:
            core.close()
        client = StdioClient(root, session="stored")
        try:
            extra = {"contextLength": context_length} if context_length else {}
            first, outcome = plan(client, {"query": "which step failed?", **extra})
            outcomes = {outcome}
            times = []
            for k in range(plans):
                dt, outcome = plan(client, {"query": f"what failed in step {k}?", **extra})
                outcomes.add(outcome)
                times.append(dt)
            rss = client.peak_rss_mb()
        finally:
            stop(client, timeout)
    row = {"build (engine appends)": build, "first plan": first, "plan": statistics.median(times), "peak RSS MB": rss}
    return row, outcomes


def p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(0.95 * len(ordered)) - 1))]


def fmt(name: str, values: list[float]) -> str:
    if name.endswith(("RSS MB", "RSS MB, restarted")):
        return f"{statistics.median(values):,.0f} / {p95(values):,.0f}"
    return f"{statistics.median(values):.3f} / {p95(values):.3f}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1,10,50", help="message sizes in MB (comma-separated)")
    ap.add_argument("--stored", default="1,50,200", help="stored conversation sizes in MB (comma-separated)")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--plans", type=int, default=5, help="plans per stored session (their median is one run)")
    ap.add_argument("--timeout", type=float, default=120.0, help="seconds to wait for shutdown / exit")
    ap.add_argument("--context-length", type=int, default=None, help="plan with this window (default: the model's)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    load_before = " ".join(Path("/proc/loadavg").read_text().split()[:3])
    import ctx_lsp

    rows: list[tuple[str, list[float]]] = []
    outcomes: dict[str, set[str]] = {}
    for size in [float(s) for s in args.sizes.split(",") if s]:
        label = f"{size:g} MB message"
        runs = [one_message(size, args.timeout, args.context_length) for _ in range(args.repeat)]
        outcomes[label] = set().union(*(o for _, o in runs))
        for key in runs[0][0]:
            rows.append((f"{label}: {key}", [r[key] for r, _ in runs]))
    for total in [int(s) for s in args.stored.split(",") if s]:
        label = f"{total} MB stored in 1-MB results"
        runs = [stored_session(total, args.plans, args.timeout, args.context_length, n) for n in range(args.repeat)]
        outcomes[label] = set().union(*(o for _, o in runs))
        for key in runs[0][0]:
            rows.append((f"{label}: {key}", [r[key] for r, _ in runs]))
    meta = {
        "code": str(Path(ctx_lsp.__file__).parent),
        "cores": os.cpu_count(),
        "load average before / after": f"{load_before} / {' '.join(Path('/proc/loadavg').read_text().split()[:3])}",
        "repeat": args.repeat,
        **{f"{label}: plans answered": ", ".join(sorted(o)) for label, o in outcomes.items()},
    }
    if args.json:
        print(json.dumps({"meta": meta, "rows": dict(rows)}, indent=1))
        return
    width = max(len(k) for k, _ in rows)
    print(f"| {'measure':<{width}} | median / p95 |")
    print(f"|{'-' * (width + 2)}|--------------|")
    for name, values in rows:
        print(f"| {name:<{width}} | {fmt(name, values)} |")
    for k, v in meta.items():
        print(f"| {k:<{width}} | {v} |")


if __name__ == "__main__":
    main()
