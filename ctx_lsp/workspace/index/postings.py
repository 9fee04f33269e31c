"""The search index's postings in memory: BM25 over arrays instead of inside SQLite.

FTS5 scores every row a query matches one at a time, reading each row's position lists (about
7 ms for the ~5,000 rows a docstring-like question matches on sympy); it also cannot say which
column a term matched in, so ``matched`` needed the rows' texts read back and searched. Here each
term's postings are arrays (row id, weighted frequency, name-column frequency, a bit per column
it occurs in): a question is scored with a few vectorised operations per term, and ``matched``
comes from the bits.

The scores are FTS5's own, to the last bit: the same formula (``bm25`` with ``FTS_WEIGHTS``,
plus the name column's alone), the same operations in the same order, the same statistics (row
count, average length, rows per term) and terms folded as its tokenizer folds them (``fold``),
so the hits, their order and their scores are the ones the SQL query gives (the tests compare
them). The SQL query stays the fallback: until the postings are built
(``WorkspaceIndex.prepare_search``, off the request path, about a second for sympy's 40k
symbols), for a search restricted to some kinds, and for a workspace too large to keep in memory.

The index changes under the postings (an edit re-indexed, another process writing): every write
that changes symbols stores a new ``symbols_version``, and symbol ids only grow (``next_id``), so
``sync`` finds what changed by ids alone — rows gone, rows added past the ids it knows — and
keeps them beside the arrays, until they are too many and the arrays are built again.

The postings also keep every row's head (``SymbolHead``): a new question's hits are a few
hundred rows, and reading their heads from SQLite cost more than scoring them (~1.4 ms on sympy
for the ~300 a first-sight question had not met). A row's head never changes while its id
stands (ids are not given twice), so the heads follow the rows gone and added like the rest.
"""

from __future__ import annotations

import contextlib
import ctypes
import math
import sqlite3
import threading
from collections.abc import Iterable, Iterator, Sequence

import numpy as np

from ctx_lsp.workspace.index.search import SELECT_HEADS, SymbolHead
from ctx_lsp.workspace.index.terms import FTS_COLUMNS, FTS_WEIGHTS, fold

K1, B = 1.2, 0.75  # FTS5's bm25 constants
MAX_ROWS = 150_000  # more symbols: FTS5 alone (~75 MB of arrays, and a build peaking near 600 MB)
# Rows changed since the build (gone or added), as a share of the rows built: past WORN_SHARE
# the next graph update (when edits pause) builds the arrays again; past REBUILD_SHARE (a large
# refresh) the next search does. The rows added meanwhile live in dicts, ~7 kB each.
WORN_SHARE = 0.03
REBUILD_SHARE = 0.1
BUILD_CHUNK = 2048  # FTS rows read at a time while building
_SELECT_ROWS = f"SELECT rowid, {', '.join(FTS_COLUMNS)} FROM symbols_fts"


@contextlib.contextmanager
def _snapshot(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """One read transaction: the state and the rows read inside it agree."""
    conn.execute("BEGIN")
    try:
        yield conn
    finally:
        conn.execute("COMMIT")


def state(conn: sqlite3.Connection) -> tuple[str | None, str | None, int]:
    """The index's ``(made, symbols_version, next_id)``: which making of the index it is, and
    what the last write of symbols stored."""
    meta = dict(conn.execute("SELECT key, value FROM index_meta WHERE key IN ('made', 'symbols_version', 'next_id')"))
    return meta.get("made"), meta.get("symbols_version"), int(meta.get("next_id") or 0)


def _ids(conn: sqlite3.Connection) -> np.ndarray:
    """Every symbol's row id. One string parsed by numpy: a row at a time took 15–20 ms on sympy,
    after every save."""
    joined = conn.execute("SELECT group_concat(id) FROM symbols").fetchone()[0]
    return np.fromstring(joined or "", dtype=np.int64, sep=",")


class _TermIds(dict[str, int]):
    """term → dense id, given in order of first sight; a spelling with diacritics has the id of
    its folded form (``fold``)."""

    def __init__(self) -> None:
        super().__init__()
        self.size = 0  # ids given

    def __missing__(self, term: str) -> int:
        folded = fold(term)
        if folded != term:
            value = self[term] = self[folded]
            return value
        value = self[term] = self.size
        self.size += 1
        return value


def _row_postings(row: Sequence) -> tuple[int, dict[str, list], int]:
    """One FTS row → (row id, term → [weighted frequency, name frequency, column bits], length)."""
    found: dict[str, list] = {}
    length = 0
    for col, text in enumerate(row[1:]):
        tokens = text.split() if text.isascii() else [fold(t) for t in text.split()]  # nearly all ASCII
        length += len(tokens)
        weight, bit, name = FTS_WEIGHTS[col], 1 << col, FTS_WEIGHTS[0] if col == 0 else 0.0
        for t in tokens:
            entry = found.get(t)
            if entry is None:
                found[t] = [weight, name, bit]
            else:
                entry[0] += weight
                entry[1] += name
                entry[2] |= bit
    return row[0], found, length


class Postings:
    """Every term's rows, for one state of the index (see the module's docstring). Use under
    ``lock``: ``sync`` changes it."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.lock = threading.Lock()
        with _snapshot(conn):
            self.made, self.version, self.next_id = state(conn)
            highest = conn.execute("SELECT max(id) FROM symbols").fetchone()[0] or 0
            self._build(conn.execute(_SELECT_ROWS), max(self.next_id, highest + 1))
            self.heads: dict[int, SymbolHead] = {}
            self.paths: dict[str, int] = {}  # path → its number in ``row_path``
            self.row_path = np.full(len(self.alive), -1, np.int32)  # row id → its path's number
            self._read_heads(conn.execute(SELECT_HEADS))

    def _read_heads(self, rows: Iterable[tuple]) -> None:
        """Keep these heads; the strings many rows repeat (paths, kinds, classes, names) once
        (on sympy: 15 MB instead of 24)."""
        shared: dict[str, str] = {}
        once = shared.setdefault
        paths = self.paths
        for i, qualname, name, kind, path, start, end, end_col, parent, secrets in rows:
            self.row_path[i] = paths.setdefault(path, len(paths))
            self.heads[i] = SymbolHead(
                i, qualname, once(name, name), once(kind, kind), once(path, path), start, end, end_col,
                once(parent, parent), secrets,
            )  # fmt: skip

    def _build(self, cursor: sqlite3.Cursor, size: int) -> None:
        """The arrays, from the FTS rows read a chunk at a time: each token becomes a term id
        at once, so the texts of the whole index are never held at once (on sympy the build
        peaks at ~165 MB over the process, mostly the sort's copies, and leaves 47 MB)."""
        self.terms = terms = _TermIds()
        id_chunks, term_chunks, row_chunks, col_chunks = [], [], [], []
        self.length = np.zeros(size, np.int64)  # tokens per row, all columns (bm25's D)
        while chunk := cursor.fetchmany(BUILD_CHUNK):
            ids = np.fromiter((r[0] for r in chunk), np.int64, len(chunk))
            id_chunks.append(ids)
            for col in range(len(FTS_COLUMNS)):
                counts = []
                term_ids: list[int] = []
                for r in chunk:
                    split = r[col + 1].split()
                    counts.append(len(split))
                    term_ids += map(terms.__getitem__, split)
                rows = np.repeat(ids, counts).astype(np.int32)
                self.length += np.bincount(rows, minlength=size)
                term_chunks.append(np.array(term_ids, np.int32))
                row_chunks.append(rows)
                col_chunks.append(np.full(len(rows), col, np.int8))
        ids = np.concatenate(id_chunks) if id_chunks else np.zeros(0, np.int64)
        col = np.concatenate(col_chunks) if col_chunks else np.zeros(0, np.int8)
        key = np.concatenate(term_chunks).astype(np.int64) * size + np.concatenate(row_chunks) if col_chunks else col
        del term_chunks, row_chunks, col_chunks
        pairs, which = np.unique(key, return_inverse=True)  # sorted: by term, then by row
        del key
        weights = np.asarray(FTS_WEIGHTS)
        # weighted frequencies are sums of small integers: float32 holds them exactly
        self.freq = np.bincount(which, weights=weights[col], minlength=len(pairs)).astype(np.float32)
        self.name_freq = np.bincount(which, weights=(col == 0) * weights[0], minlength=len(pairs)).astype(np.float32)
        self.bits = np.zeros(len(pairs), np.uint8)
        np.bitwise_or.at(self.bits, which, (1 << col).astype(np.uint8))
        del which, col
        term_of, rows = np.divmod(pairs, size)
        self.rows = rows.astype(np.int32)
        self.starts = np.searchsorted(term_of, np.arange(terms.size + 1))
        self.docs = np.diff(self.starts)  # rows holding each term (less the rows gone since)
        by_row = np.argsort(self.rows, kind="stable")  # for a row gone: the terms it held
        self.row_terms = term_of[by_row].astype(np.int32)
        self.row_starts = np.searchsorted(self.rows[by_row], np.arange(size + 1))
        self.alive = np.zeros(size, bool)
        self.alive[ids] = True
        self.n_rows = self.built_rows = len(ids)
        self.tokens = int(self.length.sum())
        self.base_size = size
        self.changed = 0  # rows gone or added since the build
        self.added: dict[str, dict[int, tuple[float, float, int]]] = {}  # term → row → postings
        self.added_terms: dict[int, list[str]] = {}  # row → its terms, for the rows added

    # ---- keeping up with the index ---------------------------------------------------------

    def worn(self) -> bool:
        """Whether enough changed since the build to build the arrays again at a quiet time."""
        return self.changed > WORN_SHARE * max(self.built_rows, 1)

    def sync(self, conn: sqlite3.Connection) -> bool:
        """Bring the postings up to the index's current state; False when they must be built
        again instead (too much changed, or the index was made again from nothing)."""
        with _snapshot(conn):
            return self._sync(conn)

    def _sync(self, conn: sqlite3.Connection) -> bool:
        made, version, next_id = state(conn)
        if made != self.made or next_id < self.next_id:  # made again: ids may be given twice
            return False
        if version == self.version:
            return True
        self._grow(next_id)
        new_heads = conn.execute(f"{SELECT_HEADS} WHERE id >= ?", (self.next_id,)).fetchall()
        gone = self._gone(conn, new_heads)
        self.changed += len(gone) + len(new_heads)
        if self.changed > REBUILD_SHARE * max(self.built_rows, 1):
            return False
        for row in gone:
            self._remove(row)
        if new_heads:
            new = {h[0] for h in new_heads}
            for row in conn.execute(f"{_SELECT_ROWS} WHERE rowid >= ?", (self.next_id,)):
                if row[0] in new:
                    self._add(row)
            self._read_heads(new_heads)
        self.version, self.next_id = version, next_id
        return True

    def _gone(self, conn: sqlite3.Connection, new_heads: list[tuple]) -> list[int]:
        """The rows gone since the last sync. A save replaces the rows of one file, so they are
        looked for among the rows of the files with new rows, and SQLite's row count (free)
        says whether that is all of them; when it is not (a file deleted or renamed), every id
        is compared (4 ms on sympy)."""
        expected = self.n_rows + len(new_heads) - conn.execute("SELECT count(*) FROM symbols").fetchone()[0]
        numbers = [self.paths[h[4]] for h in new_heads if h[4] in self.paths]
        if numbers and expected > 0:
            paths = sorted({h[4] for h in new_heads})
            sql = f"SELECT id FROM symbols WHERE path IN ({', '.join('?' * len(paths))})"
            present = {r[0] for r in conn.execute(sql, paths)}
            mine = np.flatnonzero(self.alive & np.isin(self.row_path, numbers)).tolist()
            gone = [row for row in mine if row not in present]
            if len(gone) == expected:
                return gone
        if expected == 0:
            return []
        now = np.zeros(len(self.alive), bool)
        now[_ids(conn)] = True
        return np.flatnonzero(self.alive & ~now).tolist()

    def _grow(self, size: int) -> None:
        extra = size - len(self.alive)
        if extra > 0:
            self.alive = np.concatenate([self.alive, np.zeros(extra, bool)])
            self.length = np.concatenate([self.length, np.zeros(extra, np.int64)])
            self.row_path = np.concatenate([self.row_path, np.full(extra, -1, np.int32)])

    def _remove(self, row: int) -> None:
        self.alive[row] = False
        self.heads.pop(row, None)
        self.n_rows -= 1
        self.tokens -= int(self.length[row])
        if row < self.base_size:
            np.subtract.at(self.docs, self.row_terms[self.row_starts[row] : self.row_starts[row + 1]], 1)
        for term in self.added_terms.pop(row, ()):
            del self.added[term][row]

    def _add(self, fts_row: tuple) -> None:
        row, found, length = _row_postings(fts_row)
        self.alive[row] = True
        self.length[row] = length
        self.n_rows += 1
        self.tokens += length
        for term, (freq, name, bits) in found.items():
            self.added.setdefault(term, {})[row] = (freq, name, bits)
        self.added_terms[row] = list(found)

    # ---- searching ---------------------------------------------------------------------------

    def _of(self, term: str) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, int]:
        """A term's (rows, frequencies, name frequencies, column bits, rows holding it)."""
        term = fold(term)
        tid = self.terms.get(term)
        if tid is None:
            rows, freq, name, bits = np.zeros(0, np.int64), np.zeros(0), np.zeros(0), np.zeros(0, np.uint8)
            docs = 0
        else:
            lo, hi = self.starts[tid], self.starts[tid + 1]
            rows, bits = self.rows[lo:hi], self.bits[lo:hi]
            freq, name = self.freq[lo:hi].astype(np.float64), self.name_freq[lo:hi].astype(np.float64)
            docs = int(self.docs[tid])
        added = self.added.get(term)
        if added:
            extra = sorted(added.items())
            rows = np.concatenate([rows, np.fromiter((r for r, _ in extra), np.int64, len(extra))])
            freq = np.concatenate([freq, [p[0] for _, p in extra]])
            name = np.concatenate([name, [p[1] for _, p in extra]])
            bits = np.concatenate([bits, np.array([p[2] for _, p in extra], np.uint8)])
            docs += len(extra)
        return rows, freq, name, bits, docs

    def ubiquitous(self, terms: Iterable[str]) -> set[str]:
        """The terms at least half the rows hold (see ``search._ubiquitous``: the same counts
        FTS5 keeps, without a query)."""
        return {t for t in terms if 2 * self._docs(t) >= self.n_rows}

    def _docs(self, term: str) -> int:
        """The rows holding a term."""
        term = fold(term)
        tid = self.terms.get(term)
        return (0 if tid is None else int(self.docs[tid])) + len(self.added.get(term, ()))

    def top(self, terms: Iterable[str], limit: int) -> list[tuple[int, float]]:
        """The rows holding any of ``terms``, as FTS5 ranks them: ``(row id, r)`` by r, then row
        id, at most ``limit``; r = bm25 over all columns + bm25 of the name column (negative:
        lower is better)."""
        size = len(self.alive)
        over_all, over_name = np.zeros(size), np.zeros(size)
        hit = np.zeros(size, bool)
        avgdl = self.tokens / self.n_rows if self.n_rows else 1.0
        for term in terms:  # in the query's order: the sums are FTS5's, operation for operation
            rows, freq, name, _, docs = self._of(term)
            if not len(rows):
                continue
            idf = math.log((self.n_rows - docs + 0.5) / (docs + 0.5))
            if idf <= 0.0:
                idf = 1e-6
            norm = K1 * ((1 - B) + B * self.length[rows] / avgdl)
            over_all[rows] += idf * ((freq * (K1 + 1.0)) / (freq + norm))
            over_name[rows] += idf * ((name * (K1 + 1.0)) / (name + norm))
            hit[rows] = True
        ids = np.flatnonzero(hit & self.alive)
        r = (-1.0 * over_all[ids]) + (-1.0 * over_name[ids])
        if len(ids) > limit > 0:  # the best ``limit``, and every row tied with the last of them
            cut = np.partition(r, limit - 1)[limit - 1]
            keep = r <= cut
            ids, r = ids[keep], r[keep]
        order = np.lexsort((ids, r))[:limit]
        return list(zip(ids[order].tolist(), r[order].tolist(), strict=True))

    def columns(self, rows: Sequence[int], terms: Sequence[str]) -> list[list[int]]:
        """For each row, the column bits of each term (0: not in the row)."""
        wanted = np.asarray(rows, np.int64)
        out = np.zeros((len(wanted), len(terms)), np.int64)
        for j, term in enumerate(terms):
            held, _, _, bits, _ = self._of(term)  # by row id: the added rows come after the built ones
            if not len(held):
                continue
            at = np.minimum(np.searchsorted(held, wanted), len(held) - 1)
            out[:, j] = np.where(held[at] == wanted, bits[at], 0)
        return out.tolist()


def load(conn: sqlite3.Connection) -> Postings | None:
    """The postings of the index as it is now; None when it holds too many symbols to keep."""
    rows = conn.execute("SELECT count(*) FROM symbols").fetchone()[0]
    if rows > MAX_ROWS:
        return None
    built = Postings(conn)
    _give_back()
    return built


def _give_back() -> None:
    """Return the build's freed temporaries to the system: glibc keeps freed heap memory for
    reuse, which left the server ~60 MB larger on sympy than what it holds. Elsewhere, nothing."""
    with contextlib.suppress(OSError, AttributeError, TypeError):
        ctypes.CDLL(None).malloc_trim(0)
