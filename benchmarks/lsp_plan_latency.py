"""`ctx/planContext` latency over LSP (stdio, the real server), warm, for a session with pins
and history.

    python benchmarks/lsp_plan_latency.py [WORKSPACE] [--runs N] [--pins 3] [--turns 20]

Default workspace: this repository (its questions are about ctx_lsp; another workspace gets
general ones and a few of sympy's). A workspace without ``.ctx/`` measures a server that indexes
cold itself, as a new user's does (its resident memory then shows what indexing left behind;
issue 35: ≤ 250 MB peak on sympy after 300 plans, ``--runs 34``). The session is set up as an
editor's would be after a while: ``--pins`` symbols pinned (the best hits of the first question)
and ``--turns`` turns of conversation (a question and a longer answer each). Each timed request
is one round trip seen by the client: the request, the plan (the session read, retrieval,
packing, the plan kept for replay), the reply and the notifications sent before it. Prints
median and p95 per question and over all, with the core count and the load average (the machine
is shared), and the server's resident memory. Target (issue 18): ≤ 20 ms median on sympy.

Then ``--edits`` plans as an editor asks for them while the user types: the file of the best
hit of the question is open, and before each plan its buffer changes (a line added) and the
server re-indexes it (``didChange``; the plan is sent once its debounce and re-index are over,
``--settle`` seconds later), so each plan meets an index that changed since the last. Then it
waits ``--quiet`` seconds: the server's work once edits pause (the reference graph's update, in a
process of its own on a large index; search's postings built again when the edits wore them) is
in the peak memory it prints.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from index_speed import QUERIES as GENERAL_QUERIES
from index_speed import _loadavg
from lsp_client import StdioClient, cpu_seconds

from ctx_lsp.workspace.languages import language_of

REPO = Path(__file__).resolve().parent.parent
LANGUAGE_IDS = {"tsx": "typescriptreact"}  # LSP language ids that differ from ours
QUERIES = [
    "how does the planner choose what goes into the prompt under the token budget?",
    "where are pins stored and how do TTLs expire?",
    "render the plan as anthropic messages",
]
TARGET_MS = 20.0


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def history(turns: int, topic: str) -> list[dict[str, str]]:
    out = []
    for t in range(turns):
        out.append({"id": f"bench-u{t}", "role": "user", "content": f"Question {t}: {topic} What about case {t}?"})
        out.append(
            {
                "id": f"bench-a{t}",
                "role": "assistant",
                "content": f"Answer {t}: it depends on where {topic.lower()} is decided; " * 12,
            }
        )
    return out


def after_edits(client: StdioClient, root: Path, queries: list[str], edits: int, settle: float) -> list[float]:
    """Plan times, each after the best hit's file was edited in its buffer and re-indexed."""
    times = []
    opened: dict[str, tuple[str, int]] = {}  # uri → (text on disk, version)
    for i in range(edits):
        q = queries[i % len(queries)]
        plan = client.request("ctx/planContext", {"query": q})
        rel = next(item["path"] for item in plan["included"] if item["section"] == "rag" and item.get("path"))
        uri = (root / rel).as_uri()
        lang = language_of(rel) or "python"
        if uri not in opened:
            text = (root / rel).read_text(encoding="utf-8")
            opened[uri] = (text, 1)
            doc = {"uri": uri, "languageId": LANGUAGE_IDS.get(lang, lang), "version": 1, "text": text}
            client.notify("textDocument/didOpen", {"textDocument": doc})
        text, version = opened[uri]
        opened[uri] = (text, version + 1)
        mark = "#" if lang == "python" else "//"  # a line comment in the file's own language
        change = {"text": f"{text}\n{mark} edit {i}\n"}
        client.notify(
            "textDocument/didChange",
            {"textDocument": {"uri": uri, "version": version + 1}, "contentChanges": [change]},
        )
        time.sleep(settle)
        t0 = time.perf_counter()
        client.request("ctx/planContext", {"query": q})
        times.append((time.perf_counter() - t0) * 1000)
    for uri in opened:  # back to the text on disk
        client.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
    return times


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("workspace", nargs="?", default=str(REPO))
    ap.add_argument("--runs", type=int, default=30, help="timed plans per question")
    ap.add_argument("--pins", type=int, default=3, help="symbols pinned in the session first")
    ap.add_argument("--turns", type=int, default=20, help="turns of conversation in the session first")
    ap.add_argument("--edits", type=int, default=32, help="plans right after an edit was re-indexed")
    ap.add_argument("--settle", type=float, default=0.6, help="seconds from an edit to its plan")
    ap.add_argument(
        "--quiet", type=float, default=15.0, help="seconds to wait after the edits, for the work of a pause in them"
    )
    ap.add_argument("--query", action="append", help="a question to time (repeatable; default: the built-in ones)")
    args = ap.parse_args()
    root = Path(args.workspace).resolve()
    queries = args.query or (QUERIES if root == REPO else GENERAL_QUERIES)
    # a session of its own each run: the workspace's store keeps the sessions of earlier runs
    client = StdioClient(root, session=f"bench-latency-{os.getpid()}-{time.time_ns()}")
    try:
        client.wait_for("$/progress")  # indexing started
        while client.next_notification("$/progress", timeout=600)["params"]["value"]["kind"] != "end":
            pass  # the server's start-up work (indexing, search's postings) is over: plans are timed alone
        started_mb = client.rss_mb()
        first = client.request("ctx/planContext", {"query": queries[0]})
        picked = [i["symbol"] for i in first["included"] if i["section"] == "rag" and i.get("symbol")]
        for name in list(dict.fromkeys(picked))[: args.pins]:
            client.request("ctx/pinSymbol", {"symbol": name})
        if args.turns:
            client.request("ctx/appendMessages", {"messages": history(args.turns, queries[0])})
        load_before = _loadavg()
        print("| question | n | median | p95 | max | items | excluded |")
        print("|---|---|---|---|---|---|---|")
        every: list[float] = []
        cpu0 = cpu_seconds(client.proc.pid)
        for q in queries:
            client.request("ctx/planContext", {"query": q})  # warm-up
            times = []
            plan = None
            for _ in range(args.runs):
                t0 = time.perf_counter()
                plan = client.request("ctx/planContext", {"query": q})
                times.append((time.perf_counter() - t0) * 1000)
            every += times
            assert plan is not None
            print(
                f"| {q[:58]} | {len(times)} | {statistics.median(times):.1f} ms | {pct(times, 0.95):.1f} ms "
                f"| {max(times):.1f} ms | {plan['totals']['items']} | {plan['totals']['excluded']} |"
            )
        print(
            f"| all ({len(queries)} questions) | {len(every)} | {statistics.median(every):.1f} ms "
            f"| {pct(every, 0.95):.1f} ms | {max(every):.1f} ms | | |"
        )
        cpu = (cpu_seconds(client.proc.pid) - cpu0) * 1000 / (len(every) + len(queries))
        if args.edits:
            edited = after_edits(client, root, queries, args.edits, args.settle)
            print(
                f"| after an edit ({args.edits} plans, each after a re-index) | {len(edited)} "
                f"| {statistics.median(edited):.1f} ms | {pct(edited, 0.95):.1f} ms | {max(edited):.1f} ms | | |"
            )
            # what the server does once edits pause (the graph update; the postings built again
            # when the edits wore them) belongs in its peak: wait for it
            time.sleep(args.quiet)
        pins = len(client.request("ctx/listPins", {}))
        print(
            f"\nserver CPU per plan (all its threads, the meter after each plan included): {cpu:.1f} ms\n"
            f"server resident memory: {started_mb:.0f} MB once started (indexed, search's postings built), "
            f"{client.rss_mb():.0f} MB after the plans; peak {client.peak_rss_mb():.0f} MB\n"
            f"session: {pins} pins, {args.turns} turns before the timed plans; target ≤ {TARGET_MS:.0f} ms median; "
            f"cores: {os.cpu_count()}; load average before / after (1, 5, 15 min): {load_before} / {_loadavg()}"
        )
    finally:
        client.close()


if __name__ == "__main__":
    main()
