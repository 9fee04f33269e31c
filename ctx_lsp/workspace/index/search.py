"""Lexical search over the symbols: FTS5's BM25 on the search terms (``terms``), with the
fields each hit matched in.

A hit carries the symbol's head (``SymbolHead``: its name, kind and place), not its texts:
ranking needs no more, and most hits are never shown (a plan offers the best 200 of 400 and
packs a few dozen). The texts of the ones offered are read by row id (``symbols_by_id``).
"""

from __future__ import annotations

import logging
import sqlite3
from typing import TYPE_CHECKING

import msgspec

from ctx_lsp.workspace.index import memo
from ctx_lsp.workspace.index.db import SELECT_HEADS, IndexDb, SymbolHead, marks
from ctx_lsp.workspace.index.terms import (
    FTS_COLUMNS,
    FTS_WEIGHTS,
    LONG_REQUEST_TERMS,
    fold,
    query_term_words,
    weighted_terms,
)

if TYPE_CHECKING:  # numpy is imported only by processes that build the postings
    from ctx_lsp.workspace.index.postings import Postings

log = logging.getLogger("ctx_lsp.index")
SEARCHES_KEPT = 64  # whole results (hundreds of hits each) kept in memory
_COLUMN_LABELS = {
    "qualname_terms": "name",
    "signature": "signature",
    "docstring": "docstring",
    "identifiers": "body",
    "path_terms": "path",
}


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

    Scored by the in-memory postings when they are built (``postings``: the same scores), else
    by FTS5 in SQL.
    """
    if limit <= 0:
        return []
    conn = db.reader()
    every = query_term_words(query)
    counts = _rows_holding(db, conn, list(every))[0] if len(every) > LONG_REQUEST_TERMS else {}
    words, scored = weighted_terms(query, every, counts)  # a long request: its names, title, strongest terms
    terms = list(words)
    if not terms:
        return []
    want = int(limit) + 32  # a little over the limit, so the content-based tie-break below decides the cut
    columns: list[list[int]] | None = None
    in_memory = None if kinds else _current_postings(db, conn)
    ranked: list[tuple[int, float]] | None = None
    found: dict[int, SymbolHead] | None = None
    if in_memory is not None:
        try:
            with in_memory.lock:
                ranked = in_memory.top(_matched(scored, in_memory.ubiquitous(terms)), want)
                columns = in_memory.columns([r[0] for r in ranked], terms)
                found = in_memory.heads_of([i for i, _ in ranked])
        except Exception:
            _give_up_postings(db)
            ranked = columns = found = None
    try:
        if ranked is None:
            ranked = _ranked_in_sql(conn, _matched(scored, _ubiquitous(db, conn, terms)), want, kinds)
        if not ranked:
            return []
        ids = [r[0] for r in ranked]
        if found is None:
            found = _heads(db, conn, ids)
        if columns is None:  # which terms each hit holds in which column, from its texts
            columns = _columns_from_texts(conn, ids, marks(len(ids)), terms)
    except sqlite3.OperationalError:  # belt and braces: terms are \w+ and quoted
        return []
    bits_of = dict(zip(ids, columns, strict=True))
    scored = [(-rank, found[i]) for i, rank in ranked if i in found]
    scored.sort(key=lambda x: (-x[0], x[1].qualname, x[1].path, x[1].start_line))
    described: dict[tuple[int, ...], tuple[str, frozenset[str]]] = {}
    hits = []
    for score, sym in scored[:limit]:
        bits = tuple(bits_of[sym.id])
        said = described.get(bits)
        if said is None:
            said = described[bits] = _described(bits, [words[t] for t in terms])
        hits.append(SearchHit(symbol=sym, score=score, matched=said[0], words=said[1]))
    return hits


def _matched(terms: list[str], common: set[str]) -> list[str]:
    """The terms a search matches: all but those in at least half the rows (``common``: the
    package's name in every path), unless nothing else is asked. FTS5's bm25 weighs such a term
    1e-6 (its idf is clamped), yet scoring every row it is in costs the most. ``matched`` still
    names it."""
    return terms if common.issuperset(terms) else [t for t in terms if t not in common]


def _heads(db: IndexDb, conn: sqlite3.Connection, ids: list[int]) -> dict[int, SymbolHead]:
    """The heads of the symbols with these row ids (those that exist). Kept between searches
    while the index is unchanged: most hits of a new question were hits of earlier ones."""
    known = memo.table(db, "heads")
    missing = [i for i in ids if i not in known]
    if missing:
        rows = conn.execute(f"{SELECT_HEADS} WHERE id IN ({marks(len(missing))})", missing).fetchall()
        known.update((row[0], SymbolHead(*row)) for row in rows)
    return {i: head for i in ids if (head := known.get(i)) is not None}


def follow(db: IndexDb) -> None:
    """Bring the in-memory postings, when kept, up to the index as it is now (after a write)."""
    if db.postings is not None:
        _current_postings(db, db.reader())


def _current_postings(db: IndexDb, conn: sqlite3.Connection) -> Postings | None:
    """The in-memory postings, brought up to date. When too much changed to follow (a refresh
    or a save that replaced a tenth of the rows), they are dropped and searches use SQLite until
    the next quiet graph update builds them again (``WorkspaceIndex.update_graph``), never here:
    a build on the Rust tree takes 2.4 s and ~110 MB, and two threads that met stale postings
    each built a copy. A failure is logged and leaves search to SQLite from then on: a plan
    never fails for them."""
    current = db.postings
    if current is None:
        return None
    try:
        with current.lock:
            if current.sync(conn):
                return current
            if db.postings is current:
                db.postings = None
                db.postings_wanted = True
        return None
    except Exception:
        _give_up_postings(db)
        return None


def _give_up_postings(db: IndexDb) -> None:
    log.exception("search's postings failed; searches use SQLite from now on")
    db.postings = None


def _ranked_in_sql(
    conn: sqlite3.Connection, terms: list[str], limit: int, kinds: set[str] | None
) -> list[tuple[int, float]]:
    """FTS5's ranking (see ``_search``): (row id, r), lower r first, at most ``limit``."""
    any_term = " OR ".join(f'"{t}"' for t in terms)
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
    sql += " ORDER BY r, f.rowid LIMIT ?"
    params.append(limit)
    return conn.execute(sql, params).fetchall()


def _columns_from_texts(conn: sqlite3.Connection, ids: list[int], id_marks: str, terms: list[str]) -> list[list[int]]:
    """For each hit, the column bits of each term, found in its stored FTS texts."""
    sql = f"SELECT rowid, {', '.join(FTS_COLUMNS)} FROM symbols_fts WHERE rowid IN ({id_marks})"
    texts = {r[0]: r[1:] for r in conn.execute(sql, ids)}
    needles = [f" {fold(t)} " for t in terms]  # whole words of the space-joined texts, as FTS5 sees them
    out = []
    for i in ids:
        bits = [0] * len(needles)
        for c, text in enumerate(texts.get(i, ())):
            padded = f" {text} " if text.isascii() else f" {' '.join(map(fold, text.split()))} "
            for j, needle in enumerate(needles):
                if needle in padded:
                    bits[j] |= 1 << c
        out.append(bits)
    return out


def _described(bits: tuple[int, ...], words: list[str]) -> tuple[str, frozenset[str]]:
    """``matched`` and ``words`` of a hit whose terms are in the columns ``bits`` says."""
    parts = []
    held = 0
    for b in bits:
        held |= b
    for c, label in enumerate(FTS_COLUMNS):
        if held >> c & 1:  # most hits match in two or three of the five columns
            matched = [word for word, b in zip(words, bits, strict=True) if b >> c & 1]
            parts.append(f"{_COLUMN_LABELS[label]}: {' '.join(matched)}")
    return "; ".join(parts), frozenset(w for w, b in zip(words, bits, strict=True) if b)


def _ubiquitous(db: IndexDb, conn: sqlite3.Connection, terms: list[str]) -> set[str]:
    """The terms at least half the symbols hold, whose bm25 idf FTS5 clamps to 1e-6."""
    counts, rows = _rows_holding(db, conn, terms)
    return {t for t in terms if 2 * counts[t] >= rows}


def _rows_holding(db: IndexDb, conn: sqlite3.Connection, terms: list[str]) -> tuple[dict[str, int], int]:
    """The rows holding each term, and the number of rows (counts from ``symbols_vocab``,
    which holds terms as its tokenizer folds them; kept while the index does not change)."""
    counts = memo.table(db, "term_rows")
    missing = [t for t in terms if t not in counts]
    if missing:
        folded = [fold(t) for t in missing]
        found = dict(conn.execute(f"SELECT term, doc FROM symbols_vocab WHERE term IN ({marks(len(folded))})", folded))
        for t, f in zip(missing, folded, strict=True):
            counts[t] = found.get(f, 0)
        if "" not in counts:  # the number of rows, under a key no term has
            counts[""] = conn.execute("SELECT count(*) FROM symbols").fetchone()[0]
    rows = counts.get("") or conn.execute("SELECT count(*) FROM symbols").fetchone()[0]
    return counts, rows
