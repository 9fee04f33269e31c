"""`ctx/planContext` latency over LSP (stdio, the real server), warm, on a workspace.

    python benchmarks/lsp_plan_latency.py [WORKSPACE] [--runs N]

Default workspace: this repository. Prints a table of median / p90 / max round-trip time for a
few queries after a warm-up. Target (issue 3): ≤ 50 ms median when warm.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from lsp_client import StdioClient

QUERIES = [
    "how does the planner choose what goes into the prompt under the token budget?",
    "where are pins stored and how do TTLs expire?",
    "render the plan as anthropic messages",
]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("workspace", nargs="?", default=str(Path(__file__).parent.parent))
    ap.add_argument("--runs", type=int, default=30)
    args = ap.parse_args()
    root = Path(args.workspace)
    client = StdioClient(root, session="bench-latency")
    try:
        client.wait_for("$/progress")  # indexing started; the end arrives before the first plan below
        print(f"{'query':<60} {'median':>8} {'p90':>8} {'max':>8} {'items':>6}")
        for q in QUERIES:
            client.request("ctx/planContext", {"query": q})  # warm-up
            times = []
            plan = None
            for _ in range(args.runs):
                t0 = time.perf_counter()
                plan = client.request("ctx/planContext", {"query": q})
                times.append((time.perf_counter() - t0) * 1000)
            times.sort()
            p90 = times[int(0.9 * (len(times) - 1))]
            print(
                f"{q[:58]:<60} {statistics.median(times):>6.1f}ms {p90:>6.1f}ms {times[-1]:>6.1f}ms "
                f"{plan['totals']['items']:>6}"
            )
    finally:
        client.close()


if __name__ == "__main__":
    main()
