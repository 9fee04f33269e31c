"""Retrieval on real tasks, in-process: file recall, symbol recall, tokens used, test and vendored
items, overlapping items and warm time per request, at 2k / 8k / 32k RAG tokens.

    .venv/bin/python benchmarks/retrieval/real.py --dev ../shared/retrieval-dev [--modes light heavy]
        [--set benchmarks/retrieval/bugs/tasks.jsonl] [--baseline] [--cli] [--repos R ...] [--out rows.jsonl]

Two task sets, scored the same way (the metrics are the dev set's own: its ``run.py`` is
imported from ``--dev`` and scores every row):

- ``--dev DIR``: the dev set (real commits of five public projects; DIR/README.md);
- ``--set FILE``: more tasks in the same shape (id, repo, tag of a dev-set tree, query,
  gold_files, gold_symbols), e.g. the bug reports with tracebacks of ``bugs/tasks.jsonl``
  (``bugs/make.py`` builds them).

Each mode plans with ``Engine.plan`` on an index kept under ``benchmarks/.data/real/`` (the
trees are not written); time is the median of warm plans (the index open, one plan before).
``--cli`` also times one ``ctx-lsp plan`` per task and budget (index load included).
``--baseline`` adds the dev set's reference retriever (BM25 over functions and classes).
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from ctx_lsp.engine import BudgetOverrides, Engine, PlanRequest

DATA = Path(os.environ.get("CTX_BENCH_DATA") or Path(__file__).resolve().parents[1] / ".data") / "real"
BUDGETS = (2000, 8000, 32000)


def load_runner(dev: Path):
    """The dev set's ``run.py`` (scoring, the reference retriever, tree extraction)."""
    spec = importlib.util.spec_from_file_location("retrieval_dev_run", dev / "run.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def plan_items(outcome) -> list[dict]:
    """The included rag items as the dev set's runner reads them from ``ctx-lsp plan --format json``."""
    items = []
    for it in outcome.result.plan.included:
        if it.section != "rag" or not it.path:
            continue
        r = it.range
        if r is not None:
            start = r.start.line + 1
            end = r.end.line + (0 if r.end.character == 0 and r.end.line > r.start.line else 1)
        else:
            start = end = 1
        items.append(dict(path=os.path.normpath(it.path), start=start, end=end, tokens=it.tokens, kind=it.kind))
    return items


def cli_items(ctx: str, tree: Path, query: str, budget: int, mode: str) -> list[dict]:
    qf = DATA / "queries" / (hashlib.sha256(query.encode()).hexdigest()[:16] + ".txt")
    qf.parent.mkdir(parents=True, exist_ok=True)
    qf.write_text(query)
    cmd = [ctx, "plan", str(tree), "--query-file", str(qf), "--rag-budget", str(budget), "--format", "json"]
    cmd += ["--mode", mode]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=900, check=True)
    return [i for i in json.loads(res.stdout).get("included", []) if i.get("section") == "rag"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dev", type=Path, required=True, help="the dev set's folder (its run.py scores every set)")
    ap.add_argument("--set", type=Path, help="a task file whose tasks name a tree folder instead of a bundle tag")
    ap.add_argument("--no-dev-tasks", action="store_true", help="score only --set's tasks")
    ap.add_argument("--modes", nargs="+", default=["light", "heavy"])
    ap.add_argument("--budgets", type=int, nargs="+", default=list(BUDGETS))
    ap.add_argument("--repos", nargs="+")
    ap.add_argument("--tasks", nargs="+")
    ap.add_argument("--baseline", action="store_true")
    ap.add_argument("--cli", help="also time the CLI: path of the ctx-lsp executable")
    ap.add_argument("--warm", type=int, default=3, help="warm plans timed per task, mode and budget")
    ap.add_argument("--out", help="one JSON line per task, retriever and budget")
    ap.add_argument("--cache", type=Path, help="where trees are extracted (default: the dev set runner's)")
    args = ap.parse_args()
    run = load_runner(args.dev)
    cache = args.cache or Path(tempfile.gettempdir()) / "ctx-retrieval-dev"

    files = ([] if args.no_dev_tasks else [args.dev / "tasks.jsonl"]) + ([args.set] if args.set else [])
    tasks = [json.loads(line) for f in files for line in f.read_text().splitlines() if line.strip()]
    if args.repos:
        tasks = [t for t in tasks if t["repo"] in args.repos]
    if args.tasks:
        tasks = [t for t in tasks if t["id"] in args.tasks or t["tag"] in args.tasks]

    rows = list(evaluate(args, run, tasks, cache))
    if args.out:
        with open(args.out, "w") as out:
            out.writelines(json.dumps(row) + "\n" for row in rows)
    run.summarize(rows, args.budgets)
    if args.cli:
        cli = [r["cli_ms"] for r in rows if "cli_ms" in r]
        print(
            f"\nCLI: median {statistics.median(cli):.0f} ms per `ctx-lsp plan` ({len(cli)} calls, index load included)"
        )


def evaluate(args: argparse.Namespace, run, tasks: list[dict], cache: Path):
    """One row per task, retriever and budget."""
    for n, task in enumerate(tasks, 1):
        tree = run.tree_for(task, cache)
        key = hashlib.sha256(str(tree).encode()).hexdigest()[:16]
        runs: list[tuple[str, str | None]] = [(f"ctx-lsp {mode}", mode) for mode in args.modes]
        if args.baseline:
            runs.append(("bm25 (reference)", None))
        engine = Engine(tree, db_path=DATA / "index" / f"{key}.sqlite3")
        engine.refresh_index()
        try:
            for retriever, mode in runs:
                for b in args.budgets:
                    if mode is None:
                        t0 = time.perf_counter()
                        items = run.baseline_items(tree, task["query"], b)
                        ms = (time.perf_counter() - t0) * 1000
                    else:
                        items, ms = plan_and_time(engine, task["query"], mode, b, args.warm)
                    row = dict(task=task["id"], repo=task["repo"], retriever=retriever, ms=ms)
                    row.update(run.score(task, tree, items, b))
                    if mode is not None and args.cli:
                        t0 = time.perf_counter()
                        cli_items(args.cli, tree, task["query"], b, mode)
                        row["cli_ms"] = (time.perf_counter() - t0) * 1000
                    yield row
        finally:
            engine.close()
        print(f"[{n}/{len(tasks)}] {task['id']}", file=sys.stderr)


def plan_and_time(engine: Engine, query: str, mode: str, budget: int, warm: int) -> tuple[list[dict], float]:
    """The plan's rag items, and the median ms of ``warm`` more plans of the same request."""
    req = PlanRequest(query=query, mode=mode, budget=BudgetOverrides(rag_budget=budget))
    outcome = engine.plan(req)
    times = []
    for _ in range(warm):
        t0 = time.perf_counter()
        engine.plan(req)
        times.append((time.perf_counter() - t0) * 1000)
    return plan_items(outcome), statistics.median(times) if times else 0.0


if __name__ == "__main__":
    main()
