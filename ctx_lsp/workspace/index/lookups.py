"""Reading stored symbols: by qualname, by file, by line, all of them, their centrality; and the
index's totals."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, TypeVar

import msgspec

from ctx_lsp.workspace.index import memo
from ctx_lsp.workspace.index.db import SELECT_SYMBOLS, IndexDb, IndexedSymbol, marks, row_symbol, select_in
from ctx_lsp.workspace.languages import DECLARATION_MARK, language_of
from ctx_lsp.workspace.languages.overloads import overload_key

if TYPE_CHECKING:
    from ctx_lsp.workspace.cards import SymbolRow

Row = TypeVar("Row", bound="SymbolRow")  # a stored row, or one a plan reads (``retrieval``)

# Whole rows (their texts too) kept by qualname and by id: read to make prompt items, which the
# engine keeps instead (``ITEMS_KEPT``), and graph neighbours, a few dozen a question.
ROWS_KEPT = 2_000


class IndexSummary(msgspec.Struct, frozen=True, kw_only=True):
    """Totals of the index: ``tokens`` is the token count of all indexed files."""

    files: int
    symbols: int
    files_with_errors: int
    card_tokens: int
    tokens: int
    edges: int = 0  # resolved def→ref edges (as of the last graph update)
    languages: dict[str, int] = msgspec.field(default_factory=dict)  # indexed files per language


def _implementation(found: list[IndexedSymbol]) -> IndexedSymbol:
    """Of symbols with one qualname, the first that is the code: not an ``@overload`` stub, not a
    declaration kept for its doc (a C++ header's)."""
    return next((s for s in found if not _declares_only(s)), found[0])


def _declares_only(sym: IndexedSymbol) -> bool:
    """An ``@overload`` stub, or a declaration kept for its doc: the code is another row."""
    return any(d == DECLARATION_MARK or d.rsplit(".", 1)[-1] == "overload" for d in sym.decorators)


def get_all(db: IndexDb, qualname: str) -> list[IndexedSymbol]:
    rows = db.reader().execute(f"{SELECT_SYMBOLS} WHERE s.qualname = ? ORDER BY s.path, s.start_line", (qualname,))
    return list(map(row_symbol, rows))


def get(db: IndexDb, qualname: str, path: str | None = None, line: int | None = None) -> IndexedSymbol | None:
    found = get_all(db, qualname)
    in_file = [s for s in found if s.path == path] if path is not None else []
    if not any(not _declares_only(s) for s in in_file):
        in_file = []  # a header's declaration (a pin made at it): the code is in another file
    elif line is not None and len(in_file) > 1:  # a type and a value of one name: the one there
        in_file.sort(key=lambda s: abs(s.start_line - line))
    return _implementation(in_file or found) if found else None


def code_of(db: IndexDb, sym: Row) -> Row | IndexedSymbol | None:
    """The code a header's declaration kept for its doc stands for (``sym`` itself when it is
    code): the definition of its name in another file; for an overloaded name
    (``juce::BigInteger::BigInteger(uint32)``), the one whose parameters' types are the same
    (``overloads.overload_key``: ``BigInteger::BigInteger (uint32 value)``). None: not indexed."""
    if DECLARATION_MARK not in sym.decorators:
        return sym
    start = len(sym.parent) if sym.qualname.startswith(sym.parent) else 0
    at = sym.qualname.find(f"{sym.name}(", start)
    if at < 0:
        found = get(db, sym.qualname, sym.path)
        return found if found is not None and not _declares_only(found) else None
    base, key = sym.qualname[: at + len(sym.name)], sym.qualname[at + len(sym.name) :]
    rows = db.reader().execute(
        f"{SELECT_SYMBOLS} WHERE s.qualname = ? OR (s.qualname >= ? AND s.qualname < ?) ORDER BY s.path, s.start_line",
        (base, f"{base}(", f"{base})"),
    )
    for found in map(row_symbol, rows):
        if found.path != sym.path and not _declares_only(found) and overload_key(found.path, _head(found)) == key:
            return found
    return None


def _head(sym: IndexedSymbol) -> str:
    """A definition's text up to its body (``{}`` for one): what its overload key is read from.
    Its signature is that, on one line, unless it was cut short (a long initializer list)."""
    return sym.body if sym.signature.endswith("…") else f"{sym.signature} {{}}"


def centrality(db: IndexDb, qualnames: Iterable[str]) -> dict[str, float]:
    """Centrality percentile of each given symbol that has one (``refgraph`` computes them)."""
    return dict(select_in(db.reader(), "SELECT qualname, pct FROM centrality WHERE qualname IN ({})", qualnames))


def get_many(db: IndexDb, qualnames: Iterable[str]) -> dict[str, IndexedSymbol]:
    known = memo.table(db, "by_name", ROWS_KEPT)  # qualname → symbol, or None: no such symbol
    wanted = set(qualnames)
    missing = wanted - known.keys()
    if missing:
        found: dict[str, list[IndexedSymbol]] = {}
        sql = f"{SELECT_SYMBOLS} WHERE s.qualname IN ({{}}) ORDER BY s.path, s.start_line"
        for sym in map(row_symbol, select_in(db.reader(), sql, missing)):
            found.setdefault(sym.qualname, []).append(sym)
        for name in missing:
            syms = found.get(name)
            known[name] = _implementation(syms) if syms else None
    return {name: sym for name in wanted if (sym := known[name]) is not None}


def symbols_by_id(db: IndexDb, ids: Iterable[int]) -> dict[int, IndexedSymbol]:
    """Stored symbols by row id (the ids of search hits), those that still exist."""
    known = memo.table(db, "by_id", ROWS_KEPT)
    wanted = set(ids)
    missing = wanted - known.keys()
    if missing:
        for sym in map(row_symbol, select_in(db.reader(), f"{SELECT_SYMBOLS} WHERE s.id IN ({{}})", missing)):
            known[sym.id] = sym
        for i in missing:
            known.setdefault(i, None)
    return {i: sym for i in wanted if (sym := known[i]) is not None}


def symbols_in(db: IndexDb, rel: str) -> list[IndexedSymbol]:
    rows = db.reader().execute(f"{SELECT_SYMBOLS} WHERE s.path = ? ORDER BY s.start_line, s.id", (rel,))
    return list(map(row_symbol, rows))


def symbol_at(db: IndexDb, rel: str, line: int, name: str | None = None) -> IndexedSymbol | None:
    reader = db.reader()
    row = reader.execute(
        f"{SELECT_SYMBOLS} WHERE s.path = ? AND s.start_line <= ? AND s.end_line >= ? "
        "ORDER BY s.start_line DESC, s.end_line ASC, s.id LIMIT 1",
        (rel, line, line),
    ).fetchone()
    found = row_symbol(row) if row else None
    if name and (found is None or found.name != name):
        # a stack trace from another version of the file: its line is elsewhere now, the name is not
        named = reader.execute(
            f"{SELECT_SYMBOLS} WHERE s.path = ? AND s.name = ? ORDER BY abs(s.start_line - ?), s.id LIMIT 1",
            (rel, name, line),
        ).fetchone()
        if named is not None:
            found = row_symbol(named)
    return found


def iter_symbols(db: IndexDb, kinds: Iterable[str] | None) -> list[IndexedSymbol]:
    sql = SELECT_SYMBOLS
    params: list[object] = []
    if kinds:
        kind_list = sorted(kinds)
        sql += f" WHERE s.kind IN ({marks(len(kind_list))})"
        params = kind_list
    rows = db.reader().execute(sql + " ORDER BY s.path, s.start_line, s.id", params)
    return list(map(row_symbol, rows))


def module_symbol_counts(db: IndexDb) -> list[tuple[str, int]]:
    rows = db.reader().execute("SELECT path, count(*) FROM symbols GROUP BY path ORDER BY path")
    return [(r[0], r[1]) for r in rows]


def counts(db: IndexDb) -> tuple[int, int, int]:
    """Files, symbols and edges: what a plan's scaffold depends on. SQLite counts rows from its
    smallest index (0.5 ms on sympy), where ``stats``' sums read every row (≈20 ms, again after
    each save); kept until the database changes."""
    known = memo.table(db, "counts")
    found = known.get(())
    if found is None:
        conn = db.reader()
        files = conn.execute("SELECT count(*) FROM files").fetchone()[0]
        symbols = conn.execute("SELECT count(*) FROM symbols").fetchone()[0]
        found = known[()] = (files, symbols, db.edge_count())
    return found


def stats(db: IndexDb) -> IndexSummary:
    """The totals, cached per thread until the database changes (``PRAGMA data_version`` moves
    when any other connection commits): the sums scan every symbol (≈20 ms on sympy)."""
    conn = db.reader()
    version = conn.execute("PRAGMA data_version").fetchone()[0]
    cached = getattr(db.local, "stats", None)
    if cached is not None and cached[0] == version:
        return cached[1]
    files, errors = conn.execute(
        "SELECT count(*), count(error) - sum(coalesce(error LIKE 'skipped:%', 0)) FROM files"
    ).fetchone()
    symbols, card_tokens, tokens = conn.execute(
        "SELECT count(*), coalesce(sum(card_tokens), 0), "
        "coalesce(sum(CASE WHEN kind = 'module' THEN body_tokens ELSE 0 END), 0) FROM symbols"
    ).fetchone()
    languages: dict[str, int] = {}
    for (path,) in conn.execute("SELECT path FROM symbols WHERE kind = 'module'"):
        lang = language_of(path) or "python"
        languages[lang] = languages.get(lang, 0) + 1
    summary = IndexSummary(
        languages=dict(sorted(languages.items(), key=lambda kv: (-kv[1], kv[0]))),
        files=files,
        symbols=symbols,
        files_with_errors=errors or 0,
        card_tokens=card_tokens,
        tokens=tokens,
        edges=db.edge_count(),
    )
    db.local.stats = (version, summary)
    return summary


def files_matching(db: IndexDb, written: str, limit: int) -> list[str]:
    """Indexed files a path as written in a request means (see ``WorkspaceIndex.files_matching``)."""
    parts = [p for p in written.replace("\\", "/").split("/") if p not in ("", ".")]
    if not parts or parts[-1] == "..":
        return []
    name = parts[-1]
    # LIKE's "_" matches any character: the suffix test below is exact
    rows = db.reader().execute("SELECT rel FROM files WHERE rel = ? OR rel LIKE ?", (name, "%/" + name)).fetchall()
    best: list[str] = []
    best_common = 0
    for (rel,) in rows:
        rel_parts = rel.split("/")
        common = 0
        while common < min(len(parts), len(rel_parts)) and parts[-1 - common] == rel_parts[-1 - common]:
            common += 1
        # the whole file path inside what was written (an absolute path), all of what was written
        # at the end of the file's path (``app/models.py``), or two components at least
        if common == len(rel_parts) or common == len(parts) or common >= 2:
            if common > best_common:
                best, best_common = [rel], common
            elif common == best_common:
                best.append(rel)
    return sorted(best) if len(best) <= limit else []


def module_symbol(db: IndexDb, rel: str) -> IndexedSymbol | None:
    row = db.reader().execute(f"{SELECT_SYMBOLS} WHERE s.path = ? AND s.kind = 'module' LIMIT 1", (rel,)).fetchone()
    return row_symbol(row) if row else None
