"""How long the gateway takes to read a request of a long agent session, per API.

    python benchmarks/gateway_parse.py [WORKSPACE] [--turns 200] [--last 50] [--runs 5]

The sessions are ``gateway_cost.py``'s (Claude Code's shape on Anthropic Messages, Codex's on
OpenAI Responses; real file reads, greps and a test log from WORKSPACE, default a generated tree
of sympy's size), each request resending the whole history and appending. Each API's reader
(``Parsed`` from the body's top level, as the gateway's engine thread makes it) reads the
session's requests in order, as one conversation sends them; the last ``--last`` are timed.
Printed per shape: the size of the last body, and the median over ``--runs`` of the mean time
per request. A request's read was the largest share of an appending request's plan (py-spy, issue
35): each message decoded again, or hashed and looked up.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import gateway_cost
from index_speed import DATA, _loadavg, generate

from ctx_lsp.gateway import body as b
from ctx_lsp.gateway.apis.anthropic import Anthropic
from ctx_lsp.gateway.apis.responses import Responses

SHAPES = {"claude": (gateway_cost.claude_session, Anthropic), "codex": (gateway_cost.codex_session, Responses)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("workspace", nargs="?", type=Path)
    ap.add_argument("--turns", type=int, default=200)
    ap.add_argument("--last", type=int, default=50, help="requests timed, the session's last")
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args(argv)
    workspace = args.workspace or generate(DATA / "synthetic_1600x330", 1600, 330)
    files, greps, log = gateway_cost.corpus(workspace)
    print(f"gateway parse · {workspace} · {args.turns} turns · {os.cpu_count()} cores · load {_loadavg()}")
    print("| shape | API | last body | ms per request (median of runs) | runs |")
    print("|---|---|---|---|---|")
    for shape, (make, api_type) in SHAPES.items():
        bodies = [json.dumps(x).encode() for x in make(args.turns, files, greps, log)]
        timed = bodies[-args.last :]
        means = []
        for _ in range(args.runs):
            api = api_type()  # what a gateway keeps starts empty each run
            for raw in bodies[: -args.last]:
                api.parse(b.obj(raw))
            t0 = time.perf_counter()
            for raw in timed:
                api.parse(b.obj(raw))
            means.append((time.perf_counter() - t0) / len(timed) * 1000)
        size = f"{len(bodies[-1]) / 1e6:.1f} MB"
        print(f"| {shape} | {api_type.name} | {size} | {statistics.median(means):.2f} | {args.runs} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
