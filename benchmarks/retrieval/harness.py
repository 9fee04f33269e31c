"""Retrieval quality: file recall and symbol recall at 2k / 8k / 32k rag budgets.

    .venv/bin/python benchmarks/retrieval/harness.py \\
        --workspace sympy-1.14.0=/tmp/sympy_src/sympy-1.14.0 \\
        --workspace requests-2.34.2=/tmp/requests_src/requests-2.34.2 \\
        benchmarks/retrieval/tasks/*.json

A task is ``{query, workspace, gold_files, gold_symbols, gold_ranges}`` (``tasks.py`` derives
them from real code). For each task and budget, each system fills a rag budget of that many
tokens; a gold file counts as found when anything from it is in the prompt, a gold symbol
when its card or body is (ctx_lsp), or a chunk holding its first line is
(the baseline); recall is the share of a task's gold found, averaged over tasks. Also
reported: the mean reciprocal rank of the gold symbol in each system's ranking before
packing (ctx_lsp: its candidates, one per symbol; the baseline: the first chunk holding the
symbol's first line; for several gold symbols, the first one found), which separates
systems when budgets are ample.
Systems:

- ``ctx_lsp light`` / ``ctx_lsp heavy``: ``Engine.plan`` with that mode and ``rag_budget``
  (cards for breadth, bodies of the best hits / mostly bodies), graph relevance on;
- ``ctx_lsp light, no graph`` (``--ablation``): the same without the graph signals;
- ``bm25 chunks``: plain BM25 over 40-line chunks, packed best-first (``baseline.py``).

Indexes go to ``benchmarks/.data/`` (the workspaces are not written to). Prints a Markdown
table per workspace and overall, with the machine's load average.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from baseline import ChunkIndex

from ctx_lsp.engine import BudgetOverrides, Engine, PlanRequest
from ctx_lsp.workspace import retrieval

# Generated trees and indexes; CTX_BENCH_DATA moves them out of the working tree (the tests do).
DATA = Path(os.environ.get("CTX_BENCH_DATA") or Path(__file__).resolve().parents[1] / ".data")
BUDGETS = (2000, 8000, 32000)


def _loadavg() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "n/a"


def _retrieved(outcome) -> tuple[set[str], set[str]]:
    """Files and symbols of the rag items a plan included."""
    files: set[str] = set()
    symbols: set[str] = set()
    for item in outcome.result.plan.included:
        if item.section != "rag":
            continue
        if item.path:
            files.add(item.path)
        if item.symbol:
            symbols.add(item.symbol)
    return files, symbols


class _NoGraph:
    """``retrieval.rank`` with the graph signals switched off (the ablation)."""

    def __init__(self) -> None:
        self.original = retrieval.rank

    def __enter__(self):
        original = self.original

        def rank(hits, query, **kw):
            kw.pop("graph", None)
            kw.pop("seeds", None)
            return original(hits, query, **kw)

        retrieval.rank = rank
        return self

    def __exit__(self, *exc) -> None:
        retrieval.rank = self.original


def run(
    tasks: list[dict],
    workspaces: dict[str, Path],
    budgets: tuple[int, ...] = BUDGETS,
    modes: tuple[str, ...] = ("light", "heavy"),
    ablation: bool = False,
    processes: int | None = None,
) -> dict:
    """Recall per (workspace, system, budget): ``{"hits": {...}, "n": {...}, "timing": {...}}``."""
    DATA.mkdir(parents=True, exist_ok=True)
    hits: dict[tuple[str, str, int], list[float]] = defaultdict(lambda: [0.0, 0.0])  # file, symbol recall sums
    reciprocal: dict[tuple[str, str], float] = defaultdict(float)  # Σ 1/rank of the gold symbol
    n: dict[str, int] = defaultdict(int)
    plan_ms: list[float] = []
    in_candidates = 0
    setup: dict[str, str] = {}
    for name in sorted({t["workspace"] for t in tasks}):
        root = workspaces[name].resolve()
        mine = [t for t in tasks if t["workspace"] == name]
        db = DATA / f"retrieval-{name}.sqlite3"
        t0 = time.perf_counter()
        engine = Engine(root, db_path=db)
        stats = engine.index.refresh(processes=processes)
        engine._scaffold_cache = None
        t1 = time.perf_counter()
        chunks = ChunkIndex(root)
        t2 = time.perf_counter()
        setup[name] = (
            f"index {t1 - t0:.1f} s ({stats.files_indexed} parsed), bm25 chunks {t2 - t1:.1f} s "
            f"({len(chunks.chunks)} chunks)"
        )
        systems = [f"ctx_lsp {m}" for m in modes] + (["ctx_lsp light, no graph"] if ablation else []) + ["bm25 chunks"]
        try:
            for task in mine:
                n[name] += 1
                gold_files = set(task["gold_files"])
                gold_symbols = set(task["gold_symbols"])
                gold_lines = [(rel, start) for rel, start, _ in task.get("gold_ranges", [])]
                for budget in budgets:
                    for system in systems:
                        if system == "bm25 chunks":
                            if budget == budgets[0]:
                                order = [chunks.chunks[i] for i, _ in chunks.search(task["query"])]
                                rank = next(
                                    (
                                        k
                                        for k, c in enumerate(order, 1)
                                        if any(c.path == rel and c.start <= line <= c.end for rel, line in gold_lines)
                                    ),
                                    None,
                                )
                                reciprocal[(name, system)] += 1 / rank if rank else 0.0
                            packed = chunks.pack(task["query"], budget)
                            files = {c.path for c in packed}
                            found_symbols = sum(
                                any(c.path == rel and c.start <= line <= c.end for c in packed)
                                for rel, line in gold_lines
                            ) / max(len(gold_lines), 1)
                        else:
                            mode = system.split()[1].rstrip(",")
                            req = PlanRequest(query=task["query"], mode=mode, budget=BudgetOverrides(rag_budget=budget))  # type: ignore[arg-type]
                            t = time.perf_counter()
                            if system.endswith("no graph"):
                                with _NoGraph():
                                    outcome = engine.plan(req)
                            else:
                                outcome = engine.plan(req)
                            plan_ms.append((time.perf_counter() - t) * 1000)
                            files, symbols = _retrieved(outcome)
                            found_symbols = len(gold_symbols & symbols) / len(gold_symbols)
                            if budget == budgets[0]:
                                ranked = sorted(outcome.inputs.candidates, key=lambda c: -(c.score or 0.0))
                                ranked = [c for c in ranked if c.kind == "symbol_card"]  # one per symbol
                                rank = next((i for i, c in enumerate(ranked, 1) if c.symbol in gold_symbols), None)
                                reciprocal[(name, system)] += 1 / rank if rank else 0.0
                                if system == "ctx_lsp light":
                                    in_candidates += rank is not None
                        row = hits[(name, system, budget)]
                        row[0] += len(gold_files & files) / len(gold_files)
                        row[1] += found_symbols
        finally:
            engine.close()
    return {
        "hits": dict(hits),
        "mrr": dict(reciprocal),
        "n": dict(n),
        "plan_ms": statistics.median(plan_ms) if plan_ms else 0.0,
        "in_candidates": in_candidates,
        "setup": setup,
    }


def table(result: dict, budgets: tuple[int, ...] = BUDGETS) -> str:
    hits, n = result["hits"], result["n"]
    systems = list(dict.fromkeys(s for _, s, _ in hits))
    names = sorted(n)
    mrr = result.get("mrr", {})
    head = "| workspace (tasks) | system | " + " | ".join(f"{b // 1000}k file / symbol" for b in budgets)
    head += " | symbol MRR |"
    lines = [head, "|" + "---|" * (3 + len(budgets))]
    groups = [(f"{w} ({n[w]})", [w]) for w in names]
    if len(names) > 1:
        groups.append((f"all ({sum(n.values())})", names))
    for label, members in groups:
        total = sum(n[w] for w in members)
        for system in systems:
            cells = []
            for b in budgets:
                f = sum(hits[(w, system, b)][0] for w in members)
                s = sum(hits[(w, system, b)][1] for w in members)
                cells.append(f"{f / total:.0%} / {s / total:.0%}")
            cells.append(f"{sum(mrr.get((w, system), 0.0) for w in members) / total:.2f}")
            lines.append(f"| {label} | {system} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("tasks", nargs="+", type=Path, help="task files (JSON lists)")
    parser.add_argument("--workspace", action="append", default=[], metavar="NAME=PATH")
    parser.add_argument("--budgets", default=",".join(map(str, BUDGETS)))
    parser.add_argument("--modes", default="light,heavy")
    parser.add_argument("--ablation", action="store_true", help="also run light mode without the graph")
    parser.add_argument("--processes", type=int, default=None, help="parsing processes for indexing")
    args = parser.parse_args(argv)
    workspaces = {}
    for spec in args.workspace:
        name, _, path = spec.partition("=")
        workspaces[name] = Path(path)
    tasks = [t for f in args.tasks for t in json.loads(f.read_text())]
    missing = sorted({t["workspace"] for t in tasks} - set(workspaces))
    if missing:
        parser.error(f"no --workspace NAME=PATH for: {', '.join(missing)}")
    budgets = tuple(int(b) for b in args.budgets.split(","))
    load_before = _loadavg()
    t0 = time.perf_counter()
    result = run(tasks, workspaces, budgets, tuple(args.modes.split(",")), args.ablation, args.processes)
    print(table(result, budgets))
    print()
    for name, text in result["setup"].items():
        print(f"- {name}: {text}")
    total = sum(result["n"].values())
    print(f"- gold symbol among ctx_lsp's light-mode candidates (any budget): {result['in_candidates']}/{total}")
    print(f"- ctx_lsp plan latency, median over all runs: {result['plan_ms']:.1f} ms")
    print(f"- wall time {time.perf_counter() - t0:.1f} s; load average before / after: {load_before} / {_loadavg()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
