"""A synthetic long agent session through `ctx-lsp serve`: time per turn, compactions, peak RSS,
and whether a plan late in the session costs what one early in it does.

    python benchmarks/long_session.py [--turns 500] [--tool-tokens 600] [--context-length 12000]

Each turn: plan, render, append an assistant tool call with a large result and a reply plus the
next user message, report usage. Checks the invariants as it goes: no plan over budget, every
message still listed at the end (none lost), and prints a table. The plan request alone is timed
too: its median over the first and over the last ``--window`` turns (target, issue 18: the
same, ± 10%, however many compactions and archived messages the session holds by then), in
wall time and in the server's CPU time (less noisy on a shared machine) — and apart for the
plans that compacted first and those that did not: every other plan compacts, so a window's
median falls in either group, or between them, by how many of each it holds.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from index_speed import _loadavg
from lsp_client import StdioClient, cpu_ns

FIXTURE = Path(__file__).parent.parent / "tests" / "fixtures" / "sample_ws"
TASK = "Add VAT support to calculate_invoice_total and keep the discount rules working."


def turn(k: int, tool_tokens: int) -> list[dict]:
    return [
        {
            "id": f"a{k}",
            "role": "assistant",
            "content": f"Step {k}: running the tests.",
            "toolCalls": [{"id": f"c{k}", "name": "run_tests", "arguments": '{"path": "tests/test_invoice.py"}'}],
        },
        {"id": f"t{k}", "role": "tool", "toolCallId": f"c{k}", "content": "log line " * tool_tokens},
        {"id": f"r{k}", "role": "assistant", "content": f"Step {k} done; we keep Invoice.total."},
        {"id": f"u{k + 1}", "role": "user", "content": f"Part {k + 1}: check the discount rules."},
    ]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--turns", type=int, default=500)
    ap.add_argument("--tool-tokens", type=int, default=600)
    ap.add_argument("--context-length", type=int, default=12_000)
    ap.add_argument("--window", type=int, default=50, help="turns at each end whose plan times are compared")
    args = ap.parse_args()
    load_before = _loadavg()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "ws"
        shutil.copytree(FIXTURE, root, ignore=shutil.ignore_patterns(".ctx"))
        client = StdioClient(root, session="bench-long")
        try:
            client.request("ctx/pinSymbol", {"symbol": "shop.inventory.Product"})
            client.request("ctx/appendMessages", {"messages": [{"id": "u0", "role": "user", "content": TASK}]})
            per_turn, plan_ms, over_budget, missing_task = [], [], 0, 0
            plan_cpu: list[float] = []  # server CPU per plan request, ms (empty without schedstat)
            compacted: list[bool] = []  # whether the plan compacted first
            t_all = time.perf_counter()
            for k in range(args.turns):
                seen, cpu0 = _compactions(client), cpu_ns(client.proc.pid)
                t0 = time.perf_counter()
                plan = client.request("ctx/planContext", {"query": f"part {k}", "contextLength": args.context_length})
                plan_ms.append((time.perf_counter() - t0) * 1000)
                cpu1 = cpu_ns(client.proc.pid)
                if cpu0 is not None and cpu1 is not None:
                    plan_cpu.append((cpu1 - cpu0) / 1e6)
                compacted.append(_compactions(client) > seen)  # the notification comes before the reply
                over_budget += plan["totals"]["tokens"] > plan["promptBudget"]
                text = client.request("ctx/renderPrompt", {"planId": plan["planId"], "format": "text"})["text"]
                missing_task += TASK not in text
                client.request("ctx/appendMessages", {"messages": turn(k, args.tool_tokens)})
                client.request(
                    "ctx/reportUsage",
                    {"planId": plan["planId"], "inputTokens": plan["totals"]["tokens"], "outputTokens": 50},
                )
                per_turn.append((time.perf_counter() - t0) * 1000)
            total = time.perf_counter() - t_all
            listed = client.request("ctx/listMessages", {"includeArchived": True})["messages"]
            compactions = _compactions(client)
            lost = 1 + 4 * args.turns - len(listed)
            rss = client.peak_rss_mb()
        finally:
            client.close()
    per_turn.sort()
    window = max(1, min(args.window, len(plan_ms) // 2))
    early, late = statistics.median(plan_ms[:window]), statistics.median(plan_ms[-window:])
    print(
        f"{'turns':>6} {'total':>8} {'turn median':>12} {'turn p90':>9} {'compactions':>12} "
        f"{'over budget':>12} {'lost':>5} {'task missing':>13} {'peak RSS':>9}"
    )
    print(
        f"{args.turns:>6} {total:>7.1f}s {statistics.median(per_turn):>10.1f}ms "
        f"{per_turn[int(0.9 * (len(per_turn) - 1))]:>7.1f}ms {compactions:>12} {over_budget:>12} {lost:>5} "
        f"{missing_task:>13} {rss:>7.0f}MB"
    )
    print(
        f"\nplan request, median of turns 1–{window}: {early:.1f} ms; of turns {len(plan_ms) - window + 1}–"
        f"{len(plan_ms)}: {late:.1f} ms ({(late / early - 1) * 100:+.0f}%; target ± 10%); "
        f"p95 {_p95(plan_ms[:window]):.1f} / {_p95(plan_ms[-window:]):.1f} ms"
    )
    if plan_cpu:
        early, late = statistics.median(plan_cpu[:window]), statistics.median(plan_cpu[-window:])
        change = (late / early - 1) * 100
        print(f"server CPU per plan request, the same windows: {early:.1f} ms; {late:.1f} ms ({change:+.0f}%)")
    for name, times in (("wall", plan_ms), ("server CPU", plan_cpu)):
        if times:
            print(f"  {name}, plans that compacted / did not: " + "; ".join(
                _groups(times[span], compacted[span]) for span in (slice(0, window), slice(-window, None))
            ))  # fmt: skip
    print(f"cores: {os.cpu_count()}; load average before / after (1, 5, 15 min): {load_before} / {_loadavg()}")


def _p95(times: list[float]) -> float:
    return sorted(times)[int(0.95 * (len(times) - 1))]


def _compactions(client: StdioClient) -> int:
    return sum(1 for n in client.notifications if n["method"] == "ctx/compacted")


def _groups(times: list[float], compacted: list[bool]) -> str:
    """'n × median' of the plans that compacted, and of those that did not."""
    out = []
    for flag in (True, False):
        some = [t for t, c in zip(times, compacted, strict=True) if c == flag]
        out.append(f"{len(some)} × {statistics.median(some):.1f} ms" if some else "0")
    return " / ".join(out)


if __name__ == "__main__":
    main()
