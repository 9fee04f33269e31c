"""Time from a save with a real code change to the `ctx/capsulesStale` notification.

    python benchmarks/capsule_staleness.py [--runs N]

Runs the real server over stdio on a copy of the fixture workspace. Each run edits a function
body in shop/billing/invoice.py, sends didSave, and waits for the notification; the capsule is
refreshed between runs. Target (issue 5): ≤ 200 ms median.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from lsp_client import StdioClient

FIXTURE = Path(__file__).parent.parent / "tests" / "fixtures" / "sample_ws"
REL = "shop/billing/invoice.py"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=30)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "ws"
        shutil.copytree(FIXTURE, root, ignore=shutil.ignore_patterns(".ctx"))
        path = root / REL
        original = path.read_text()
        client = StdioClient(root, session="bench-stale")
        try:
            client.request("ctx/refreshCapsules", {"paths": [REL]})
            times = []
            for k in range(args.runs):
                path.write_text(original.replace("return", f"return {k} or", 1))
                t0 = time.perf_counter()
                client.notify("textDocument/didSave", {"textDocument": {"uri": path.as_uri()}})
                client.next_notification("ctx/capsulesStale", timeout=5)
                times.append((time.perf_counter() - t0) * 1000)
                client.request("ctx/refreshCapsules", {"paths": [REL]})
            times.sort()
            print(f"{'runs':>5} {'median':>9} {'p90':>9} {'max':>9}")
            p90 = times[int(0.9 * (len(times) - 1))]
            print(f"{len(times):>5} {statistics.median(times):>7.1f}ms {p90:>7.1f}ms {times[-1]:>7.1f}ms")
        finally:
            client.close()


if __name__ == "__main__":
    main()
