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
``sync`` finds what changed by ids alone — rows gone, rows added past the ids it knows. The rows
a sync finds added become a segment: arrays made the way the build makes them, beside the built
ones (a save of sympy's ``expr.py``, 162 rows, took 11 ms in Python dicts a row at a time). When
the rows changed are too many, the arrays are built again.

The postings also keep every row's head (``SymbolHead``): a new question's hits are a few
hundred rows, and reading their heads from SQLite cost more than scoring them (~1.4 ms on sympy
for the ~300 a first-sight question had not met). A row's head never changes while its id
stands (ids are not given twice), so the heads follow the rows gone and added like the rest.
They are kept in columns (``heads``), not objects.

Memory, on the Rust tree (139k rows, 2.6M term-row pairs; ``benchmarks/polyglot_trees.py``): 72 MB
held after the build, and the build peaks 105 MB above the process it runs in (from 65 MB to
170), from 123 and 369 MB with the heads as objects, float32 frequencies, an index of terms by
row for removals, and every token of every row sorted at once, and 200 MB above while the five
fields were joined and sorted at once (sympy: 31 and 129 MB, from 46 and 193).
"""

from __future__ import annotations

import contextlib
import ctypes
import math
import sqlite3
import threading
from collections.abc import Iterable, Iterator, Sequence
from typing import NamedTuple

import numpy as np

from ctx_lsp.workspace.index.db import SELECT_HEADS, SymbolHead, marks
from ctx_lsp.workspace.index.heads import Heads
from ctx_lsp.workspace.index.terms import FTS_COLUMNS, FTS_WEIGHTS, fold

K1, B = 1.2, 0.75  # FTS5's bm25 constants
MAX_ROWS = 150_000  # more symbols: FTS5 alone (~75 MB of arrays, and a build peaking near 600 MB)
# Rows changed since the build (gone or added), as a share of the rows built: past WORN_SHARE
# the next graph update (when edits pause) builds the arrays again; past REBUILD_SHARE (a large
# refresh) the next search does. Each sync that found rows added keeps a segment until then.
WORN_SHARE = 0.03
REBUILD_SHARE = 0.1
BUILD_CHUNK = 2048  # FTS rows read at a time while building
GROW_ROWS = 4096  # positions the arrays grow by, past the ones a sync needs
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


class _Pairs(NamedTuple):
    """Postings as arrays: one entry per (term, row) pair, sorted by term, then row (a position,
    see ``Postings``)."""

    term_of: np.ndarray
    rows: np.ndarray
    freq: np.ndarray  # weighted frequency (bm25's over all columns)
    name_freq: np.ndarray  # the name column's
    bits: np.ndarray  # a bit per column the term is in


class _Read(NamedTuple):
    """FTS rows read: their ids and token counts (all columns: bm25's D), in the order read,
    and their postings."""

    ids: np.ndarray
    length: np.ndarray
    pairs: _Pairs


def _pairs(chunks: Iterable[list[tuple]], first: int, terms: _TermIds) -> _Read:
    """The postings of FTS rows read a chunk at a time in id order, the rows numbered from
    position ``first`` on; each token becomes a term id at once, so the texts are never all
    held together, and each chunk's tokens become its (term, row) pairs at once, so neither are
    the tokens (on the Rust tree's 139k rows the build peaked ~110 MB higher sorting them all)."""
    id_chunks, length_chunks, pair_chunks = [], [], []
    at = first
    weights = np.asarray(FTS_WEIGHTS)
    for chunk in chunks:
        id_chunks.append(np.fromiter((r[0] for r in chunk), np.int64, len(chunk)))
        n = len(chunk)
        local = np.arange(n, dtype=np.int64)
        length = np.zeros(n, np.int64)
        term_parts, row_parts, col_parts = [], [], []
        for col in range(len(FTS_COLUMNS)):
            counts = []
            term_ids: list[int] = []
            for r in chunk:
                split = r[col + 1].split()
                counts.append(len(split))
                term_ids += map(terms.__getitem__, split)
            length += counts
            term_parts.append(np.array(term_ids, np.int64))
            row_parts.append(np.repeat(local, counts))
            col_parts.append(np.full(len(term_ids), col, np.int8))
        length_chunks.append(length)
        col = np.concatenate(col_parts)
        key = np.concatenate(term_parts) * max(n, 1) + np.concatenate(row_parts)
        del term_parts, row_parts, col_parts
        pairs, which = np.unique(key, return_inverse=True)  # sorted: by term, then by row
        del key
        freq = np.bincount(which, weights=weights[col], minlength=len(pairs))
        name_freq = np.bincount(which, weights=(col == 0) * weights[0], minlength=len(pairs))
        bits = np.zeros(len(pairs), np.uint8)
        np.bitwise_or.at(bits, which, (1 << col).astype(np.uint8))
        term_of, rows = np.divmod(pairs, max(n, 1))
        # float32 holds these sums of small integers exactly (up to 2**24), in half the room
        pair_chunks.append(
            [
                term_of.astype(np.int32),
                (rows + at).astype(np.int32),
                freq.astype(np.float32),
                name_freq.astype(np.float32),
                bits,
            ]
        )
        at += n
    ids = np.concatenate(id_chunks) if id_chunks else np.zeros(0, np.int64)
    lengths = np.concatenate(length_chunks) if length_chunks else np.zeros(0, np.int64)
    if not pair_chunks:
        none, no_freq = np.zeros(0, np.int32), np.zeros(0, np.uint16)
        return _Read(ids, lengths, _Pairs(none, none, no_freq, no_freq, np.zeros(0, np.uint8)))
    # Each chunk's pairs are sorted by term, then row, and the chunks' rows follow each other:
    # a stable sort by term sorts them all by term, then row. One field at a time, each chunk's
    # part let go as it is joined: all five at once peaked ~110 MB higher on the Rust tree.
    order: np.ndarray | None = None
    fields: list[np.ndarray] = []
    for f in range(len(_Pairs._fields)):
        joined = np.concatenate([chunk[f] for chunk in pair_chunks])
        for chunk in pair_chunks:
            chunk[f] = None
        give_back()  # the parts just joined: the allocator keeps them otherwise, and the peak grows
        if order is None:
            order = np.argsort(joined, kind="stable")
        joined = joined[order]
        fields.append(_exact(joined) if joined.dtype == np.float32 else joined)
        del joined
    del pair_chunks, order
    return _Read(ids, lengths, _Pairs(*fields))


def _exact(freq: np.ndarray) -> np.ndarray:
    """Weighted frequencies (sums of small integers) in the smallest type that holds them
    exactly: uint16 nearly always, float32 (exact up to 2**24) for a row repeating a word
    thousands of times."""
    return freq.astype(np.uint16) if not len(freq) or freq.max() < 65536 else freq.astype(np.float32)


class _Segment:
    """The postings of the rows one sync found added: the built arrays' layout, over the terms
    those rows hold (``terms``, sorted term ids)."""

    def __init__(self, p: _Pairs) -> None:
        self.terms, first = np.unique(p.term_of, return_index=True)
        self.starts = np.append(first, len(p.term_of))
        self.docs = np.diff(self.starts)  # rows holding each term (less the rows gone since)
        self.term_of, self.rows, self.freq, self.name_freq, self.bits = p
        by_row = np.argsort(p.rows, kind="stable")  # for a row gone: the terms it held
        self.row_sorted = p.rows[by_row]
        self.row_terms = np.searchsorted(self.terms, p.term_of[by_row])
        self.first_row, self.last_row = int(p.rows.min()), int(p.rows.max())

    def find(self, tid: int) -> int | None:
        """Where term ``tid`` is in ``terms``, if the segment holds it."""
        k = int(np.searchsorted(self.terms, tid))
        return k if k < len(self.terms) and self.terms[k] == tid else None

    def remove(self, rows: np.ndarray) -> None:
        if len(rows):
            np.subtract.at(self.docs, self.row_terms[np.isin(self.row_sorted, rows)], 1)


def _merged(older: _Segment, newer: _Segment, alive: np.ndarray) -> _Segment | None:
    """One segment for two, without the rows gone since (None: none is left)."""
    term_of, rows, freq, name_freq, bits = (
        np.concatenate([getattr(older, f), getattr(newer, f)]) for f in _Pairs._fields
    )
    keep = alive[rows]
    if not keep.any():
        return None
    term_of, rows, freq, name_freq, bits = term_of[keep], rows[keep], freq[keep], name_freq[keep], bits[keep]
    order = np.lexsort((rows, term_of))  # by term, then row: the newer segment's rows are the higher
    return _Segment(_Pairs(term_of[order], rows[order], freq[order], name_freq[order], bits[order]))


class Postings:
    """Every term's rows, for one state of the index (see the module's docstring). Use under
    ``lock``: ``sync`` changes it.

    Rows are numbered densely, in id order: the built rows take positions 0, 1, …, and the rows
    each sync adds take the next ones (ids only grow, so positions keep the ids' order). Every
    array is sized by positions, not by ids: ids are never given twice, so a workspace edited
    for a month has given millions of ids for the same 40k rows. ``ids`` maps a position back."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.lock = threading.Lock()
        with _snapshot(conn):
            self.made, self.version, self.next_id = state(conn)
            self._build(conn.execute(f"{_SELECT_ROWS} ORDER BY rowid"))
            self.heads = Heads(len(self.ids))  # position → its head (``heads``)
            cursor = conn.execute(SELECT_HEADS)
            for chunk in iter(lambda: cursor.fetchmany(BUILD_CHUNK), []):
                self._read_heads(chunk)

    def _read_heads(self, rows: list[tuple]) -> None:
        """Keep these heads, at their rows' positions (a row the postings do not hold: none)."""
        at = self._positions([r[0] for r in rows])
        found = np.flatnonzero(at >= 0)
        self.heads.put(at[found].tolist(), [rows[k] for k in found.tolist()])

    def heads_of(self, ids: Sequence[int]) -> dict[int, SymbolHead]:
        """The heads of the rows with these ids that the postings hold."""
        return {h.id: h for h in self.heads.get(self._positions(ids))}

    def all_heads(self) -> dict[int, SymbolHead]:
        """Every head kept (tests)."""
        return self.heads_of(self.ids[: self.size][self.alive[: self.size]])

    def _positions(self, ids: Sequence[int] | np.ndarray) -> np.ndarray:
        """The positions of these row ids (-1: a row the postings do not hold)."""
        wanted = np.asarray(ids, np.int64)
        if not self.size:
            return np.full(len(wanted), -1, np.int64)
        known = self.ids[: self.size]
        at = np.minimum(np.searchsorted(known, wanted), self.size - 1)
        return np.where(known[at] == wanted, at, -1)

    def _build(self, cursor: sqlite3.Cursor) -> None:
        """The arrays, from the FTS rows read a chunk at a time."""
        self.terms = terms = _TermIds()
        read = _pairs(iter(lambda: cursor.fetchmany(BUILD_CHUNK), []), 0, terms)
        p = read.pairs
        self.rows, self.freq, self.name_freq, self.bits = p.rows, p.freq, p.name_freq, p.bits
        self.base_terms = terms.size  # terms first seen later are only in segments
        self.starts = np.searchsorted(p.term_of, np.arange(terms.size + 1))
        self.docs = np.diff(self.starts)  # rows holding each term (less the rows gone since)
        self.size = self.base_size = size = len(read.ids)  # positions given
        self.ids = read.ids  # position → row id
        self.length = read.length  # position → tokens in the row, all columns (bm25's D)
        self.alive = np.ones(size, bool)
        self.n_rows = self.built_rows = size
        self.tokens = int(self.length.sum())
        self.changed = 0  # rows gone or added since the build
        self.segments: list[_Segment] = []  # the rows added since, a segment per sync

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
        new_heads = conn.execute(f"{SELECT_HEADS} WHERE id >= ?", (self.next_id,)).fetchall()
        gone = self._gone(conn, new_heads)
        self.changed += len(gone) + len(new_heads)
        if self.changed > REBUILD_SHARE * max(self.built_rows, 1):
            return False
        self._remove(gone)
        if new_heads:
            new = {h[0] for h in new_heads}
            added = conn.execute(f"{_SELECT_ROWS} WHERE rowid >= ? ORDER BY rowid", (self.next_id,))
            rows = [r for r in added if r[0] in new]
            if rows:
                self._add(_pairs([rows], self.size, self.terms))
            self._read_heads(new_heads)
        self.version, self.next_id = version, next_id
        return True

    def _gone(self, conn: sqlite3.Connection, new_heads: list[tuple]) -> np.ndarray:
        """The positions of the rows gone since the last sync. A save replaces the rows of one
        file, so they are looked for among the rows of the files with new rows, and SQLite's
        row count (free) says whether that is all of them; when it is not (a file deleted or
        renamed), every id is compared (4 ms on sympy)."""
        expected = self.n_rows + len(new_heads) - conn.execute("SELECT count(*) FROM symbols").fetchone()[0]
        if expected == 0:
            return np.zeros(0, np.int64)
        size = self.size
        codes = self.heads.codes
        numbers = [codes[h[4]] for h in new_heads if h[4] in codes]
        if numbers and expected > 0:
            paths = sorted({h[4] for h in new_heads})
            present = [r[0] for r in conn.execute(f"SELECT id FROM symbols WHERE path IN ({marks(len(paths))})", paths)]
            mine = np.flatnonzero(self.alive[:size] & np.isin(self.heads.path[:size], numbers))
            gone = mine[~np.isin(self.ids[mine], present)]
            if len(gone) == expected:
                return gone
        live = np.flatnonzero(self.alive[:size])
        return live[~np.isin(self.ids[live], _ids(conn))]

    def _add(self, read: _Read) -> None:
        """Keep the rows a sync found added, at the next positions."""
        first, added = self.size, len(read.ids)
        self._grow(first + added)
        end = self.size = first + added
        self.ids[first:end], self.length[first:end], self.alive[first:end] = read.ids, read.length, True
        self.n_rows += added
        self.tokens += int(read.length.sum())
        if len(read.pairs.rows):
            self._add_segment(_Segment(read.pairs))

    def _add_segment(self, segment: _Segment) -> None:
        """Keep a sync's segment; merge the newest two while the newer is at least half the
        older: a search looks a term up in each segment, and this keeps them few (their sizes
        at least double from newest to oldest) for little merging."""
        segments = self.segments
        segments.append(segment)
        while len(segments) > 1 and 2 * len(segments[-1].rows) >= len(segments[-2].rows):
            merged = _merged(segments[-2], segments[-1], self.alive)
            segments[-2:] = [] if merged is None else [merged]

    def _grow(self, size: int) -> None:
        extra = size - len(self.ids)
        if extra > 0:  # room for the next few saves too: each grows these by copying them
            extra += GROW_ROWS
            self.ids = np.concatenate([self.ids, np.zeros(extra, np.int64)])
            self.alive = np.concatenate([self.alive, np.zeros(extra, bool)])
            self.length = np.concatenate([self.length, np.zeros(extra, np.int64)])
            self.heads.grow(len(self.ids))

    def _remove(self, gone: np.ndarray) -> None:
        """Forget rows (by position): their heads, and their share of the row counts of the
        terms they hold."""
        if not len(gone):
            return
        self.alive[gone] = False
        self.heads.drop(gone)
        self.n_rows -= len(gone)
        self.tokens -= int(self.length[gone].sum())
        built = gone[gone < self.base_size]
        if len(built):  # the terms they held: one pass over the pairs (~5 ms on the Rust tree's
            # 2.6M) instead of an index by row kept for it (11 MB there)
            was = np.zeros(self.base_size, bool)
            was[built] = True
            at = np.flatnonzero(was[self.rows])
            np.subtract.at(self.docs, np.searchsorted(self.starts, at, side="right") - 1, 1)
        for seg in self.segments:
            seg.remove(gone[(gone >= seg.first_row) & (gone <= seg.last_row)])

    # ---- searching ---------------------------------------------------------------------------

    def _of(self, term: str) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, int]:
        """A term's (rows, frequencies, name frequencies, column bits, rows holding it), by
        position: the built rows, then each segment's (positions only grow)."""
        tid = self.terms.get(fold(term))
        parts = []
        docs = 0
        if tid is not None and tid < self.base_terms:
            lo, hi = self.starts[tid], self.starts[tid + 1]
            parts.append((self.rows[lo:hi], self.freq[lo:hi], self.name_freq[lo:hi], self.bits[lo:hi]))
            docs = int(self.docs[tid])
        for seg in self.segments if tid is not None else ():
            k = seg.find(tid)
            if k is not None:
                lo, hi = seg.starts[k], seg.starts[k + 1]
                parts.append((seg.rows[lo:hi], seg.freq[lo:hi], seg.name_freq[lo:hi], seg.bits[lo:hi]))
                docs += int(seg.docs[k])
        if not parts:
            return np.zeros(0, np.int64), np.zeros(0), np.zeros(0), np.zeros(0, np.uint8), 0
        rows, freq, name, bits = parts[0] if len(parts) == 1 else (np.concatenate(c) for c in zip(*parts, strict=True))
        return rows, freq.astype(np.float64), name.astype(np.float64), bits, docs

    def ubiquitous(self, terms: Iterable[str]) -> set[str]:
        """The terms at least half the rows hold (see ``search._ubiquitous``: the same counts
        FTS5 keeps, without a query)."""
        return {t for t in terms if 2 * self._docs(t) >= self.n_rows}

    def _docs(self, term: str) -> int:
        """The rows holding a term."""
        tid = self.terms.get(fold(term))
        if tid is None:
            return 0
        docs = int(self.docs[tid]) if tid < self.base_terms else 0
        return docs + sum(int(seg.docs[k]) for seg in self.segments if (k := seg.find(tid)) is not None)

    def top(self, terms: Iterable[str], limit: int) -> list[tuple[int, float]]:
        """The rows holding any of ``terms``, as FTS5 ranks them: ``(row id, r)`` by r, then row
        id, at most ``limit``; r = bm25 over all columns + bm25 of the name column (negative:
        lower is better)."""
        size = self.size
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
        at = np.flatnonzero(hit & self.alive[:size])
        r = (-1.0 * over_all[at]) + (-1.0 * over_name[at])
        if len(at) > limit > 0:  # the best ``limit``, and every row tied with the last of them
            cut = np.partition(r, limit - 1)[limit - 1]
            keep = r <= cut
            at, r = at[keep], r[keep]
        order = np.lexsort((at, r))[:limit]  # positions are in id order: ties go by id, as in FTS5
        return list(zip(self.ids[at[order]].tolist(), r[order].tolist(), strict=True))

    def columns(self, rows: Sequence[int], terms: Sequence[str]) -> list[list[int]]:
        """For each row (by id), the column bits of each term (0: not in the row)."""
        wanted = self._positions(rows)
        out = np.zeros((len(wanted), len(terms)), np.int64)
        for j, term in enumerate(terms):
            held, _, _, bits, _ = self._of(term)  # sorted: the added rows come after the built ones
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
    give_back()
    return built


def give_back() -> None:
    """Return the build's freed temporaries to the system: glibc keeps freed heap memory for
    reuse, which left the server ~60 MB larger on sympy than what it holds. Elsewhere, nothing."""
    with contextlib.suppress(OSError, AttributeError, TypeError):
        ctypes.CDLL(None).malloc_trim(0)
