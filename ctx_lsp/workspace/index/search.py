"""Lexical search over the symbols: FTS5's BM25 on the search terms (``terms``), with the
fields each hit matched in.

A hit carries the symbol's head (``SymbolHead``: its name, kind and place), not its texts:
ranking needs no more, and most hits are never shown (a plan offers the best 200 of 400 and
packs a few dozen). The texts of the ones offered are read by row id (``symbols_by_id``).
"""

from __future__ import annotations

import sqlite3

import msgspec

from ctx_lsp.workspace.index import memo
from ctx_lsp.workspace.index.db import IndexDb, marks
from ctx_lsp.workspace.index.terms import FTS_COLUMNS, query_term_words

# bm25 column weights, in the order of ``FTS_COLUMNS``: names matter most.
FTS_WEIGHTS = (10.0, 4.0, 2.0, 1.0, 3.0)
SEARCHES_KEPT = 64  # whole results (hundreds of hits each) kept in memory
_COLUMN_LABELS = {
    "qualname_terms": "name",
    "signature": "signature",
    "docstring": "docstring",
    "identifiers": "body",
    "path_terms": "path",
}


class SymbolHead(msgspec.Struct, frozen=True, gc=False):
    """What ranking reads of a stored symbol (``IndexedSymbol`` has these fields too, and the
    texts): its row id, names, kind and place."""

    id: int
    qualname: str
    name: str
    kind: str
    path: str
    start_line: int
    end_line: int
    end_col: int
    parent: str
    secrets: int


_HEAD_FIELDS = SymbolHead.__struct_fields__
SELECT_HEADS = f"SELECT {', '.join(_HEAD_FIELDS)} FROM symbols"


class SearchHit(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """One search result: ``score`` is -bm25 (higher is better); ``matched`` says which query
    words matched (a stem of them) in which field, e.g. ``"name: invoice total; path: billing"``;
    ``words`` are those words, whatever the field (ranking counts them: no need to read
    ``matched`` back)."""

    symbol: SymbolHead
    score: float
    matched: str
    words: frozenset[str] = frozenset()


def search(db: IndexDb, query: str, limit: int, kinds: set[str] | None) -> list[SearchHit]:
    """Symbols matching any term of ``query``, best first (see ``WorkspaceIndex.search``); the
    same question asked again, while the index is unchanged, is answered from memory."""
    key = (query, limit, frozenset(kinds) if kinds else None)
    results = memo.table(db, "search", SEARCHES_KEPT)
    hits = results.get(key)
    if hits is None:
        hits = results[key] = _search(db, query, limit, kinds)
    return list(hits)


def _search(db: IndexDb, query: str, limit: int, kinds: set[str] | None) -> list[SearchHit]:
    """Symbols matching any term of ``query``, best first.

    ``score`` = −bm25 over all columns (``FTS_WEIGHTS``) plus −bm25 of the name column alone.
    Why the second part: FTS5 normalises by the length of the whole row and saturates each
    term, so a one-line ``__all__ = ["calculate_invoice_total"]`` would otherwise outrank the
    definition of ``calculate_invoice_total``; a match on the symbol's own name must win.
    """
    words = query_term_words(query)
    terms = list(words)
    if not terms or limit <= 0:
        return []
    conn = db.reader()
    # A term in at least half the symbols (the package's name in every path) weighs 1e-6 in
    # FTS5's bm25 (its idf is clamped), yet scoring every row it is in costs the most: it is
    # left out of the match, unless nothing else is asked. ``matched`` still names it.
    common = _ubiquitous(db, conn, terms)
    any_term = " OR ".join(f'"{t}"' for t in terms if t not in common or len(common) == len(terms))
    weights = ", ".join(str(w) for w in FTS_WEIGHTS)
    name_weights = ", ".join(str(w if i == 0 else 0.0) for i, w in enumerate(FTS_WEIGHTS))
    # One scan ranks everything from the FTS index alone; symbol rows are fetched for the
    # top hits only (joining every match first made common-word queries 4x slower).
    sql = f"SELECT f.rowid, bm25(symbols_fts, {weights}) + bm25(symbols_fts, {name_weights}) AS r FROM symbols_fts f"
    params: list[object] = []
    if kinds:
        kind_list = sorted(kinds)
        sql += f" JOIN symbols s ON s.id = f.rowid WHERE symbols_fts MATCH ? AND s.kind IN ({marks(len(kind_list))})"
        params = [any_term, *kind_list]
    else:
        sql += " WHERE symbols_fts MATCH ?"
        params = [any_term]
    # A little over the limit, so the content-based tie-break below decides the cut.
    sql += " ORDER BY r, f.rowid LIMIT ?"
    params.append(int(limit) + 32)
    try:
        ranked = conn.execute(sql, params).fetchall()
        if not ranked:
            return []
        ids = [r[0] for r in ranked]
        id_marks = marks(len(ids))
        rows = conn.execute(f"{SELECT_HEADS} WHERE id IN ({id_marks})", ids)
        found = {row[0]: SymbolHead(*row) for row in rows}
        texts = {
            r[0]: r[1:]
            for r in conn.execute(
                f"SELECT rowid, {', '.join(FTS_COLUMNS)} FROM symbols_fts WHERE rowid IN ({id_marks})", ids
            )
        }
    except sqlite3.OperationalError:  # belt and braces: terms are \w+ and quoted
        return []
    scored = [(-rank, found[i]) for i, rank in ranked if i in found]
    scored.sort(key=lambda x: (-x[0], x[1].qualname, x[1].path, x[1].start_line))
    hits = []
    needles = [(f" {t} ", words[t]) for t in terms]  # terms are whole words of the space-joined texts
    for score, sym in scored[:limit]:
        parts = []
        found: set[str] = set()
        for label, text in zip(FTS_COLUMNS, texts.get(sym.id, ()), strict=False):
            padded = f" {text} "
            matched = [word for needle, word in needles if needle in padded]
            if matched:
                parts.append(f"{_COLUMN_LABELS[label]}: {' '.join(matched)}")
                found.update(matched)
        hits.append(SearchHit(symbol=sym, score=score, matched="; ".join(parts), words=frozenset(found)))
    return hits


def _ubiquitous(db: IndexDb, conn: sqlite3.Connection, terms: list[str]) -> set[str]:
    """The terms at least half the symbols hold, whose bm25 idf FTS5 clamps to 1e-6 (counts
    from ``symbols_vocab``, kept while the index does not change)."""
    counts = memo.table(db, "term_rows")
    missing = [t for t in terms if t not in counts]
    if missing:
        found = dict(
            conn.execute(f"SELECT term, doc FROM symbols_vocab WHERE term IN ({marks(len(missing))})", missing)
        )
        for t in missing:
            counts[t] = found.get(t, 0)
        if "" not in counts:  # the number of rows, under a key no term has
            counts[""] = conn.execute("SELECT count(*) FROM symbols").fetchone()[0]
    rows = counts.get("") or conn.execute("SELECT count(*) FROM symbols").fetchone()[0]
    return {t for t in terms if 2 * counts[t] >= rows}
