"""Does a change to the index's storage change what it answers? Dump the answers of one index
to a JSON file, then compare two dumps.

    .venv/bin/python benchmarks/index_check.py dump WORKSPACE DB OUT.json
    .venv/bin/python benchmarks/index_check.py compare BEFORE.json AFTER.json

``dump`` builds the index of WORKSPACE into DB (cold, in one process, so the run is the same
whatever the load) and records, for a fixed set of queries and names: search hits (qualname,
path, line, score, matched fields) with and without a kind filter, every symbol the lookups
return (all fields, bodies and cards as hashes), graph neighbours, file neighbours, central
symbols, centrality, name resolution, the totals, and light- and heavy-mode plans through
``Engine.plan`` (plan id, item ids, tokens, reasons, scores). Run it with the old code's
interpreter and with the new one (each venv imports its own ``ctx_lsp``); ``compare`` prints
what differs and exits 1 if anything does. Only public APIs are used, so a dump made by an
older version of the code can be compared.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path
from typing import Any

SEARCHES = [
    "where is parse_token_total defined",
    "How does solveset handle trigonometric equations with periodic solutions?",
    "why does sympify fail on strings with unicode characters",
    "Matrix determinant bareiss",
    "simplify trigsimp fu",
    "Poly groebner basis buchberger",
    "latex printer for Integral with limits",
    "RegistryManager",
    "cache",
    "lambdify numpy module translation",
]
NAMES = [
    "sympy.core.basic.Basic",
    "sympy.core.expr.Expr.expand",
    "sympy.simplify.simplify.simplify",
    "sympy.solvers.solveset.solveset",
    "sympy.matrices.matrixbase.MatrixBase.det",
    "sympy.Symbol",
    "Integral",
    "sympify",
]
FILES = [
    "sympy/core/basic.py",
    "sympy/series/order.py",
    "sympy/polys/polytools.py",
    "sympy/printing/latex.py",
]


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def _symbol(sym: Any) -> dict[str, Any]:
    """Every field of a stored symbol; long texts as digests (a difference still shows)."""
    out: dict[str, Any] = {}
    for field in sym.__struct_fields__:
        if field in ("id", "identifiers"):
            continue  # row ids are an implementation detail; identifiers are search terms now
        value = getattr(sym, field)
        out[field] = _digest(value) if field in ("body", "card") else value
    return out


def dump(workspace: Path, db: Path, out: Path) -> None:
    from ctx_lsp.engine import Engine, PlanRequest
    from ctx_lsp.workspace.index import WorkspaceIndex

    for suffix in ("", "-wal", "-shm"):
        Path(str(db) + suffix).unlink(missing_ok=True)
    result: dict[str, Any] = {}
    with WorkspaceIndex(workspace, db_path=db) as idx:
        stats = idx.refresh(processes=0)
        result["refresh"] = {"files": stats.files_indexed, "symbols": stats.symbols, "edges": stats.edges}
        result["stats"] = {f: getattr(idx.stats(), f) for f in idx.stats().__struct_fields__}
        for kinds in (None, {"class", "function", "method"}):
            for q in SEARCHES:
                hits = idx.search(q, limit=400, kinds=kinds)
                key = f"search {q!r} kinds={sorted(kinds) if kinds else None}"
                result[key] = [
                    [h.symbol.qualname, h.symbol.path, h.symbol.start_line, h.score, h.matched] for h in hits
                ]
        hits = idx.search(SEARCHES[1], limit=60)
        result["search symbols"] = [_symbol(h.symbol) for h in hits]
        qualnames = [h.symbol.qualname for h in hits]
        result["get_many"] = {q: _symbol(s) for q, s in sorted(idx.get_many(qualnames + NAMES).items())}
        result["neighbours"] = idx.neighbours(qualnames[:20] + NAMES, per_seed=16)
        result["centrality"] = sorted(idx.node_stats(qualnames + NAMES).items())
        result["central"] = idx.central_symbols(50)
        for name in NAMES:
            sym = idx.resolve_name(name, from_rel=FILES[0])
            result[f"resolve {name}"] = _symbol(sym) if sym is not None else None
            result[f"lookup {name}"] = idx.lookup(name).problem()
        for rel in FILES:
            result[f"symbols_in {rel}"] = [_symbol(s) for s in idx.symbols_in(rel)]
            result[f"file_neighbours {rel}"] = idx.file_neighbours(rel, 24)
            result[f"symbol_at {rel}"] = [
                s.qualname if (s := idx.symbol_at(rel, line)) else None for line in range(0, 400, 7)
            ]
            result[f"imports_of {rel}"] = idx.imports_of(rel)
        result["importers_of"] = idx.importers_of("sympy.core.basic")
        result["module_symbol_counts"] = idx.module_symbol_counts()[:200]
    engine = Engine(workspace, db_path=db)
    try:
        for mode in ("light", "heavy"):
            for q in SEARCHES:
                plan = engine.plan(PlanRequest(query=q, mode=mode)).result.plan
                items = [[i.id, i.tokens, i.reason, i.score] for i in (*plan.included, *plan.excluded)]
                result[f"plan {mode} {q!r}"] = {"id": plan.plan_id, "items": items}
    finally:
        engine.close()
    out.write_text(json.dumps(result, indent=0, sort_keys=True, default=list))
    print(f"{len(result)} answers of {workspace} written to {out}")


def compare(before: Path, after: Path) -> int:
    a = json.loads(before.read_text())
    b = json.loads(after.read_text())
    differ = sorted(k for k in a.keys() | b.keys() if a.get(k) != b.get(k))
    for key in differ:
        print(f"DIFFERS: {key}")
        left, right = a.get(key), b.get(key)
        if isinstance(left, list) and isinstance(right, list):
            for i, (x, y) in enumerate(zip(left, right, strict=False)):
                if x != y:
                    print(f"  first difference at [{i}]:\n    before {x}\n    after  {y}")
                    break
            if len(left) != len(right):
                print(f"  lengths {len(left)} vs {len(right)}")
        else:
            print(f"    before {str(left)[:300]}\n    after  {str(right)[:300]}")
    print(f"{len(a.keys() & b.keys())} answers compared, {len(differ)} differ")
    return 1 if differ else 0


def main(argv: list[str]) -> int:
    if len(argv) == 4 and argv[0] == "dump":
        dump(Path(argv[1]).resolve(), Path(argv[2]), Path(argv[3]))
        return 0
    if len(argv) == 3 and argv[0] == "compare":
        return compare(Path(argv[1]), Path(argv[2]))
    print(__doc__)
    return 2


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
