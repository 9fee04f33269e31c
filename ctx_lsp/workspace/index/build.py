"""Bringing the index in line with the files on disk (``refresh``), and the batch writer that
every change of stored rows goes through (``write``, also used by ``updates``).

A refresh walks the workspace, reads only files whose size or mtime changed, parses them in
this process or in a pool of processes (``prepare``), writes them in batches of
``BATCH_FILES`` files per transaction, drops files gone from disk, and updates the reference
graph. A cache found unreadable on the way is moved aside and built again.
"""

from __future__ import annotations

import gc
import itertools
import logging
import multiprocessing
import os
import sqlite3
import time
from collections.abc import Callable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import NamedTuple

import msgspec

from ctx_lsp import storage
from ctx_lsp.workspace.files import UNREADABLE, WorkspaceWalker
from ctx_lsp.workspace.index import apart as apart_work
from ctx_lsp.workspace.index import refgraph, texts
from ctx_lsp.workspace.index.db import (
    INSERT_SYMBOL,
    SET_META,
    IndexDb,
    RefreshStopped,
    masking_key,
    select_in,
    symbol_row,
    write_transaction,
)
from ctx_lsp.workspace.index.prepare import FileWork, pool_init, pool_prepare, prepare_file, token_plan
from ctx_lsp.workspace.index.terms import FTS_COLUMNS

log = logging.getLogger("ctx_lsp.index")

BATCH_FILES = 200
# A refresh of POOL_MIN_FILES changed files or more, or of POOL_MIN_SHARED files or more that hold
# POOL_MIN_BYTES of source, is parsed by a pool of POOL_PROCESSES when a core is free: a worker
# starts in ~0.25 s (it counts with rs-bpe). On the dev sets' trees (benchmarks/index_speed.py,
# medians of 3), 2.0 MB in 257 files indexes in 1.29 s against 1.43 s in one process, 6.4 MB in
# 120 files in 2.76 s against 2.92 s (p95 2.87 against 4.08 s), and a fresh process (`ctx-lsp
# index`) gains 25-45%; 1.1 MB in 182 files is 7% slower with the pool.
POOL_MIN_FILES = 300
POOL_MIN_BYTES = 1_500_000
POOL_MIN_SHARED = 20
POOL_PROCESSES = 2
APART_MIN_FILES = 300  # a refresh this large runs in a process of its own when asked (``apart``)

_INSERT_FTS = f"INSERT INTO symbols_fts(rowid, {', '.join(FTS_COLUMNS)}) VALUES (?, ?, ?, ?, ?, ?)"
_UPSERT_FILE = "INSERT OR REPLACE INTO files(rel, size, mtime_ns, sha256, error) VALUES (?, ?, ?, ?, ?)"


class IndexStats(msgspec.Struct, kw_only=True):
    """What one ``refresh`` did. ``symbols`` is the total in the index afterwards."""

    files_seen: int = 0
    files_indexed: int = 0
    files_unchanged: int = 0
    files_removed: int = 0
    files_skipped: int = 0
    symbols: int = 0
    edges: int = 0  # resolved references between workspace definitions, afterwards
    seconds: float = 0.0
    graph_seconds: float = 0.0  # of ``seconds``: resolving references and ranking (0 if unchanged)
    errors: list[str] = msgspec.field(default_factory=list)
    skipped: list[str] = msgspec.field(default_factory=list)  # "rel (reason)"
    processes: int = 1  # parsing processes used (2: a pool)


class _FileRow(NamedTuple):
    """A ``files`` row: what the index knows of a file on disk."""

    size: int
    mtime_ns: int
    sha256: str
    error: str | None


def refresh(
    db: IndexDb,
    progress: Callable[[int, int, str], None] | None = None,
    *,
    processes: int | None = None,
    apart: bool = False,
) -> IndexStats:
    """``_refresh``; a cache found unreadable on the way is moved aside and built again.
    ``apart``: a refresh of at least APART_MIN_FILES changed files runs in a process of its own
    (``_refresh_apart``), and falls back to this one if that process fails."""
    walked = None
    if apart and not db.stopping.is_set():
        walked = _walk(db)
        if len(_changed(_known(db), walked[0])) >= APART_MIN_FILES:
            try:
                return _refresh_apart(db, progress, processes)
            except apart_work.ApartFailed as err:
                log.warning("indexing in a process of its own failed (%s): indexing here instead", err)
                walked = None  # the child may have indexed some: walk again
    try:
        return _refresh(db, progress, processes=processes, walked=walked)
    except sqlite3.DatabaseError as err:
        if not storage.is_corruption(err):
            raise
        db.recover(err)
        return _refresh(db, progress, processes=processes)


def _refresh_apart(db: IndexDb, progress: Callable[[int, int, str], None] | None, processes: int | None) -> IndexStats:
    """``_refresh`` in a process of its own (``apart``), its start included in ``seconds``."""
    t0 = time.perf_counter()
    try:
        stats = msgspec.msgpack.decode(apart_work.run(db, "refresh", progress, processes), type=IndexStats)
    finally:
        with db.lock:
            db.generation += 1  # its rows changed under this process's caches (some, if it failed)
    stats.seconds = time.perf_counter() - t0
    return stats


def _walk(db: IndexDb) -> tuple[list, list[str]]:
    """The workspace's files to index, and those skipped with why."""
    walker = WorkspaceWalker(db.root, check_content=False)
    entries = walker.walk()
    return entries, [f"{s.rel} ({s.reason})" for s in walker.skipped]


def _known(db: IndexDb) -> dict[str, _FileRow]:
    with db.lock:
        return {
            r[0]: _FileRow._make(r[1:]) for r in db.conn.execute("SELECT rel, size, mtime_ns, sha256, error FROM files")
        }


def _changed(known: dict[str, _FileRow], entries: list) -> list:
    """The entries whose size or mtime differ from what the index knows."""
    out = []
    for e in entries:
        prev = known.get(e.rel)
        if prev is None or prev.size != e.size or prev.mtime_ns != e.mtime_ns:
            out.append(e)
    return out


def _refresh(
    db: IndexDb,
    progress: Callable[[int, int, str], None] | None = None,
    *,
    processes: int | None = None,
    walked: tuple[list, list[str]] | None = None,
) -> IndexStats:
    """Bring the index in line with the files on disk (see ``WorkspaceIndex.refresh``).

    By default a pool of 2 processes parses a large refresh (``POOL_MIN_FILES`` files, or
    ``POOL_MIN_BYTES`` of source) when a core is free (1-minute load average under cpu_count − 0.5):
    sympy (1,600 files) indexes in 9.3–10 s that way against 13–14 s in one process (load ≈1,
    benchmarks/index_speed.py). On a busy machine a pool gains little and can lose, and it costs
    memory (workers peak at ~200 MB on sympy's largest generated files).
    """
    t0 = time.perf_counter()
    entries, skipped = walked if walked is not None else _walk(db)
    stats = IndexStats(files_seen=len(entries))
    stats.skipped = list(skipped)
    stats.files_skipped = len(skipped)

    known = _known(db)
    changed = []
    for e in entries:
        prev = known.get(e.rel)
        if prev is not None and prev.size == e.size and prev.mtime_ns == e.mtime_ns:
            stats.files_unchanged += 1
            if prev.error and prev.error.startswith("skipped:"):
                stats.files_skipped += 1
                stats.skipped.append(f"{e.rel} ({prev.error.removeprefix('skipped: ')})")
        else:
            changed.append(e)

    if processes is None:
        large = len(changed) >= POOL_MIN_FILES or (
            len(changed) >= POOL_MIN_SHARED and sum(e.size for e in changed) >= POOL_MIN_BYTES
        )
        use_pool = large and _free_cores() >= 1
        processes = POOL_PROCESSES if use_pool else 0
    stats.processes = processes if processes > 1 and changed else 1
    gc_was_enabled = gc.isenabled()
    gc.disable()  # ASTs are acyclic; the cyclic GC only re-traverses them (≈25% of parse time)
    pool = None
    background = stats.processes == 1 and len(changed) >= 20 and (os.cpu_count() or 1) > 1
    if background:
        pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ctx-index-tokens")
    writer = _Writer(db, stats, pool, background)
    bulk = len(changed) >= BATCH_FILES
    if bulk:
        # Checkpoint every 64 MB of WAL instead of every 4 MB: fewer fsyncs, and hot pages
        # (FTS segments, b-tree interiors) are copied to the database once, not per batch.
        with db.lock:
            db.conn.execute("PRAGMA wal_autocheckpoint = 16384")
    procs = None
    try:
        if stats.processes > 1:
            masker = db.masker
            masking = (masker.disabled, masker.allowlist) if masker is not None else None
            procs = multiprocessing.get_context("spawn").Pool(
                stats.processes, initializer=pool_init, initargs=(db.encoding, masking)
            )
            args = [(e.rel, str(e.path), e.size, e.mtime_ns, _prev_sha(known, e.rel)) for e in changed]
            works: Iterable[FileWork] = procs.imap(pool_prepare, args, chunksize=4)
        else:
            works = (
                prepare_file(e.rel, e.path, e.size, e.mtime_ns, _prev_sha(known, e.rel), db.masker) for e in changed
            )
        batch: list[FileWork] = []
        for done, (e, work) in enumerate(zip(changed, works, strict=True), 1):
            if db.stopping.is_set():  # files not written keep their old stamps: the next refresh reads them
                log.info("indexing stopped after %d of %d files: the index is closing", done - 1, len(changed))
                raise RefreshStopped(f"stopped after {done - 1} of {len(changed)} files: the index is closing")
            batch.append(work)
            if len(batch) >= BATCH_FILES:
                writer.submit(batch)
                batch = []
            if progress is not None:
                progress(done, len(changed), e.rel)
        if batch:
            writer.submit(batch)
        writer.wait()
    finally:
        writer.close()  # before anything else: no batch may be written after this refresh ends
        if procs is not None:
            procs.terminate()
            procs.join()
        if pool is not None:
            pool.shutdown(wait=True)
        if gc_was_enabled:
            gc.enable()
        if bulk:
            with db.lock:
                db.conn.execute("PRAGMA wal_autocheckpoint = 1000")

    present = {e.rel for e in entries}
    gone = sorted(rel for rel in known if rel not in present)
    if gone:
        write(db, [FileWork(rel, 0, 0, action="remove") for rel in gone], stats)
    t_graph = time.perf_counter()
    if db.graph_dirty():  # this refresh, an earlier update_file, or another process
        refgraph.update_graph(db)
        stats.graph_seconds = time.perf_counter() - t_graph
    with db.lock:
        if bulk:
            # Fold the big write-ahead log of a bulk build into the database and truncate it: a
            # server keeps the database open for hours, and the log would stay on disk at up to
            # ``journal_size_limit`` (64 MB) next to it. (Busy readers only make this partial.)
            db.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        stats.symbols = db.conn.execute("SELECT count(*) FROM symbols").fetchone()[0]
    stats.edges = db.edge_count()
    stats.skipped.sort()
    stats.seconds = time.perf_counter() - t0
    return stats


class _Writer:
    """Writes a refresh's batches, in order. In the background (``background``: parsing in this
    process, on a machine with a second core), one thread writes batch k while this one parses
    batch k + 1: counting tokens (tiktoken), packing texts (zlib) and SQLite's work run without
    the GIL, so they overlap the parse, which holds it. One batch in flight at most, so memory
    stays at two batches and an error surfaces one batch late at worst."""

    def __init__(self, db: IndexDb, stats: IndexStats, pool: ThreadPoolExecutor | None, background: bool) -> None:
        self.db, self.stats, self.pool = db, stats, pool
        self.thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ctx-index-writer") if background else None
        self.pending: Future[None] | None = None

    def submit(self, batch: list[FileWork]) -> None:
        self.wait()
        if self.thread is None:
            write(self.db, batch, self.stats, self.pool)
        else:
            self.pending = self.thread.submit(write, self.db, batch, self.stats, self.pool)

    def wait(self) -> None:
        """Until the batch in flight is written (its error, if any, raised here)."""
        pending, self.pending = self.pending, None
        if pending is not None:
            pending.result()

    def close(self) -> None:
        if self.thread is not None:
            self.thread.shutdown(wait=True)


def _prev_sha(known: dict[str, _FileRow], rel: str) -> str | None:
    prev = known.get(rel)
    return prev.sha256 if prev else None


def _free_cores() -> int:
    """Cores not busy with other work (1-minute load average), at least 0."""
    try:
        load = os.getloadavg()[0]
    except OSError:
        return 0
    return max(0, int((os.cpu_count() or 1) - load + 0.5))


def _count_batch(
    db: IndexDb, batch: list[FileWork], pool: ThreadPoolExecutor | None, during: Callable[[], None] | None = None
) -> None:
    """Fill ``work.tokens`` for every parsed file of a batch, counting all texts at once.

    With a pool, a helper thread starts counting while this thread runs ``during`` (the
    FTS inserts), then both take chunks until none are left. Both halves mostly run
    without the GIL (tiktoken's encoder, SQLite's stepping), so on two cores they overlap:
    1.5x measured for counting alone.
    """
    plans = []
    texts: list[str] = []
    for work in batch:
        if work.parsed is not None and work.tokens is None:
            own_texts, assemble = token_plan(work.parsed)
            plans.append((work, len(texts), len(own_texts), assemble))
            texts.extend(own_texts)
    n = len(texts)
    counts = [0] * n
    count_batch = db.counter.count_batch
    starts = itertools.count(0, 32)  # next() is atomic: a shared queue of 32-text chunks

    def take_chunks() -> None:
        for start in starts:
            if start >= n:
                return
            counts[start : start + 32] = count_batch(texts[start : start + 32])

    helper = pool.submit(take_chunks) if pool is not None and n >= 64 else None
    try:
        if during is not None:
            during()
        take_chunks()
    finally:
        if helper is not None:
            helper.result()
    for work, start, size, assemble in plans:
        work.tokens = assemble(counts[start : start + size])


def write(db: IndexDb, batch: list[FileWork], stats: IndexStats | None, pool: ThreadPoolExecutor | None = None) -> None:
    """Apply a batch of file results in one write transaction (token counting included,
    overlapped with the FTS inserts)."""
    with db.lock, write_transaction(db.conn) as conn:
        next_id = _next_id(conn)
        fts_rows: list[tuple[int, str, str, str, str, str]] = []
        import_rows: list[tuple[str, str, str]] = []
        refs: list[tuple[int, str, int]] = []  # (source symbol id, target name, uses)
        pending: list[tuple[FileWork, int]] = []
        changed = False
        current = masking_key(db.masker)
        for work in batch:
            if work.action != "remove" and work.secrets != current:
                continue  # made before ``set_masker`` changed the masking: the next refresh redoes it
            if work.action != "replace":
                _apply(conn, work, stats)
                changed = changed or work.action in ("remove", "skip")
                continue
            changed = True
            parsed = work.parsed
            assert parsed is not None and work.fts is not None
            # Always, even for a file this refresh saw as new: another process sharing
            # the database may have indexed it meanwhile (cheap index lookups).
            _delete_rows(conn, work.rel)
            conn.execute(_UPSERT_FILE, (work.rel, work.size, work.mtime_ns, work.sha256, None))
            pending.append((work, next_id))
            fts_rows.extend((next_id + i, *terms) for i, terms in enumerate(work.fts))
            import_rows.extend((work.rel, local, target) for local, target in parsed.imports)
            first_id: dict[str, int] = {}  # an edge starts at the first symbol of its qualname
            for i, sym in enumerate(parsed.symbols):
                first_id.setdefault(sym.qualname, next_id + i)
            refs.extend((first_id[src], target, n) for src, target, n in parsed.refs)
            next_id += len(parsed.symbols)
            if stats is not None:
                stats.files_indexed += 1

        def insert_search_rows() -> None:
            conn.executemany(_INSERT_FTS, fts_rows)
            conn.executemany("INSERT INTO imports(path, local_name, target) VALUES (?, ?, ?)", import_rows)
            ids = _target_ids(conn, {target for _, target, _ in refs})
            conn.executemany(
                "INSERT OR REPLACE INTO edges(src, target, weight) VALUES (?, ?, ?)",
                [(src, ids[target], n) for src, target, n in refs],
            )

        _count_batch(db, [w for w, _ in pending], pool, during=insert_search_rows)
        conn.executemany(INSERT_SYMBOL, [row for w, first in pending for row in _symbol_rows(w, first)])
        if changed:  # centrality (and references into changed files) need a graph update
            conn.execute(SET_META, ("graph_dirty", os.urandom(8).hex()))
            # what the in-memory postings compare to find the rows gone and added (``postings``)
            conn.executemany(SET_META, [("next_id", str(next_id)), ("symbols_version", os.urandom(8).hex())])
            db.generation += 1


def _next_id(conn: sqlite3.Connection) -> int:
    """The id of the next symbol written: ids are never given twice, even after the symbols
    that held the highest ones are deleted (``postings.sync`` tells rows apart by id)."""
    stored = conn.execute("SELECT value FROM index_meta WHERE key = 'next_id'").fetchone()
    highest = conn.execute("SELECT max(id) FROM symbols").fetchone()[0] or 0
    return max(int(stored[0]) if stored else 0, highest + 1)


def _target_ids(conn: sqlite3.Connection, names: set[str]) -> dict[str, int]:
    """The ``targets`` id of each name, adding the names not there yet (unresolved)."""
    conn.executemany("INSERT OR IGNORE INTO targets(name) VALUES (?)", ((n,) for n in sorted(names)))
    return dict(select_in(conn, "SELECT name, id FROM targets WHERE name IN ({})", names))


def _symbol_rows(work: FileWork, first_id: int) -> list[tuple]:
    """``symbols`` rows of one parsed file, ids from ``first_id`` (texts packed here unless a
    pool worker did it)."""
    assert work.parsed is not None and work.tokens is not None
    syms = work.parsed.symbols
    packed = work.packed if work.packed is not None else [texts.pack(s.card, s.docstring, s.body) for s in syms]
    return [
        symbol_row(s, first_id + i, tokens, p)
        for i, (s, tokens, p) in enumerate(zip(syms, work.tokens, packed, strict=True))
    ]


def _delete_rows(conn: sqlite3.Connection, rel: str) -> None:
    # Edges first: they are found through their source symbols' rows. Their targets stay (other
    # files may use the same names); ``refgraph.update_graph`` drops the ones nothing uses.
    conn.execute("DELETE FROM edges WHERE src IN (SELECT id FROM symbols WHERE path = ?)", (rel,))
    conn.execute("DELETE FROM symbols_fts WHERE rowid IN (SELECT id FROM symbols WHERE path = ?)", (rel,))
    conn.execute("DELETE FROM symbols WHERE path = ?", (rel,))
    conn.execute("DELETE FROM imports WHERE path = ?", (rel,))


def _apply(conn: sqlite3.Connection, work: FileWork, stats: IndexStats | None) -> None:
    """Every action but "replace" (see ``write``)."""
    rel = work.rel
    if work.action == "remove":
        _delete_rows(conn, rel)
        conn.execute("DELETE FROM files WHERE rel = ?", (rel,))
        if stats is not None:
            stats.files_removed += 1
    elif work.action == "stat":
        conn.execute("UPDATE files SET size = ?, mtime_ns = ? WHERE rel = ?", (work.size, work.mtime_ns, rel))
        if stats is not None:
            stats.files_unchanged += 1
    elif work.action == "skip":
        _delete_rows(conn, rel)
        if work.reason == UNREADABLE:
            conn.execute("DELETE FROM files WHERE rel = ?", (rel,))  # retry next time
        else:  # remember the verdict so an unchanged binary file is not re-read
            conn.execute(_UPSERT_FILE, (rel, work.size, work.mtime_ns, work.sha256, f"skipped: {work.reason}"))
        if stats is not None:
            stats.files_skipped += 1
            stats.skipped.append(f"{rel} ({work.reason})")
    elif work.action == "error":
        # Keep the last good symbols: a half-typed edit must not empty the file's outline.
        conn.execute(_UPSERT_FILE, (rel, work.size, work.mtime_ns, work.sha256, work.reason))
        if stats is not None:
            stats.files_indexed += 1
            stats.errors.append(f"{rel}: {work.reason}")
    else:  # pragma: no cover - a programming error
        raise ValueError(f"unknown action {work.action!r}")
