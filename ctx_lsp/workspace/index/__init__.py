"""The workspace symbol index: SQLite (WAL) with an FTS5 table for lexical (BM25) search.

Kept in ``<root>/.ctx/index.sqlite3`` so that a restart on an indexed workspace only stats the
files (notes/perf-anchors.md §4: re-indexing costs seconds, revalidating by stat milliseconds).
Token counts of cards and bodies are computed once here, at index time, and stored: the
request path never tokenizes (perf-anchors, conclusion 3).

Search terms (how identifiers are split for the FTS table and for queries) are in ``terms``.
"""

from __future__ import annotations

import contextlib
import gc
import hashlib
import itertools
import logging
import multiprocessing
import operator
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import msgspec

from ctx_lsp import storage
from ctx_lsp.core.tokens import FALLBACK_ENCODING, counter_for
from ctx_lsp.workspace import graph
from ctx_lsp.workspace.files import (
    BINARY,
    MAX_FILE_BYTES,
    NOT_UTF8,
    UNREADABLE,
    PathRefused,
    WorkspaceWalker,
    classify_content,
    read_bounded,
)
from ctx_lsp.workspace.index.terms import (
    FTS_COLUMNS,
    MAX_QUERY_TERMS,
    fts_texts,
    query_terms,
    search_terms,
    split_identifier,
)
from ctx_lsp.workspace.parse import ParsedModule, Symbol, module_name_for, parse_module
from ctx_lsp.workspace.secrets import DEFAULT_MASKER, SecretMasker

__all__ = [
    "FTS_COLUMNS",
    "MAX_QUERY_TERMS",
    "SCHEMA_VERSION",
    "IndexStats",
    "IndexSummary",
    "IndexedSymbol",
    "SearchHit",
    "WorkspaceIndex",
    "masking_key",
    "query_terms",
    "search_terms",
    "split_identifier",
]

log = logging.getLogger("ctx_lsp.index")
SCHEMA_VERSION = "4"  # 2: the reference graph (edges, targets, centrality); 3: node degrees; 4: masked secrets
BATCH_FILES = 200
POOL_MIN_FILES = 300  # fewer changed files than this are parsed in-process (a pool costs ~0.5 s to start)
POOL_PROCESSES = 2
COUNT_CACHE_TEXTS = 4096  # texts whose token counts ``update_file`` remembers
# What ``update_file`` compares to say whether a file's symbols changed.
_change_key = operator.attrgetter(
    "qualname",
    "kind",
    "start_line",
    "end_line",
    "start_col",
    "end_col",
    "signature",
    "docstring",
    "parent",
    "card",
    "decorators",
    "body",
)
# bm25 column weights, in the order of ``FTS_COLUMNS``: names matter most.
FTS_WEIGHTS = (10.0, 4.0, 2.0, 1.0, 3.0)
_COLUMN_LABELS = {
    "qualname_terms": "name",
    "signature": "signature",
    "docstring": "docstring",
    "identifiers": "body",
    "path_terms": "path",
}


# The ``symbols`` columns, one per ``IndexedSymbol`` field and named after it: the three the
# index adds to a parsed symbol, the parsed fields stored as they are, then ``decorators``
# (a JSON list). ``symbol_row`` and ``row_symbol`` are the one mapping between the two.
_ADDED_FIELDS = ("id", "card_tokens", "body_tokens")
_PLAIN_FIELDS = tuple(f for f in Symbol.__struct_fields__ if f != "decorators")
SYMBOL_COLUMNS = (*_ADDED_FIELDS, *_PLAIN_FIELDS, "decorators")
_INSERT_SYMBOL = f"INSERT INTO symbols({', '.join(SYMBOL_COLUMNS)}) VALUES ({', '.join('?' * len(SYMBOL_COLUMNS))})"
_INSERT_FTS = f"INSERT INTO symbols_fts(rowid, {', '.join(FTS_COLUMNS)}) VALUES (?, ?, ?, ?, ?, ?)"
_UPSERT_FILE = "INSERT OR REPLACE INTO files(rel, size, mtime_ns, sha256, error) VALUES (?, ?, ?, ?, ?)"
_SELECT = "SELECT " + ", ".join(f"s.{c}" for c in SYMBOL_COLUMNS) + " FROM symbols s"
_SET_META = "INSERT OR REPLACE INTO index_meta(key, value) VALUES (?, ?)"


class IndexedSymbol(Symbol, frozen=True, kw_only=True):
    """A stored symbol: the parsed fields plus its row id and the token counts of its card and
    body (for the module symbol, ``body_tokens`` is the cost of the whole file, whose text is
    not stored)."""

    id: int
    card_tokens: int
    body_tokens: int


_plain_values = operator.attrgetter(*_PLAIN_FIELDS)
_encode_json = msgspec.json.Encoder().encode
_decode_json = msgspec.json.decode
_ROW_FIELDS = SYMBOL_COLUMNS[:-1]  # all but ``decorators``


def symbol_row(sym: Symbol, id: int, card_tokens: int, body_tokens: int) -> tuple:
    """The ``symbols`` row (``SYMBOL_COLUMNS``) of a parsed symbol."""
    decorators = _encode_json(sym.decorators).decode() if sym.decorators else "[]"
    return (id, card_tokens, body_tokens, *_plain_values(sym), decorators)


def row_symbol(row: tuple) -> IndexedSymbol:
    """The symbol stored in a ``symbols`` row (``SYMBOL_COLUMNS``, as ``_SELECT`` reads them)."""
    decorators = row[-1]
    return IndexedSymbol(
        **dict(zip(_ROW_FIELDS, row, strict=False)),
        decorators=tuple(_decode_json(decorators)) if decorators != "[]" else (),
    )


class SearchHit(msgspec.Struct, frozen=True, kw_only=True):
    """One search result: ``score`` is -bm25 (higher is better); ``matched`` says which query
    terms matched in which field, e.g. ``"name: invoice total; path: billing"``."""

    symbol: IndexedSymbol
    score: float
    matched: str


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


class IndexSummary(msgspec.Struct, frozen=True, kw_only=True):
    """Totals of the index: ``tokens`` is the token count of all indexed files."""

    files: int
    symbols: int
    files_with_errors: int
    card_tokens: int
    tokens: int
    edges: int = 0  # resolved def→ref edges (as of the last graph update)


@dataclass(slots=True)
class _Work:
    """The outcome of reading and parsing one changed file, written later in a batch."""

    rel: str
    size: int
    mtime_ns: int
    sha256: str = ""
    action: str = "replace"  # replace | stat | error | skip | remove
    reason: str = ""
    parsed: ParsedModule | None = None
    tokens: list[tuple[int, int]] | None = None  # (card, body) per symbol
    fts: list[tuple[str, str, str, str, str]] | None = None  # search text per symbol
    secrets: str = ""  # how secrets were masked in it (``masking_key``); stale results are dropped


def _token_plan(parsed: ParsedModule) -> tuple[list[str], Callable[[list[int]], list[tuple[int, int]]]]:
    """The texts to count for one file, and how to turn their counts into
    ``(card_tokens, body_tokens)`` per symbol.

    Each source line is counted about once: a leaf (function, method, variable) on its exact
    body; a container (class, module) as its own lines outside its children plus its
    children's totals, so a class is not re-tokenized on top of its methods. At the seams
    this can differ from counting the joined text by a token or so (runs of newlines split).
    """
    syms = parsed.symbols
    lines = parsed.lines
    n = len(syms)
    texts = [s.card for s in syms]  # texts[i] is symbol i's card
    own: list[list[int]] = [[] for _ in syms]  # indexes into texts making up i's own lines
    kids: dict[int, list[int]] = {}
    stack: list[int] = []
    for i, s in enumerate(syms):  # containers come before their children (source order)
        while stack and not (syms[stack[-1]].start_line <= s.start_line <= syms[stack[-1]].end_line):
            stack.pop()
        if stack and syms[stack[-1]].qualname == s.parent:
            kids.setdefault(stack[-1], []).append(i)
        if s.kind in ("module", "class"):
            stack.append(i)
    unique_kids: dict[int, list[int]] = {}
    for i, s in enumerate(syms):
        children = kids.get(i)
        if not children:
            own[i].append(len(texts))
            texts.append(s.body if s.kind != "module" else "".join(lines))
            continue
        by_range: dict[tuple[int, int], int] = {}
        for k in children:  # ``a = b = 1`` is two symbols over one range: count it once
            by_range.setdefault((syms[k].start_line, syms[k].end_line), k)
        unique_kids[i] = list(by_range.values())
        cur = s.start_line
        for start, end in sorted(by_range):
            if start > cur:
                own[i].append(len(texts))
                texts.append("".join(lines[cur:start]))
            cur = max(cur, end + 1)
        if cur <= s.end_line:
            own[i].append(len(texts))
            texts.append("".join(lines[cur : s.end_line + 1]))

    def assemble(counts: list[int]) -> list[tuple[int, int]]:
        body = [0] * n
        for i in range(n - 1, -1, -1):  # children (later in the list) first
            body[i] = sum(counts[j] for j in own[i]) + sum(body[k] for k in unique_kids.get(i, ()))
        return [(counts[i], body[i]) for i in range(n)]

    return texts, assemble


def _symbol_rows(work: _Work, first_id: int) -> list[tuple]:
    """``symbols`` rows of one parsed file, ids from ``first_id``."""
    assert work.parsed is not None and work.tokens is not None
    return [
        symbol_row(s, first_id + i, card_tokens, body_tokens)
        for i, (s, (card_tokens, body_tokens)) in enumerate(zip(work.parsed.symbols, work.tokens, strict=True))
    ]


def _classify(work: _Work, parsed: ParsedModule) -> _Work:
    if parsed.decode_error:
        work.action, work.reason = "skip", NOT_UTF8
    elif parsed.error is not None:
        work.action, work.reason = "error", parsed.error
    else:
        work.action, work.parsed = "replace", parsed
        work.fts = fts_texts(parsed)
    return work


def masking_key(masker: SecretMasker | None) -> str:
    """What the index records about masking (``index_meta.secrets``): rows made another way
    are rebuilt, so every stored text is masked the current way, once."""
    return masker.fingerprint if masker is not None else "off"


def _prepare_file(
    rel: str, path: Path, size: int, mtime_ns: int, prev_sha: str | None, masker: SecretMasker | None = None
) -> _Work:
    """Read, hash and parse one file (no database access), masking secrets with ``masker``."""
    work = _Work(rel, size, mtime_ns, secrets=masking_key(masker))
    try:  # the walk checked the size; a file that grew since is still capped
        data = read_bounded(path, MAX_FILE_BYTES, rel)
    except (OSError, PathRefused):
        work.action, work.reason = "skip", UNREADABLE
        return work
    work.sha256 = hashlib.sha256(data).hexdigest()
    if work.sha256 == prev_sha:
        work.action = "stat"  # touched, not changed
        return work
    if classify_content(data[:8192] if len(data) > 8192 else data) == BINARY:
        work.action, work.reason = "skip", BINARY
        return work
    return _classify(work, parse_module(rel, data, masker=masker))


_worker_count: Callable[[str], int] | None = None
_worker_masker: SecretMasker | None = None


def _pool_init(encoding: str, masking: tuple[tuple[str, ...], tuple[str, ...]] | None = None) -> None:
    global _worker_count, _worker_masker
    gc.disable()  # see ``refresh``: ASTs are acyclic
    _worker_count = counter_for(encoding).count
    _worker_masker = SecretMasker(*masking) if masking is not None else None


def _pool_prepare(args: tuple[str, str, int, int, str | None]) -> _Work:
    """A pool worker's share of a refresh: read, hash, parse (secrets masked) and count tokens
    for one file, so the parent only writes rows."""
    rel, path, size, mtime_ns, prev_sha = args
    work = _prepare_file(rel, Path(path), size, mtime_ns, prev_sha, _worker_masker)
    if work.parsed is not None and _worker_count is not None:
        texts, assemble = _token_plan(work.parsed)
        count = _worker_count
        work.tokens = assemble([count(t) for t in texts])
        work.parsed.lines = []  # only the token plan needed them: less to send back
    return work


def _free_cores() -> int:
    """Cores not busy with other work (1-minute load average), at least 0."""
    try:
        load = os.getloadavg()[0]
    except OSError:
        return 0
    return max(0, int((os.cpu_count() or 1) - load + 0.5))


_SCHEMA = """
CREATE TABLE IF NOT EXISTS index_meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS files(
    rel TEXT PRIMARY KEY, size INTEGER NOT NULL, mtime_ns INTEGER NOT NULL,
    sha256 TEXT NOT NULL, error TEXT);
CREATE TABLE IF NOT EXISTS symbols(
    id INTEGER PRIMARY KEY, qualname TEXT NOT NULL, name TEXT NOT NULL, kind TEXT NOT NULL,
    path TEXT NOT NULL, start_line INTEGER NOT NULL, end_line INTEGER NOT NULL,
    start_col INTEGER NOT NULL, end_col INTEGER NOT NULL, signature TEXT NOT NULL,
    docstring TEXT NOT NULL, decorators TEXT NOT NULL, parent TEXT NOT NULL,
    identifiers TEXT NOT NULL, card TEXT NOT NULL, body TEXT NOT NULL,
    card_tokens INTEGER NOT NULL, body_tokens INTEGER NOT NULL, secrets INTEGER NOT NULL DEFAULT 0);
CREATE INDEX IF NOT EXISTS symbols_path ON symbols(path, start_line);
CREATE INDEX IF NOT EXISTS symbols_qualname ON symbols(qualname);
CREATE INDEX IF NOT EXISTS symbols_name ON symbols(name);
CREATE TABLE IF NOT EXISTS imports(path TEXT NOT NULL, local_name TEXT NOT NULL, target TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS imports_path ON imports(path);
CREATE INDEX IF NOT EXISTS imports_target ON imports(target);
-- The reference graph: ``target`` is the file-local resolution of a name a definition uses;
-- ``targets`` maps it to an indexed symbol (``dst``), workspace-wide, after every change.
CREATE TABLE IF NOT EXISTS edges(
    path TEXT NOT NULL, src TEXT NOT NULL, target TEXT NOT NULL, weight INTEGER NOT NULL,
    PRIMARY KEY (path, src, target)) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS edges_src ON edges(src);
CREATE INDEX IF NOT EXISTS edges_target ON edges(target);
CREATE TABLE IF NOT EXISTS targets(target TEXT PRIMARY KEY, dst TEXT) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS targets_dst ON targets(dst);
CREATE TABLE IF NOT EXISTS centrality(
    qualname TEXT PRIMARY KEY, rank REAL NOT NULL, pct REAL NOT NULL, degree INTEGER NOT NULL) WITHOUT ROWID;
CREATE VIRTUAL TABLE IF NOT EXISTS symbols_fts USING fts5(
    qualname_terms, signature, docstring, identifiers, path_terms,
    tokenize = 'unicode61 remove_diacritics 2');
"""
_OWN_TABLES = ("files", "symbols", "imports", "symbols_fts", "edges", "targets", "centrality", "index_meta")


def _connect(db_path: Path, *, readonly: bool = False) -> sqlite3.Connection:
    conn = sqlite3.connect(db_path, isolation_level=None, check_same_thread=False)
    conn.execute("PRAGMA busy_timeout = 5000")
    if readonly:
        conn.execute("PRAGMA query_only = ON")
    return conn


class WorkspaceIndex:
    """Symbols of one workspace, persisted in SQLite and searchable with BM25.

    Thread-safe: writes are serialised by a lock on one connection; reads use one connection
    per thread (WAL lets them run while a refresh writes). Two processes may share the file.
    """

    def __init__(
        self,
        root: Path,
        db_path: Path | None = None,
        encoding: str = FALLBACK_ENCODING,
        masker: SecretMasker | None = DEFAULT_MASKER,
    ) -> None:
        """``masker`` masks secrets in every file before it is parsed (None: no masking)."""
        self.root = Path(root).resolve()
        self.masker = masker
        self.db_path = Path(db_path) if db_path is not None else self.root / ".ctx" / "index.sqlite3"
        self.encoding = encoding
        self._counter = counter_for(encoding)
        self._lock = threading.RLock()
        self._local = threading.local()
        self._readers: list[sqlite3.Connection] = []
        self._closed = False
        self._graph_generation = 0  # bumped by every write that changes symbols or references
        self._count_cache: dict[str, int] = {}  # text → tokens, for re-indexing edited files
        self._recovered: str | None = None  # what happened to an unreadable cache, until told
        try:
            self._open()
        except sqlite3.DatabaseError as err:
            if not storage.is_corruption(err):
                raise
            self._recover(err)

    # -- setup -----------------------------------------------------------------------------

    def _open(self) -> None:
        storage.private_file(self.db_path)
        self._conn = _connect(self.db_path)
        try:
            self._conn.execute("PRAGMA journal_mode = WAL")
            self._conn.execute("PRAGMA synchronous = NORMAL")  # WAL-safe; a crash loses the last batch only
            self._conn.execute("PRAGMA temp_store = MEMORY")
            # Checkpoints can leave a big WAL file behind after a bulk build; cap what stays on disk.
            self._conn.execute(f"PRAGMA journal_size_limit = {64 * 1024 * 1024}")
            self._init_schema()
        except BaseException:
            self._conn.close()
            raise

    def _recover(self, err: sqlite3.DatabaseError) -> None:
        """The index is a cache: one that cannot be read is moved aside (for a bug report) and
        rebuilt from the files, and the user is told — never a crash, never a silent loss."""
        with self._lock:
            for conn in self._readers:
                conn.close()
            self._readers.clear()
            self._local = threading.local()
            with contextlib.suppress(sqlite3.Error, AttributeError):
                self._conn.close()
            aside = storage.move_aside(self.db_path)
            self._open()
            self._graph_generation += 1
        self._recovered = (
            f"the index cache {self.db_path} could not be read ({err}): moved it to {aside.name}; "
            "the index is built again from the files"
        )
        log.warning("%s", self._recovered)

    def take_recovered(self) -> str | None:
        """The message about a cache that was found unreadable and rebuilt (once)."""
        message, self._recovered = self._recovered, None
        return message

    def _init_schema(self) -> None:
        with self._lock:
            conn = self._conn
            conn.execute("BEGIN IMMEDIATE")
            try:
                have = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
                meta: dict[str, str] = {}
                if "index_meta" in have:
                    meta = dict(conn.execute("SELECT key, value FROM index_meta").fetchall())
                wanted = {
                    "schema": SCHEMA_VERSION,
                    "encoding": self._counter.encoding,
                    "secrets": masking_key(self.masker),
                }
                if meta and {k: meta.get(k) for k in wanted} != wanted:
                    # Another schema, tokenizer or way of masking secrets: the stored rows are
                    # a stale cache; rebuild.
                    for table in _OWN_TABLES:
                        conn.execute(f"DROP TABLE IF EXISTS {table}")
                # Statement by statement: executescript() would COMMIT our transaction.
                for stmt in _SCHEMA.split(";"):
                    if stmt.strip():
                        conn.execute(stmt)
                conn.executemany("INSERT OR REPLACE INTO index_meta(key, value) VALUES (?, ?)", sorted(wanted.items()))
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise

    def set_masker(self, masker: SecretMasker | None) -> bool:
        """Mask secrets with ``masker`` from now on. When it masks differently from the one the
        rows were made with, the index is emptied (a refresh rebuilds it): no text masked the
        old way, or not at all, stays visible. Returns whether it was emptied."""
        with self._lock:
            old = masking_key(self.masker)
            self.masker = masker
            if masking_key(masker) == old:
                return False
            self._graph_generation += 1
            self._count_cache.clear()
            self._init_schema()
            return True

    def _reader(self) -> sqlite3.Connection:
        if self._closed:
            raise RuntimeError("WorkspaceIndex is closed")
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = _connect(self.db_path, readonly=True)
            self._local.conn = conn
            with self._lock:
                self._readers.append(conn)
        return conn

    def close(self) -> None:
        """Close every connection. The index can not be used afterwards."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            for conn in self._readers:
                conn.close()
            self._readers.clear()
            with contextlib.suppress(sqlite3.Error):
                self._conn.execute("PRAGMA optimize")
            self._conn.close()

    def __enter__(self) -> WorkspaceIndex:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- indexing --------------------------------------------------------------------------

    def refresh(
        self, progress: Callable[[int, int, str], None] | None = None, *, processes: int | None = None
    ) -> IndexStats:
        """Bring the index in line with the files on disk (see ``_refresh``); a cache found
        unreadable on the way is moved aside and built again."""
        try:
            return self._refresh(progress, processes=processes)
        except sqlite3.DatabaseError as err:
            if not storage.is_corruption(err):
                raise
            self._recover(err)
            return self._refresh(progress, processes=processes)

    def _refresh(
        self, progress: Callable[[int, int, str], None] | None = None, *, processes: int | None = None
    ) -> IndexStats:
        """Bring the index in line with the files on disk.

        Unchanged files (same size and mtime) are not read; changed ones are hashed and only
        re-parsed when the content differs; files gone from disk lose their rows. A file with
        a syntax error keeps its last good symbols and records the error. ``progress`` is
        called as ``(done, total, rel)`` over the files that need reading.

        ``processes``: parse in a pool of that many processes (0 or 1: in this process). By
        default a pool of 2 is used for a large refresh when a core is free (1-minute load
        average under cpu_count − 0.5): sympy indexes in 9.3–10 s that way against 13–14 s in
        one process (load ≈1, benchmarks/index_speed.py); on a busy machine a pool gains little
        and can lose (perf-anchors §2), and costs memory (workers peak at ~200 MB on sympy's
        largest generated files).
        """
        t0 = time.perf_counter()
        walker = WorkspaceWalker(self.root, check_content=False)
        entries = walker.walk()
        stats = IndexStats(files_seen=len(entries))
        stats.skipped = [f"{s.rel} ({s.reason})" for s in walker.skipped]
        stats.files_skipped = len(walker.skipped)

        with self._lock:
            known = {
                r[0]: (r[1], r[2], r[3], r[4])
                for r in self._conn.execute("SELECT rel, size, mtime_ns, sha256, error FROM files")
            }
        changed = []
        for e in entries:
            prev = known.get(e.rel)
            if prev is not None and prev[0] == e.size and prev[1] == e.mtime_ns:
                stats.files_unchanged += 1
                if prev[3] and prev[3].startswith("skipped:"):
                    stats.files_skipped += 1
                    stats.skipped.append(f"{e.rel} ({prev[3].removeprefix('skipped: ')})")
            else:
                changed.append(e)

        if processes is None:
            use_pool = len(changed) >= POOL_MIN_FILES and _free_cores() >= 1
            processes = POOL_PROCESSES if use_pool else 0
        stats.processes = processes if processes > 1 and changed else 1
        gc_was_enabled = gc.isenabled()
        gc.disable()  # ASTs are acyclic; the cyclic GC only re-traverses them (≈25% of parse time)
        pool = None
        if stats.processes == 1 and len(changed) >= 20 and (os.cpu_count() or 1) > 1:
            pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ctx-index-tokens")
        bulk = len(changed) >= BATCH_FILES
        if bulk:
            # Checkpoint every 64 MB of WAL instead of every 4 MB: fewer fsyncs, and hot pages
            # (FTS segments, b-tree interiors) are copied to the database once, not per batch.
            with self._lock:
                self._conn.execute("PRAGMA wal_autocheckpoint = 16384")
        procs = None
        try:
            if stats.processes > 1:
                masker = self.masker
                masking = (masker.disabled, masker.allowlist) if masker is not None else None
                procs = multiprocessing.get_context("spawn").Pool(
                    stats.processes, initializer=_pool_init, initargs=(self.encoding, masking)
                )
                args = [(e.rel, str(e.path), e.size, e.mtime_ns, _prev_sha(known, e.rel)) for e in changed]
                works: Iterable[_Work] = procs.imap(_pool_prepare, args, chunksize=4)
            else:
                works = (self._prepare(e.rel, e.path, e.size, e.mtime_ns, _prev_sha(known, e.rel)) for e in changed)
            batch: list[_Work] = []
            for done, (e, work) in enumerate(zip(changed, works, strict=True), 1):
                batch.append(work)
                if len(batch) >= BATCH_FILES:
                    self._write(batch, stats, pool)
                    batch = []
                if progress is not None:
                    progress(done, len(changed), e.rel)
            if batch:
                self._write(batch, stats, pool)
        finally:
            if procs is not None:
                procs.terminate()
                procs.join()
            if pool is not None:
                pool.shutdown(wait=True)
            if gc_was_enabled:
                gc.enable()
            if bulk:
                with self._lock:
                    self._conn.execute("PRAGMA wal_autocheckpoint = 1000")

        present = {e.rel for e in entries}
        gone = sorted(rel for rel in known if rel not in present)
        if gone:
            self._write([_Work(rel, 0, 0, action="remove") for rel in gone], stats)
        t_graph = time.perf_counter()
        if self.graph_dirty():  # this refresh, an earlier update_file, or another process
            self.update_graph()
            stats.graph_seconds = time.perf_counter() - t_graph
        with self._lock:
            stats.symbols = self._conn.execute("SELECT count(*) FROM symbols").fetchone()[0]
        stats.edges = self.edge_count()
        stats.skipped.sort()
        stats.seconds = time.perf_counter() - t0
        return stats

    def _prepare(self, rel: str, path: Path, size: int, mtime_ns: int, prev_sha: str | None) -> _Work:
        """Read, hash and parse one file (no database access)."""
        return _prepare_file(rel, path, size, mtime_ns, prev_sha, self.masker)

    def _classify_parse(self, work: _Work, parsed: ParsedModule) -> _Work:
        return _classify(work, parsed)

    def _count_batch(
        self, batch: list[_Work], pool: ThreadPoolExecutor | None, during: Callable[[], None] | None = None
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
                own_texts, assemble = _token_plan(work.parsed)
                plans.append((work, len(texts), len(own_texts), assemble))
                texts.extend(own_texts)
        n = len(texts)
        counts = [0] * n
        count = self._counter.count
        starts = itertools.count(0, 32)  # next() is atomic: a shared queue of 32-text chunks

        def take_chunks() -> None:
            for start in starts:
                if start >= n:
                    return
                counts[start : start + 32] = [count(t) for t in texts[start : start + 32]]

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

    def _write(self, batch: list[_Work], stats: IndexStats | None, pool: ThreadPoolExecutor | None = None) -> None:
        """Apply a batch of file results in one write transaction (token counting included,
        overlapped with the FTS inserts)."""
        with self._lock:
            conn = self._conn
            conn.execute("BEGIN IMMEDIATE")
            try:
                next_id = (conn.execute("SELECT max(id) FROM symbols").fetchone()[0] or 0) + 1
                fts_rows: list[tuple[int, str, str, str, str, str]] = []
                import_rows: list[tuple[str, str, str]] = []
                edge_rows: list[tuple[str, str, str, int]] = []
                pending: list[tuple[_Work, int]] = []
                changed = False
                current = masking_key(self.masker)
                for work in batch:
                    if work.action != "remove" and work.secrets != current:
                        continue  # made before ``set_masker`` changed the masking: the next refresh redoes it
                    if work.action != "replace":
                        self._apply(conn, work, stats)
                        changed = changed or work.action in ("remove", "skip")
                        continue
                    changed = True
                    parsed = work.parsed
                    assert parsed is not None and work.fts is not None
                    # Always, even for a file this refresh saw as new: another process sharing
                    # the database may have indexed it meanwhile (cheap index lookups).
                    self._delete_rows(conn, work.rel)
                    conn.execute(_UPSERT_FILE, (work.rel, work.size, work.mtime_ns, work.sha256, None))
                    pending.append((work, next_id))
                    fts_rows.extend((next_id + i, *texts) for i, texts in enumerate(work.fts))
                    import_rows.extend((work.rel, local, target) for local, target in parsed.imports)
                    edge_rows.extend((work.rel, src, target, n) for src, target, n in parsed.refs)
                    next_id += len(parsed.symbols)
                    if stats is not None:
                        stats.files_indexed += 1

                def insert_search_rows() -> None:
                    conn.executemany(_INSERT_FTS, fts_rows)
                    conn.executemany("INSERT INTO imports(path, local_name, target) VALUES (?, ?, ?)", import_rows)
                    conn.executemany(
                        "INSERT OR REPLACE INTO edges(path, src, target, weight) VALUES (?, ?, ?, ?)", edge_rows
                    )

                self._count_batch([w for w, _ in pending], pool, during=insert_search_rows)
                conn.executemany(_INSERT_SYMBOL, [row for w, first in pending for row in _symbol_rows(w, first)])
                if changed:  # centrality (and references into changed files) need a graph update
                    conn.execute(_SET_META, ("graph_dirty", "1"))
                    self._graph_generation += 1
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise

    def _delete_rows(self, conn: sqlite3.Connection, rel: str) -> int:
        n = conn.execute(
            "DELETE FROM symbols_fts WHERE rowid IN (SELECT id FROM symbols WHERE path = ?)", (rel,)
        ).rowcount
        conn.execute("DELETE FROM symbols WHERE path = ?", (rel,))
        conn.execute("DELETE FROM imports WHERE path = ?", (rel,))
        conn.execute("DELETE FROM edges WHERE path = ?", (rel,))
        return n

    def _apply(self, conn: sqlite3.Connection, work: _Work, stats: IndexStats | None) -> None:
        """Every action but "replace" (see ``_write``)."""
        rel = work.rel
        if work.action == "remove":
            self._delete_rows(conn, rel)
            conn.execute("DELETE FROM files WHERE rel = ?", (rel,))
            if stats is not None:
                stats.files_removed += 1
        elif work.action == "stat":
            conn.execute("UPDATE files SET size = ?, mtime_ns = ? WHERE rel = ?", (work.size, work.mtime_ns, rel))
            if stats is not None:
                stats.files_unchanged += 1
        elif work.action == "skip":
            self._delete_rows(conn, rel)
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

    def update_file(self, rel: str, source: bytes | None) -> bool:
        """Re-index one file from ``source`` (e.g. an unsaved buffer) or, when None, from disk.

        Returns whether the file's symbols changed. A syntax error keeps the old symbols and
        returns False; a file missing from disk (``source`` None) is removed, and so is one the
        walk would leave out (ignored, outside the root after symlinks, too large). The file's disk
        size and mtime are recorded, so a later ``refresh`` leaves these symbols alone until
        the file changes on disk.
        """
        rel = rel.replace("\\", "/").lstrip("/")
        too_large = source is not None and len(source) > MAX_FILE_BYTES
        if too_large or WorkspaceWalker(self.root).excluded(rel) is not None:
            return self.remove_file(rel)  # the walk would leave it out: so does an open buffer
        path = self.root / rel
        try:
            st = path.stat()
            size, mtime_ns = st.st_size, st.st_mtime_ns
        except OSError:
            size, mtime_ns = -1, -1
        if source is None:
            try:
                source = read_bounded(path, MAX_FILE_BYTES, rel)
            except (OSError, PathRefused):
                return self.remove_file(rel)
        masker = self.masker
        work = _Work(rel, size, mtime_ns, sha256=hashlib.sha256(source).hexdigest(), secrets=masking_key(masker))
        with self._lock:
            conn = self._conn
            prev = conn.execute("SELECT sha256, error FROM files WHERE rel = ?", (rel,)).fetchone()
            if prev is not None and prev[0] == work.sha256:
                conn.execute("UPDATE files SET size = ?, mtime_ns = ? WHERE rel = ?", (size, mtime_ns, rel))
                return False
            old = [row_symbol(r) for r in conn.execute(f"{_SELECT} WHERE s.path = ? ORDER BY s.id", (rel,))]
        if b"\x00" in source[:8192]:
            work.action, work.reason = "skip", BINARY
        else:
            self._classify_parse(work, parse_module(rel, source, masker=masker))
        if work.parsed is not None:
            self._count_cached(work)
        self._write([work], None)
        if work.action in ("replace", "skip"):
            new = [s.qualname for s in work.parsed.symbols] if work.parsed is not None else []
            self._resolve_local(rel, {s.qualname for s in old}, set(new))
        if work.action != "replace":
            return work.action == "skip" and bool(old)
        assert work.parsed is not None
        return list(map(_change_key, old)) != list(map(_change_key, work.parsed.symbols))

    def _count_cached(self, work: _Work) -> None:
        """Token counts for one re-indexed file, reusing the counts of texts seen before: an
        edit changes one symbol, not the file's other bodies and cards."""
        assert work.parsed is not None
        texts, assemble = _token_plan(work.parsed)
        cache = self._count_cache
        if len(cache) + len(texts) > COUNT_CACHE_TEXTS:
            cache.clear()
        count = self._counter.count
        counts = []
        for text in texts:
            n = cache.get(text)
            if n is None:
                n = cache[text] = count(text)
            counts.append(n)
        work.tokens = assemble(counts)

    def remove_file(self, rel: str) -> bool:
        """Drop a file and its symbols; returns whether it had any."""
        rel = rel.replace("\\", "/").lstrip("/")
        with self._lock:
            old = {r[0] for r in self._conn.execute("SELECT qualname FROM symbols WHERE path = ?", (rel,))}
            self._write([_Work(rel, 0, 0, action="remove")], None)
            if old:
                self._resolve_local(rel, old, set())
        return bool(old)

    # -- the reference graph ---------------------------------------------------------------

    def graph_dirty(self) -> bool:
        """Whether symbols or references changed since the centrality was last computed."""
        row = self._reader().execute("SELECT value FROM index_meta WHERE key = 'graph_dirty'").fetchone()
        return row is not None and row[0] == "1"

    def _resolve_local(self, rel: str, old: set[str], new: set[str]) -> None:
        """After one file changed: resolve its new references, and re-resolve references
        elsewhere that pointed at its vanished symbols or may now point at its new ones — so
        neighbours are right at once. Centrality waits for ``update_graph`` (it is global)."""
        with self._lock:
            conn = self._conn
            module = self._module_of(rel)
            affected = {
                r[0]
                for r in conn.execute(
                    "SELECT DISTINCT e.target FROM edges e LEFT JOIN targets t ON t.target = e.target "
                    "WHERE e.path = ? AND t.target IS NULL",
                    (rel,),
                )
            }
            gone = sorted(old - new)
            for chunk in _chunks(gone):
                marks = ", ".join("?" * len(chunk))
                affected.update(r[0] for r in conn.execute(f"SELECT target FROM targets WHERE dst IN ({marks})", chunk))
            appeared = sorted(new - old)
            for chunk in _chunks(appeared):
                marks = ", ".join("?" * len(chunk))
                affected.update(
                    r[0] for r in conn.execute(f"SELECT target FROM targets WHERE target IN ({marks})", chunk)
                )
            if module:  # unresolved names inside this module (``mod.new_function``)
                affected.update(
                    r[0]
                    for r in conn.execute(
                        "SELECT target FROM targets WHERE dst IS NULL AND target > ? AND target < ?",
                        (module + ".", module + "/"),
                    )
                )
            if not affected:
                return
            resolver = graph.Resolver(_KindLookup(conn), _ModuleLookup(conn), _ImportLookup(conn), _StarLookup(conn))
            rows = [(target, resolver.resolve(target)) for target in sorted(affected)]
            conn.execute("BEGIN IMMEDIATE")
            try:
                conn.executemany("INSERT OR REPLACE INTO targets(target, dst) VALUES (?, ?)", rows)
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise

    def update_graph(self) -> float:
        """Resolve every reference against the whole workspace and recompute centrality
        (PageRank over the def→ref graph, warm-started from the previous ranks). Returns the
        seconds it took. Reads run on a snapshot without holding the write lock; a write that
        lands meanwhile leaves the graph marked dirty for the next call."""
        t0 = time.perf_counter()
        generation = self._graph_generation
        conn = self._reader()
        conn.execute("BEGIN")  # one consistent snapshot for all the reads below
        try:
            kinds: dict[str, str] = {}
            module_paths: dict[str, str] = {}
            for qualname, kind, path in conn.execute("SELECT qualname, kind, path FROM symbols"):
                if kinds.get(qualname) in (None, "module"):
                    kinds[qualname] = kind
                if kind == "module":
                    module_paths[qualname] = path
            imports: dict[str, dict[str, str]] = {}
            stars: dict[str, list[str]] = {}
            for path, local, target in conn.execute("SELECT path, local_name, target FROM imports ORDER BY rowid"):
                if local == "*":
                    stars.setdefault(path, []).append(target)
                else:
                    imports.setdefault(path, {})[local] = target
            stored = dict(conn.execute("SELECT target, dst FROM targets").fetchall())
            resolver = graph.Resolver(kinds, module_paths, imports, stars)
            resolved: dict[str, str | None] = {}
            index_of: dict[str, int] = {}
            names: list[str] = []
            weights: dict[int, float] = {}  # (src << 32 | dst) → weight: int keys, not tuples
            for src, target, count in conn.execute("SELECT src, target, weight FROM edges"):
                dst = resolved.get(target, "")
                if dst == "":
                    dst = resolved[target] = resolver.resolve(target)
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
        del kinds, module_paths, imports, stars, resolver
        start = [previous.get(q, 0.0) for q in names] if previous else None
        mask = (1 << 32) - 1
        ranks, _ = graph.pagerank(len(names), ((k >> 32, k & mask, w) for k, w in weights.items()), start=start)
        rank_of = dict(zip(names, ranks, strict=True))
        pct = graph.percentiles(rank_of)
        degree = [0] * len(names)
        for key in weights:
            degree[key >> 32] += 1
            degree[key & mask] += 1
        changed_targets = [(t, d) for t, d in resolved.items() if stored.get(t, "") != d]
        dropped = [(t,) for t in stored if t not in resolved]
        with self._lock:
            conn = self._conn
            conn.execute("BEGIN IMMEDIATE")
            try:
                conn.executemany("DELETE FROM targets WHERE target = ?", dropped)
                conn.executemany("INSERT OR REPLACE INTO targets(target, dst) VALUES (?, ?)", changed_targets)
                conn.execute("DELETE FROM centrality")
                conn.executemany(
                    "INSERT INTO centrality(qualname, rank, pct, degree) VALUES (?, ?, ?, ?)",
                    [(q, rank_of[q], pct[q], degree[i]) for i, q in enumerate(names)],
                )
                conn.execute(_SET_META, ("edges", str(len(weights))))
                if self._graph_generation == generation:
                    conn.execute(_SET_META, ("graph_dirty", "0"))
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
        return time.perf_counter() - t0

    def edge_count(self) -> int:
        """Resolved def→ref edges as of the last ``update_graph``."""
        row = self._reader().execute("SELECT value FROM index_meta WHERE key = 'edges'").fetchone()
        return int(row[0]) if row else 0

    # -- queries ---------------------------------------------------------------------------

    def search(self, query: str, limit: int = 200, kinds: set[str] | None = None) -> list[SearchHit]:
        """Symbols matching any term of ``query``, best first; ties by qualname, path, line.

        ``score`` = −bm25 over all columns (weighted: name 10, signature 4, docstring 2, body
        identifiers 1, path 3) plus −bm25 of the name column alone. Why the second part: FTS5
        normalises by the length of the whole row and saturates each term, so a one-line
        ``__all__ = ["calculate_invoice_total"]`` would otherwise outrank the definition of
        ``calculate_invoice_total``; a match on the symbol's own name must win.

        Any text is accepted: only identifier-like words are used, so quotes, parentheses
        and FTS operators in the query are inert. No usable terms → [].
        """
        terms = query_terms(query)
        if not terms or limit <= 0:
            return []
        any_term = " OR ".join(f'"{t}"' for t in terms)
        weights = ", ".join(str(w) for w in FTS_WEIGHTS)
        name_weights = ", ".join(str(w if i == 0 else 0.0) for i, w in enumerate(FTS_WEIGHTS))
        # One scan ranks everything from the FTS index alone; symbol rows are fetched for the
        # top hits only (joining every match first made common-word queries 4x slower).
        sql = (
            f"SELECT f.rowid, bm25(symbols_fts, {weights}) + bm25(symbols_fts, {name_weights}) AS r FROM symbols_fts f"
        )
        params: list[object] = []
        if kinds:
            kind_list = sorted(kinds)
            marks = ", ".join("?" * len(kind_list))
            sql += f" JOIN symbols s ON s.id = f.rowid WHERE symbols_fts MATCH ? AND s.kind IN ({marks})"
            params = [any_term, *kind_list]
        else:
            sql += " WHERE symbols_fts MATCH ?"
            params = [any_term]
        # A little over the limit, so the content-based tie-break below decides the cut.
        sql += " ORDER BY r, f.rowid LIMIT ?"
        params.append(int(limit) + 32)
        conn = self._reader()
        try:
            ranked = conn.execute(sql, params).fetchall()
            if not ranked:
                return []
            ids = [r[0] for r in ranked]
            marks = ", ".join("?" * len(ids))
            found = {sym.id: sym for sym in map(row_symbol, conn.execute(f"{_SELECT} WHERE s.id IN ({marks})", ids))}
            texts = {
                r[0]: r[1:]
                for r in conn.execute(
                    f"SELECT rowid, {', '.join(FTS_COLUMNS)} FROM symbols_fts WHERE rowid IN ({marks})", ids
                )
            }
        except sqlite3.OperationalError:  # belt and braces: terms are \w+ and quoted
            return []
        scored = [(-rank, found[i]) for i, rank in ranked if i in found]
        scored.sort(key=lambda x: (-x[0], x[1].qualname, x[1].path, x[1].start_line))
        hits = []
        for score, sym in scored[:limit]:
            parts = []
            for label, text in zip(FTS_COLUMNS, texts.get(sym.id, ()), strict=False):
                words = set(text.split())
                matched = [t for t in terms if t in words]
                if matched:
                    parts.append(f"{_COLUMN_LABELS[label]}: {' '.join(matched)}")
            hits.append(SearchHit(symbol=sym, score=score, matched="; ".join(parts)))
        return hits

    def get_all(self, qualname: str) -> list[IndexedSymbol]:
        """Every symbol with this qualname (overloads, property setters, redefinitions)."""
        rows = self._reader().execute(f"{_SELECT} WHERE s.qualname = ? ORDER BY s.path, s.start_line", (qualname,))
        return [row_symbol(r) for r in rows]

    def get(self, qualname: str) -> IndexedSymbol | None:
        """The symbol with this qualname; of several, the first that is not an ``@overload`` stub."""
        found = self.get_all(qualname)
        if not found:
            return None
        for sym in found:
            if not any(d.rsplit(".", 1)[-1] == "overload" for d in sym.decorators):
                return sym
        return found[0]

    def symbols_in(self, rel: str) -> list[IndexedSymbol]:
        """The symbols of one file in source order (the module symbol first)."""
        rows = self._reader().execute(f"{_SELECT} WHERE s.path = ? ORDER BY s.start_line, s.id", (rel,))
        return [row_symbol(r) for r in rows]

    def symbol_at(self, rel: str, line: int) -> IndexedSymbol | None:
        """The innermost symbol of ``rel`` whose range contains the 0-based ``line``."""
        row = (
            self._reader()
            .execute(
                f"{_SELECT} WHERE s.path = ? AND s.start_line <= ? AND s.end_line >= ? "
                "ORDER BY s.start_line DESC, s.end_line ASC, s.id LIMIT 1",
                (rel, line, line),
            )
            .fetchone()
        )
        return row_symbol(row) if row else None

    def imports_of(self, rel: str) -> list[tuple[str, str]]:
        """``(local_name, target_qualname)`` pairs of one file."""
        rows = self._reader().execute("SELECT local_name, target FROM imports WHERE path = ? ORDER BY rowid", (rel,))
        return [(r[0], r[1]) for r in rows]

    def importers_of(self, module: str) -> list[str]:
        """Modules (qualnames, sorted) that import ``module`` or anything inside it
        (``import m``, ``from m import x``, ``from m import *``, relative forms included)."""
        # A range instead of LIKE 'm.%': it uses the index, and "_" in names is not a wildcard.
        # "/" is the character right after "." in ASCII, so [m. , m/) is every "m.<anything>".
        rows = self._reader().execute(
            "SELECT DISTINCT coalesce(s.qualname, i.path) FROM imports i "
            "LEFT JOIN symbols s ON s.path = i.path AND s.kind = 'module' "
            "WHERE (i.target = ? OR (i.target >= ? AND i.target < ?)) AND i.path NOT IN "
            "(SELECT path FROM symbols WHERE kind = 'module' AND qualname = ?)",
            (module, module + ".", module + "/", module),
        )
        return sorted(r[0] for r in rows)

    def resolve_name(self, name: str, from_rel: str | None = None) -> IndexedSymbol | None:
        """Find the symbol a (possibly dotted) name refers to.

        Order: exact qualname; then, from ``from_rel``, the file's own module and its imports
        (following re-exports through packages' ``__init__``); then a unique ``*.name`` suffix.
        """
        name = name.strip().strip(".")
        if not name:
            return None
        sym = self.get(name)
        if sym is not None:
            return sym
        if from_rel:
            from_rel = from_rel.replace("\\", "/").lstrip("/")
            for candidate in self._candidates(name, from_rel):
                sym = self._follow(candidate, 0)
                if sym is not None:
                    return sym
        return self._follow(name, 0)  # re-exports (``pkg.Name``), then a unique suffix

    def _module_of(self, rel: str) -> str:
        row = (
            self._reader().execute("SELECT qualname FROM symbols WHERE path = ? AND kind = 'module'", (rel,)).fetchone()
        )
        return row[0] if row else module_name_for(rel)

    def _candidates(self, name: str, rel: str) -> list[str]:
        head, _, rest = name.partition(".")
        out = [f"{self._module_of(rel)}.{name}"]
        stars = []
        for local, target in self.imports_of(rel):
            if local == head:
                out.append(f"{target}.{rest}" if rest else target)
            elif local == "*":
                stars.append(f"{target}.{name}")
        return out + stars

    def _follow(self, qualname: str, depth: int) -> IndexedSymbol | None:
        """``qualname`` itself, or what it names through a module's imports (re-exports)."""
        sym = self.get(qualname)
        if sym is not None or depth > 4:
            return sym
        parts = qualname.split(".")
        for cut in range(len(parts) - 1, 0, -1):  # the longest prefix that is a module
            module = ".".join(parts[:cut])
            row = (
                self._reader()
                .execute("SELECT path FROM symbols WHERE qualname = ? AND kind = 'module' LIMIT 1", (module,))
                .fetchone()
            )
            if row is None:
                continue
            rest = ".".join(parts[cut:])
            for candidate in self._candidates(rest, row[0])[1:]:  # [0] is qualname itself
                if candidate != qualname:
                    sym = self._follow(candidate, depth + 1)
                    if sym is not None:
                        return sym
            return None
        return self._unique_suffix(qualname)  # e.g. a src/ layout: ``pkg.mod`` is ``src.pkg.mod``

    def _unique_suffix(self, name: str) -> IndexedSymbol | None:
        last = name.rpartition(".")[2]
        suffix = "." + name
        rows = self._reader().execute("SELECT DISTINCT qualname FROM symbols WHERE name = ?", (last,))
        found = [q for (q,) in rows if q.endswith(suffix)]
        return self.get(found[0]) if len(found) == 1 else None

    def stats(self) -> IndexSummary:
        """Totals: files, symbols, files with errors, card tokens, tokens of all files.

        Cached until the database changes (``PRAGMA data_version`` moves when any other
        connection commits): the sums scan every symbol (≈20 ms on sympy), and a plan asks."""
        conn = self._reader()
        version = conn.execute("PRAGMA data_version").fetchone()[0]
        cached = getattr(self._local, "stats", None)
        if cached is not None and cached[0] == version:
            return cached[1]
        files, errors = conn.execute(
            "SELECT count(*), count(error) - sum(coalesce(error LIKE 'skipped:%', 0)) FROM files"
        ).fetchone()
        symbols, card_tokens, tokens = conn.execute(
            "SELECT count(*), coalesce(sum(card_tokens), 0), "
            "coalesce(sum(CASE WHEN kind = 'module' THEN body_tokens ELSE 0 END), 0) FROM symbols"
        ).fetchone()
        summary = IndexSummary(
            files=files,
            symbols=symbols,
            files_with_errors=errors or 0,
            card_tokens=card_tokens,
            tokens=tokens,
            edges=self.edge_count(),
        )
        self._local.stats = (version, summary)
        return summary

    def module_symbol_counts(self) -> list[tuple[str, int]]:
        """``(path, number of symbols)`` per indexed file, by path (for the scaffold)."""
        rows = self._reader().execute("SELECT path, count(*) FROM symbols GROUP BY path ORDER BY path")
        return [(r[0], r[1]) for r in rows]

    def central_symbols(self, n: int = 10, kinds: Iterable[str] = ("class", "function", "method")) -> list[str]:
        """The ``n`` most central definitions (PageRank over the def→ref graph, computed at
        index time); ties by name, so the answer is deterministic. Before the graph exists,
        the names imported by the most files stand in."""
        kind_list = sorted(kinds)
        marks = ", ".join("?" * len(kind_list))
        rows = (
            self._reader()
            .execute(
                "SELECT c.qualname FROM centrality c WHERE EXISTS (SELECT 1 FROM symbols s "
                f"WHERE s.qualname = c.qualname AND s.kind IN ({marks})) ORDER BY c.rank DESC, c.qualname LIMIT ?",
                (*kind_list, int(n)),
            )
            .fetchall()
        )
        if rows:
            return [r[0] for r in rows]
        rows = (
            self._reader()
            .execute(
                "SELECT i.target, count(DISTINCT i.path) AS refs FROM imports i "
                "WHERE i.target IN (SELECT qualname FROM symbols WHERE kind != 'module') "
                "GROUP BY i.target ORDER BY refs DESC, i.target LIMIT ?",
                (int(n),),
            )
            .fetchall()
        )
        return [r[0] for r in rows]

    def centrality(self, qualnames: Iterable[str]) -> dict[str, float]:
        """Centrality percentile (0–1, 1 = the most central) of each given symbol that has
        one (symbols no reference touches are absent)."""
        names = sorted(set(qualnames))
        out: dict[str, float] = {}
        conn = self._reader()
        for chunk in _chunks(names):
            marks = ", ".join("?" * len(chunk))
            out.update(conn.execute(f"SELECT qualname, pct FROM centrality WHERE qualname IN ({marks})", chunk))
        return out

    def node_stats(self, qualnames: Iterable[str]) -> dict[str, tuple[float, int]]:
        """``(centrality percentile, degree)`` of each given symbol in the graph; degree is
        the number of distinct definitions it uses or is used by."""
        names = sorted(set(qualnames))
        out: dict[str, tuple[float, int]] = {}
        conn = self._reader()
        for chunk in _chunks(names):
            marks = ", ".join("?" * len(chunk))
            for q, pct, degree in conn.execute(
                f"SELECT qualname, pct, degree FROM centrality WHERE qualname IN ({marks})", chunk
            ):
                out[q] = (pct, degree)
        return out

    def neighbours(self, seeds: Iterable[str], per_seed: int = 16) -> list[tuple[str, str, str, int]]:
        """Graph neighbours of each seed: ``(seed, neighbour, relation, weight)`` where
        relation is ``"calls"`` (the seed's text names the neighbour) or ``"called by"``, and
        weight the number of mentions; the ``per_seed`` heaviest each way."""
        conn = self._reader()
        out: list[tuple[str, str, str, int]] = []
        for seed in dict.fromkeys(seeds):
            for dst, w in conn.execute(
                "SELECT t.dst, sum(e.weight) AS w FROM edges e JOIN targets t ON t.target = e.target "
                "WHERE e.src = ? AND t.dst IS NOT NULL AND t.dst != e.src "
                "GROUP BY t.dst ORDER BY w DESC, t.dst LIMIT ?",
                (seed, per_seed),
            ):
                out.append((seed, dst, "calls", w))
            for src, w in conn.execute(
                "SELECT e.src, sum(e.weight) AS w FROM targets t JOIN edges e ON e.target = t.target "
                "WHERE t.dst = ? AND e.src != t.dst GROUP BY e.src ORDER BY w DESC, e.src LIMIT ?",
                (seed, per_seed),
            ):
                out.append((seed, src, "called by", w))
        return out

    def file_neighbours(self, rel: str, limit: int = 24) -> list[tuple[str, str, int]]:
        """Definitions in other files that ``rel``'s code names (``"used by"`` the file) or
        whose code names ``rel``'s definitions (``"uses"`` it): ``(qualname, relation,
        weight)``, the ``limit`` heaviest each way."""
        conn = self._reader()
        out: list[tuple[str, str, int]] = []
        for dst, w in conn.execute(
            "SELECT t.dst, sum(e.weight) AS w FROM edges e JOIN targets t ON t.target = e.target "
            "WHERE e.path = ? AND t.dst IS NOT NULL AND NOT EXISTS "
            "(SELECT 1 FROM symbols s WHERE s.qualname = t.dst AND s.path = ?) "
            "GROUP BY t.dst ORDER BY w DESC, t.dst LIMIT ?",
            (rel, rel, limit),
        ):
            out.append((dst, "used by", w))
        for src, w in conn.execute(
            "SELECT e.src, sum(e.weight) AS w FROM symbols s JOIN targets t ON t.dst = s.qualname "
            "JOIN edges e ON e.target = t.target WHERE s.path = ? AND e.path != ? "
            "GROUP BY e.src ORDER BY w DESC, e.src LIMIT ?",
            (rel, rel, limit),
        ):
            out.append((src, "uses", w))
        return out

    def get_many(self, qualnames: Iterable[str]) -> dict[str, IndexedSymbol]:
        """``get`` for many names in one query (overload stubs lose to the implementation)."""
        names = sorted(set(qualnames))
        found: dict[str, list[IndexedSymbol]] = {}
        conn = self._reader()
        for chunk in _chunks(names):
            marks = ", ".join("?" * len(chunk))
            for row in conn.execute(f"{_SELECT} WHERE s.qualname IN ({marks}) ORDER BY s.path, s.start_line", chunk):
                sym = row_symbol(row)
                found.setdefault(sym.qualname, []).append(sym)
        out = {}
        for name, syms in found.items():
            out[name] = next(
                (s for s in syms if not any(d.rsplit(".", 1)[-1] == "overload" for d in s.decorators)), syms[0]
            )
        return out

    def iter_symbols(self, kinds: Iterable[str] | None = None) -> list[IndexedSymbol]:
        """Every stored symbol (optionally of some kinds), ordered by path and line."""
        sql = _SELECT
        params: list[object] = []
        if kinds:
            kind_list = sorted(kinds)
            sql += f" WHERE s.kind IN ({', '.join('?' * len(kind_list))})"
            params = kind_list
        rows = self._reader().execute(sql + " ORDER BY s.path, s.start_line, s.id", params)
        return [row_symbol(r) for r in rows]


def _prev_sha(known: dict[str, tuple], rel: str) -> str | None:
    prev = known.get(rel)
    return prev[2] if prev else None


def _chunks(items: list[str], size: int = 500) -> Iterable[list[str]]:
    for i in range(0, len(items), size):
        yield items[i : i + size]


class _KindLookup:
    """``graph.Resolver``'s mappings answered by SQL (one file's update needs a few lookups,
    not the whole table in memory)."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def get(self, qualname: str, default: str | None = None) -> str | None:
        rows = self.conn.execute("SELECT kind FROM symbols WHERE qualname = ?", (qualname,)).fetchall()
        if not rows:
            return default
        kinds = {r[0] for r in rows}
        return next(iter(kinds - {"module"}), "module")


class _ModuleLookup(_KindLookup):
    def get(self, module: str, default: str | None = None) -> str | None:
        row = self.conn.execute(
            "SELECT path FROM symbols WHERE qualname = ? AND kind = 'module' LIMIT 1", (module,)
        ).fetchone()
        return row[0] if row else default


class _ImportLookup(_KindLookup):
    def get(self, path: str, default=None):  # type: ignore[override]
        return {
            r[0]: r[1]
            for r in self.conn.execute(
                "SELECT local_name, target FROM imports WHERE path = ? AND local_name != '*' ORDER BY rowid", (path,)
            )
        }


class _StarLookup(_KindLookup):
    def get(self, path: str, default=None):  # type: ignore[override]
        return [
            r[0]
            for r in self.conn.execute(
                "SELECT target FROM imports WHERE path = ? AND local_name = '*' ORDER BY rowid", (path,)
            )
        ]
