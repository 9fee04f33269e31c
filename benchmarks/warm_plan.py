"""Warm plans in the engine (``Engine.plan``, no session): what retrieval and packing cost once
the index is built.

    .venv/bin/python benchmarks/warm_plan.py [WORKSPACE] [--runs 40] [--modes light,heavy]

WORKSPACE: a source tree (default: a generated tree of sympy's size under benchmarks/.data, or
CTX_BENCH_DATA). It is indexed once into a database under the same folder (the tree is only
read), or into ``--db``. Two kinds of plans per mode, each timed from the request to the plan:

- re-plans: a fixed set of questions asked again and again (the editor re-plans the session's
  latest question after a pin, a message, a mode change; the gateway plans every request of an
  agent loop on the same question);
- first sight: questions never asked before in this process (the first docstring line of
  symbols spread over the tree), each asked once;
- after a save: a re-plan right after the file of the question's best candidate was saved
  (re-indexed from its text with a line added, as a face's indexer thread does, search's
  postings following at once; the file itself is not written, and its text is indexed again as
  it was afterwards): the reads the index kept were emptied by the save. The re-index itself is
  timed too (it runs beside the requests, not before the reply). After each, untimed, what a
  face runs when edits pause (the graph update, the postings built again when worn).

Prints median and p95 of each, the split (retrieval, packing) and the floor: the pure planner
over the same inputs (no retrieval, nothing read), with the core count and the load average
(the machine is shared: compare runs made back to back); then where the retrieval of a
first-sight plan and of a plan after a save goes (the engine's own timings): search (FTS5 or
the postings, and the hits' heads and fields), rank, items (the offered symbols read and made
into cards and bodies); and the process's resident memory after all of them. Target (issue 18):
a warm plan of sympy ≤ 15 ms.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).parent))

from index_speed import DATA, QUERIES, _loadavg, generate  # noqa: E402

from ctx_lsp.core.planner import plan  # noqa: E402
from ctx_lsp.engine import Engine, PlanRequest  # noqa: E402

TARGET_MS = 15.0


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def fresh_questions(engine: Engine, count: int) -> list[str]:
    """``count`` questions nobody asked yet: the first line of the docstrings of functions and
    classes spread evenly over the tree (test files aside), in index order."""
    symbols = [
        s
        for s in engine.index.iter_symbols(("class", "function", "method"))
        if len(s.docstring.split()) >= 4 and "test" not in s.path
    ]
    step = max(1, len(symbols) // count)
    out = []
    for s in symbols[::step][:count]:
        out.append(" ".join(s.docstring.strip().splitlines()[0].split()[:16]))
    return out


STAGES = ("search", "rank", "items")


def _rss_mb() -> float:
    """This process's resident memory now (Linux; 0 elsewhere)."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
    except OSError:
        return 0.0


def timed(engine: Engine, query: str, mode: str) -> tuple[float, ...]:
    """(total, retrieval, packing, the pure planner again on the same inputs, then each of
    ``STAGES``) in ms."""
    t0 = time.perf_counter()
    out = engine.plan(PlanRequest(query=query, mode=mode))  # type: ignore[arg-type]
    total = (time.perf_counter() - t0) * 1000
    t1 = time.perf_counter()
    plan(out.inputs)
    floor = (time.perf_counter() - t1) * 1000
    t = out.timings_ms
    return total, t.get("retrieval", 0.0), t.get("plan", 0.0), floor, *(t.get(s, 0.0) for s in STAGES)


def after_saves(
    engine: Engine, root: Path, questions: list[str], mode: str
) -> tuple[list[tuple[float, ...]], list[float]]:
    """``timed`` re-plans of ``questions``, each right after the file of its best candidate was
    saved with a line added, and the time each save's re-index took (ms); the file's text is
    indexed again as it was after each."""
    rows, saves = [], []
    for q in questions:
        first = engine.plan(PlanRequest(query=q, mode=mode))  # type: ignore[arg-type]
        rel = next(c.path for c in first.inputs.candidates if c.path)
        original = (root / rel).read_bytes()
        t0 = time.perf_counter()
        engine.index.update_file(rel, original + b"\n# saved\n")
        saves.append((time.perf_counter() - t0) * 1000)
        try:
            rows.append(timed(engine, q, mode))
        finally:
            engine.index.update_file(rel, original)
        # the pause after it: what a face's watch loop runs when edits pause (the graph, and
        # search's postings built again once saves wore them or changed too much to follow)
        engine.index.update_graph()
    return rows, saves


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("workspace", nargs="?", type=Path)
    ap.add_argument("--runs", type=int, default=40, help="plans per kind and mode (≥ 30 for a p95)")
    ap.add_argument("--modes", default="light,heavy")
    ap.add_argument("--db", type=Path, help="the index database (default: one under benchmarks/.data)")
    args = ap.parse_args()
    root = generate(DATA / "synthetic_1600x500", 1600, 500) if args.workspace is None else args.workspace.resolve()
    DATA.mkdir(parents=True, exist_ok=True)
    db = args.db or DATA / f"warm-{hashlib.sha1(str(root).encode()).hexdigest()[:10]}.sqlite3"
    engine = Engine(root, db_path=db)
    try:
        t0 = time.perf_counter()
        stats = engine.refresh_index()
        print(
            f"index: {root} ({stats.files_indexed} parsed, {stats.files_unchanged} unchanged, "
            f"{engine.index.stats().symbols:,} symbols) in {time.perf_counter() - t0:.1f} s"
        )
        t0, rss0 = time.perf_counter(), _rss_mb()
        engine.prepare_search()  # as the server does after its start-up refresh
        print(
            f"search postings in memory in {time.perf_counter() - t0:.2f} s, "
            f"resident memory {rss0:.0f} → {_rss_mb():.0f} MB"
        )
        fresh = fresh_questions(engine, args.runs * 2)
        load_before = _loadavg()
        split: list[str] = []
        notes: list[str] = []
        print(
            "\n| mode | plans | n | median | p95 | retrieval (median) | packing (median) | floor: planner alone "
            "(median) | target |"
        )
        print("|---|---|---|---|---|---|---|---|---|")
        for mode in [m.strip() for m in args.modes.split(",") if m.strip()]:
            for q in QUERIES:  # warm-up: the connection, the tokenizer, the page cache
                engine.plan(PlanRequest(query=q, mode=mode))  # type: ignore[arg-type]
            again = [QUERIES[i % len(QUERIES)] for i in range(args.runs)]
            kinds = {
                "re-plans": again,
                "first sight": fresh[: args.runs] if mode == "light" else fresh[args.runs : 2 * args.runs],
                "after a save": again,
            }
            for kind, questions in kinds.items():
                if not questions:  # a small tree has few docstrings to ask about
                    continue
                if kind == "after a save":
                    rows, saves = after_saves(engine, root, questions, mode)
                    notes.append(
                        f"{mode}: each save's re-index (postings followed) took {statistics.median(saves):.1f} ms "
                        f"median, p95 {pct(saves, 0.95):.1f} ms"
                    )
                else:
                    rows = [timed(engine, q, mode) for q in questions]
                total, retrieval, packing, floor, *stages = (list(col) for col in zip(*rows, strict=True))
                if kind != "re-plans":
                    split.append(
                        f"| {mode} | {kind} | "
                        + " | ".join(f"{statistics.median(v):.1f} ms / {pct(v, 0.95):.1f} ms" for v in stages)
                        + " |"
                    )
                print(
                    f"| {mode} | {kind} | {len(rows)} | {statistics.median(total):.1f} ms | {pct(total, 0.95):.1f} ms "
                    f"| {statistics.median(retrieval):.1f} ms | {statistics.median(packing):.1f} ms "
                    f"| {statistics.median(floor):.1f} ms | ≤ {TARGET_MS:.0f} ms |"
                )
        if split:
            print("\nWhere retrieval goes (median / p95):\n")
            print("| mode | plans | " + " | ".join(STAGES) + " |")
            print("|---|---|" + "---|" * len(STAGES))
            print("\n".join(split))
        if notes:
            print("\n" + "\n".join(notes))
        # what plans keep (items, rows, searches) is capped: this stays put however long a face runs
        print(f"resident memory after the plans above: {_rss_mb():.0f} MB")
        print(f"\ncores: {os.cpu_count()}; load average before / after (1, 5, 15 min): {load_before} / {_loadavg()}")
    finally:
        engine.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
