"""C and C++ questions in a header's words: does the plan carry the code the header documents?

    .venv/bin/python benchmarks/retrieval/header_docs.py --make [TREE] [--n 200]   # the cases, once
    .venv/bin/python benchmarks/retrieval/header_docs.py [TREE] [--budgets 2000 8000] [--db PATH]

A C++ library documents a function above its declaration in the header (JUCE, Qt, LLVM); the
definition in the .cpp seldom says it again. Each case is one such function of a real tree
(default: JUCE, ``benchmarks/polyglot_trees.py cpp``): the question is the first sentence of its
header doc (five words or more, as the library's authors wrote it), the gold is its definition in
a source file. ``--make`` picks ``--n`` of them spread evenly over the tree, from the documented
declarations the index keeps (marked ``declaration``) whose code is in a source file
(``WorkspaceIndex.code_of``: for an overloaded name, the definition with its parameters'
types), and writes them to ``--cases`` — made once, so that code from before the declarations
were kept is measured on the same cases.

Prints, per RAG budget (light mode, ``Engine.plan`` on an index under ``benchmarks/.data``): the
share of cases whose definition's body is in the plan, whose qualified name is in it in any
form, and the median rank of that name among the symbols offered (cases it is not offered in
count as unranked), with the load average.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from ctx_lsp.engine import BudgetOverrides, Engine, PlanRequest  # noqa: E402

DATA = Path(os.environ.get("CTX_BENCH_DATA") or ROOT / "benchmarks" / ".data")
HEADERS = (".h", ".hh", ".hpp", ".hxx", ".h++", ".inl")
MIN_WORDS = 5


def first_sentence(doc: str) -> str:
    text = " ".join(doc.split())
    cut = text.find(". ")
    return text[: cut + 1] if cut > 0 else text


def make(engine: Engine, n: int) -> list[dict]:
    index = engine.index
    cases = []
    for sym in index.iter_symbols(("function", "method")):
        if "declaration" not in getattr(sym, "decorators", ()) or not sym.path.endswith(HEADERS):
            continue
        query = first_sentence(sym.docstring)
        if len(query.split()) < MIN_WORDS:
            continue
        code = index.code_of(sym)  # an overloaded name's: the definition with its parameters' types
        if code is None or code.path.endswith(HEADERS):
            continue
        cases.append(
            {
                "query": query,
                "qualname": sym.qualname,
                "header": f"{sym.path}:{sym.start_line + 1}",
                "code_path": code.path,
                "code_qualname": code.qualname,
                "code_line": code.start_line,
            }
        )
    step = max(1, len(cases) // n)
    print(f"{len(cases)} documented declarations with their code in a source file; {len(cases[::step][:n])} taken")
    return cases[::step][:n]


def evaluate(engine: Engine, cases: list[dict], budgets: list[int]) -> None:
    print(f"\n{len(cases)} cases · light mode · load average {os.getloadavg()[0]:.2f}")
    print("| RAG budget | the definition's body in the plan | the name in any form | median rank offered |")
    print("|---|---|---|---|")
    for budget in budgets:
        body = named = 0
        ranks = []
        t0 = time.perf_counter()
        for case in cases:
            req = PlanRequest(query=case["query"], mode="light", budget=BudgetOverrides(rag_budget=budget))
            out = engine.plan(req)
            rag = [i for i in out.result.plan.included if i.section == "rag"]
            body += any(
                i.kind == "symbol_body"
                and i.path == case["code_path"]
                and i.range is not None
                and i.range.start.line <= case["code_line"] <= i.range.end.line
                for i in rag
            )
            named += any(i.symbol in (case["qualname"], case.get("code_qualname")) for i in rag)
            offered = list(dict.fromkeys(c.symbol for c in out.inputs.candidates if c.section == "rag" and c.symbol))
            ranks.append(offered.index(case["qualname"]) + 1 if case["qualname"] in offered else 10**6)
        rank = statistics.median(ranks)
        shown = "not offered" if rank >= 10**6 else f"{rank:g}"
        print(
            f"| {budget:,} | {body / len(cases):.3f} | {named / len(cases):.3f} | {shown} |"
            f"  ({(time.perf_counter() - t0) / len(cases) * 1000:.0f} ms a plan)"
        )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("tree", nargs="?", type=Path, default=DATA / "cpp-tree")
    ap.add_argument("--make", action="store_true", help="pick the cases and write them to --cases")
    ap.add_argument("--n", type=int, default=200)
    ap.add_argument("--cases", type=Path, default=DATA / "header-docs.json")
    ap.add_argument("--budgets", type=int, nargs="+", default=[2000, 8000])
    ap.add_argument("--db", type=Path, help="the index database (default: one under benchmarks/.data)")
    args = ap.parse_args()
    tree = args.tree.resolve()
    if not tree.is_dir():
        print(f"no tree at {tree}: make it with benchmarks/polyglot_trees.py cpp", file=sys.stderr)
        return 2
    engine = Engine(tree, db_path=args.db or DATA / f"header-docs-{tree.name}.sqlite3")
    try:
        engine.refresh_index()
        engine.index.update_graph()
        engine.prepare_search()
        if args.make:
            cases = make(engine, args.n)
            args.cases.write_text(json.dumps(cases, indent=1))
            print(f"written to {args.cases}")
            return 0
        evaluate(engine, json.loads(args.cases.read_text()), args.budgets)
    finally:
        engine.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
