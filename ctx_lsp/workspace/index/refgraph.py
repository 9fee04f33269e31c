"""The reference graph: which definitions name which (``edges``, resolved to indexed symbols
in ``targets``), their centrality (PageRank, in ``centrality``), and neighbours.

Edges are written with their file (``build.write``); ``resolve_local`` re-resolves what one
file's change affects at once, and ``update_graph`` resolves everything and ranks, once edits
pause or after a refresh.
"""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Iterable

from ctx_lsp.workspace import graph
from ctx_lsp.workspace.index import memo
from ctx_lsp.workspace.index import names as index_names
from ctx_lsp.workspace.index.db import SET_META, TEST_CASE_JSON, IndexDb, select_in, write_transaction
from ctx_lsp.workspace.languages.gomod import GoModules, go_folders
from ctx_lsp.workspace.languages.specifiers import ImportMap, script_folders


def resolve_local(db: IndexDb, rel: str, old: set[str], new: set[str]) -> None:
    """After one file changed: resolve its new references, and re-resolve references
    elsewhere that pointed at its vanished symbols or may now point at its new ones — so
    neighbours are right at once. Centrality waits for ``update_graph`` (it is global)."""
    with db.lock:
        conn = db.conn
        module = index_names.module_of(db, rel)
        affected = {
            r[0]
            for r in conn.execute(
                "SELECT DISTINCT t.name FROM symbols s JOIN edges e ON e.src = s.id "
                "JOIN targets t ON t.id = e.target WHERE s.path = ? AND t.resolved = 0",
                (rel,),
            )
        }
        resolved = "SELECT name FROM targets WHERE resolved = 1 AND {}"
        affected.update(r[0] for r in select_in(conn, resolved.format("dst IN ({})"), old - new))
        affected.update(r[0] for r in select_in(conn, resolved.format("name IN ({})"), new - old))
        if module:  # unresolved names inside this module (``mod.new_function``)
            affected.update(
                r[0]
                for r in conn.execute(
                    "SELECT name FROM targets WHERE resolved = 1 AND dst IS NULL AND name > ? AND name < ?",
                    (module + ".", module + "/"),
                )
            )
        if not affected:
            return
        resolver = index_names.sql_resolver(conn, str(db.root))
        rows = [(resolver.resolve(target), target) for target in sorted(affected)]
        with write_transaction(conn):
            conn.executemany("UPDATE targets SET resolved = 1, dst = ? WHERE name = ?", rows)


def update_graph(db: IndexDb) -> float:
    """Resolve every reference and recompute centrality; returns the seconds it took (see
    ``WorkspaceIndex.update_graph``)."""
    t0 = time.perf_counter()
    conn = db.reader()
    conn.execute("BEGIN")  # one consistent snapshot for all the reads below
    try:
        dirty = conn.execute("SELECT value FROM index_meta WHERE key = 'graph_dirty'").fetchone()
        kinds: dict[str, str] = {}
        module_paths: dict[str, str] = {}
        by_name: dict[str, list[tuple[str, str]]] = {}
        for qualname, name, kind, path, marks in conn.execute(
            "SELECT qualname, name, kind, path, decorators FROM symbols"
        ):
            if kinds.get(qualname) in (None, "module"):
                kinds[qualname] = kind
            if kind == "module":
                module_paths[qualname] = path
            elif TEST_CASE_JSON not in marks:  # nothing calls a test case by name
                by_name.setdefault(name, []).append((qualname, path))
        imports: dict[str, dict[str, str]] = {}
        stars: dict[str, list[str]] = {}
        for path, local, target in conn.execute("SELECT path, local_name, target FROM imports ORDER BY rowid"):
            if local == "*":
                stars.setdefault(path, []).append(target)
            else:
                imports.setdefault(path, {})[local] = target
        stored = {
            i: (name, dst if done else "")
            for i, name, done, dst in conn.execute("SELECT id, name, resolved, dst FROM targets")
        }
        folders = script_folders(module_paths.values())
        specifiers = ImportMap(str(db.root), lambda: folders)
        go_in = go_folders(module_paths.values())
        go = GoModules(str(db.root), lambda: go_in)
        resolver = graph.Resolver(kinds, module_paths, imports, stars, by_name, specifiers, go)
        resolved: dict[int, str | None] = {}  # target id → the symbol it names
        index_of: dict[str, int] = {}
        names: list[str] = []
        weights: dict[int, float] = {}  # (src << 32 | dst) → weight: int keys, not tuples
        # In the order of (file, source, target name): ranks are sums of floats, and this order
        # does not depend on the row ids an index's history gave them.
        edges = conn.execute(
            "SELECT s.qualname, e.target, e.weight FROM edges e JOIN symbols s ON s.id = e.src "
            "JOIN targets t ON t.id = e.target ORDER BY s.path, s.qualname, t.name"
        )
        for src, target, count in edges:
            dst = resolved.get(target, "")
            if dst == "":
                dst = resolved[target] = resolver.resolve(stored[target][0])
            if dst is None or dst == src:
                continue
            i = index_of.get(src)
            if i is None:
                i = index_of[src] = len(names)
                names.append(src)
            j = index_of.get(dst)
            if j is None:
                j = index_of[dst] = len(names)
                names.append(dst)
            key = i << 32 | j
            weights[key] = weights.get(key, 0.0) + graph.edge_weight(count)
        previous = dict(conn.execute("SELECT qualname, rank FROM centrality").fetchall())
    finally:
        conn.execute("COMMIT")
    del kinds, module_paths, imports, stars, by_name, resolver, specifiers, go
    start = [previous.get(q, 0.0) for q in names] if previous else None
    mask = (1 << 32) - 1
    ranks, _ = graph.pagerank(len(names), ((k >> 32, k & mask, w) for k, w in weights.items()), start=start)
    rank_of = dict(zip(names, ranks, strict=True))
    pct = graph.percentiles(rank_of)
    degree = [0] * len(names)
    for key in weights:
        degree[key >> 32] += 1
        degree[key & mask] += 1
    # "" never names a symbol: a target not resolved yet always differs
    changed_targets = [(d, t, stored[t][0]) for t, d in resolved.items() if stored[t][1] != d]
    unused = [(t, t) for t in stored if t not in resolved]
    with db.lock, write_transaction(db.conn) as conn:
        # Writes since the snapshot win: a name used again stays; an id given to another name
        # since (another process dropped this one) is left to the next update.
        conn.executemany(
            "DELETE FROM targets WHERE id = ? AND NOT EXISTS (SELECT 1 FROM edges WHERE target = ?)", unused
        )
        conn.executemany("UPDATE targets SET resolved = 1, dst = ? WHERE id = ? AND name = ?", changed_targets)
        conn.execute("DELETE FROM centrality")
        conn.executemany(
            "INSERT INTO centrality(qualname, rank, pct, degree) VALUES (?, ?, ?, ?)",
            [(q, rank_of[q], pct[q], degree[i]) for i, q in enumerate(names)],
        )
        conn.execute(SET_META, ("edges", str(len(weights))))
        version = os.urandom(8).hex()  # which centrality table this is (``node_stats``)
        conn.execute(SET_META, ("centrality_version", version))
        if dirty is not None:  # clean, unless a write since the snapshot marked it again
            conn.execute("UPDATE index_meta SET value = '0' WHERE key = 'graph_dirty' AND value = ?", dirty)
    if db.keep_tables:
        db.graph_stats = (version, {q: (pct[q], degree[i]) for i, q in enumerate(names)})
    return time.perf_counter() - t0


CENTRAL_WINDOW = 100  # ranked names read at a time by ``central_symbols``


def central_symbols(db: IndexDb, n: int, kinds: Iterable[str]) -> list[str]:
    """The ``n`` most central definitions of ``kinds`` (see ``WorkspaceIndex.central_symbols``)."""
    wanted = set(kinds)
    conn = db.reader()
    # The best ranks first, a window at a time, then which of them are of ``kinds``: one query
    # checking every ranked name against the symbols took 35–110 ms on sympy, on the request
    # path of the plan after each save (the scaffold names them).
    window = max(CENTRAL_WINDOW, int(n))
    best = "SELECT qualname FROM centrality ORDER BY rank DESC, qualname LIMIT ?"
    sql = "SELECT qualname, kind FROM symbols WHERE qualname IN ({})"
    while True:
        ranked = [r[0] for r in conn.execute(best, (window,))]
        of_kind = {q for q, kind in select_in(conn, sql, ranked) if kind in wanted}
        found = [q for q in ranked if q in of_kind][: int(n)]
        if len(found) >= n or len(ranked) < window:
            break
        window *= 4
    if found:
        return found
    rows = conn.execute(  # before the graph exists: the names imported by the most files
        "SELECT i.target, count(DISTINCT i.path) AS refs FROM imports i "
        "WHERE i.target IN (SELECT qualname FROM symbols WHERE kind != 'module') "
        "GROUP BY i.target ORDER BY refs DESC, i.target LIMIT ?",
        (int(n),),
    ).fetchall()
    return [r[0] for r in rows]


def node_stats(db: IndexDb, qualnames: Iterable[str]) -> dict[str, tuple[float, int]]:
    """``(centrality percentile, degree)`` of each given symbol in the graph."""
    wanted = set(qualnames)
    every = _all_stats(db) if db.keep_tables else None
    if every is not None:
        return {q: stats for q in wanted if (stats := every.get(q)) is not None}
    known = memo.table(db, "node_stats")  # qualname → stats, or None: not in the graph
    missing = wanted - known.keys()
    if missing:
        sql = "SELECT qualname, pct, degree FROM centrality WHERE qualname IN ({})"
        for q, pct, degree in select_in(db.reader(), sql, missing):
            known[q] = (pct, degree)
        for q in missing:
            known.setdefault(q, None)
    return {q: stats for q in wanted if (stats := known[q]) is not None}


def _all_stats(db: IndexDb) -> dict[str, tuple[float, int]] | None:
    """Every symbol's node stats, for a process that keeps tables in memory: a plan asks for
    hundreds, most of them new to a new question. Kept until the next graph update (which
    hands them over when it runs in this process); None before the first one."""
    conn = db.reader()
    conn.execute("BEGIN")  # the version and the table read agree
    try:
        row = conn.execute("SELECT value FROM index_meta WHERE key = 'centrality_version'").fetchone()
        if row is None:
            return None
        held = db.graph_stats
        if held is None or held[0] != row[0]:
            rows = conn.execute("SELECT qualname, pct, degree FROM centrality")
            held = db.graph_stats = (row[0], {q: (pct, degree) for q, pct, degree in rows})
        return held[1]
    finally:
        conn.execute("COMMIT")


def neighbours(db: IndexDb, seeds: Iterable[str], per_seed: int) -> list[tuple[str, str, str, int]]:
    """``(seed, neighbour, relation, weight)``: the ``per_seed`` heaviest each way."""
    known = memo.table(db, "neighbours")  # (seed, per_seed) → its rows: pins seed every plan
    out: list[tuple[str, str, str, int]] = []
    for seed in dict.fromkeys(seeds):
        rows = known.get((seed, per_seed))
        if rows is None:
            rows = known[(seed, per_seed)] = _neighbours(db.reader(), seed, per_seed)
        out.extend(rows)
    return out


def _neighbours(conn: sqlite3.Connection, seed: str, per_seed: int) -> list[tuple[str, str, str, int]]:
    calls = conn.execute(
        "SELECT t.dst, sum(e.weight) AS w FROM symbols s JOIN edges e ON e.src = s.id "
        "JOIN targets t ON t.id = e.target WHERE s.qualname = ? AND t.dst IS NOT NULL AND t.dst != s.qualname "
        "GROUP BY t.dst ORDER BY w DESC, t.dst LIMIT ?",
        (seed, per_seed),
    )
    out = [(seed, dst, "calls", w) for dst, w in calls]
    called_by = conn.execute(
        "SELECT s.qualname, sum(e.weight) AS w FROM targets t JOIN edges e ON e.target = t.id "
        "JOIN symbols s ON s.id = e.src WHERE t.dst = ? AND s.qualname != t.dst "
        "GROUP BY s.qualname ORDER BY w DESC, s.qualname LIMIT ?",
        (seed, per_seed),
    )
    out.extend((seed, src, "called by", w) for src, w in called_by)
    return out


def file_neighbours(db: IndexDb, rel: str, limit: int) -> list[tuple[str, str, int]]:
    """``(qualname, relation, weight)`` of definitions in other files: the ``limit`` heaviest each way."""
    known = memo.table(db, "file_neighbours")  # the open files seed every plan of an editor
    rows = known.get((rel, limit))
    if rows is None:
        rows = known[(rel, limit)] = _file_neighbours(db.reader(), rel, limit)
    return list(rows)


def _file_neighbours(conn: sqlite3.Connection, rel: str, limit: int) -> list[tuple[str, str, int]]:
    used_by = conn.execute(
        "SELECT t.dst, sum(e.weight) AS w FROM symbols s JOIN edges e ON e.src = s.id "
        "JOIN targets t ON t.id = e.target WHERE s.path = ? AND t.dst IS NOT NULL AND NOT EXISTS "
        "(SELECT 1 FROM symbols d WHERE d.qualname = t.dst AND d.path = ?) "
        "GROUP BY t.dst ORDER BY w DESC, t.dst LIMIT ?",
        (rel, rel, limit),
    )
    out = [(dst, "used by", w) for dst, w in used_by]
    uses = conn.execute(
        "SELECT u.qualname, sum(e.weight) AS w FROM symbols s JOIN targets t ON t.dst = s.qualname "
        "JOIN edges e ON e.target = t.id JOIN symbols u ON u.id = e.src WHERE s.path = ? AND u.path != ? "
        "GROUP BY u.qualname ORDER BY w DESC, u.qualname LIMIT ?",
        (rel, rel, limit),
    )
    out.extend((src, "uses", w) for src, w in uses)
    return out
