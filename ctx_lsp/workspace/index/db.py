"""The index database: where it lives, its schema, its connections, and the one mapping between
a ``symbols`` row and an ``IndexedSymbol``.

It is kept in ``<root>/.ctx/index.sqlite3`` (WAL) so that a restart on an indexed workspace only
stats the files: on a 1,600-file tree, re-indexing costs seconds and revalidating by size and
mtime milliseconds. Token counts of cards and bodies are computed once, at index time, and
stored: the request path never tokenizes. The database is a cache: a schema, tokenizer or way
of masking secrets other than the current one empties it, and one that cannot be read is moved
aside and rebuilt from the files.

``IndexDb`` is the state every part of the index shares; the modules beside this one are
functions over it, and ``WorkspaceIndex`` puts them together.
"""

from __future__ import annotations

import contextlib
import logging
import operator
import os
import sqlite3
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Protocol

import msgspec

from ctx_lsp import storage
from ctx_lsp.core.tokens import counter_for
from ctx_lsp.workspace.index import texts
from ctx_lsp.workspace.index.terms import FTS_COLUMNS
from ctx_lsp.workspace.languages import PARSER_VERSION, TEST_CASE_MARK
from ctx_lsp.workspace.parse import Symbol
from ctx_lsp.workspace.secrets import SecretMasker

log = logging.getLogger("ctx_lsp.index")
# 2: the reference graph (edges, targets, centrality); 3: node degrees; 4: masked secrets; 5: stemmed
# terms; 6: module names of src/ layouts without "src."; 7: cards from the source as written;
# 8: half the size: the graph by integer ids, no raw identifiers, big texts compressed (``texts``)
# 10: every language (``languages``), references by name (``graph.Resolver``)
SCHEMA_VERSION = "10"

# Sizes below are sympy's (1,543 files, 40.7k symbols): schema 7 took 195 MB, 75 of them for the
# edges and their two indexes, which repeated a path, a qualname and a dotted target per row.
SCHEMA = f"""
CREATE TABLE IF NOT EXISTS index_meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS files(
    rel TEXT PRIMARY KEY, size INTEGER NOT NULL, mtime_ns INTEGER NOT NULL,
    sha256 TEXT NOT NULL, error TEXT);
-- ``card``, ``docstring`` and ``body`` of a big symbol are '' and kept compressed together in
-- ``packed`` instead (see ``texts``). The raw identifiers are not kept: only their search terms,
-- in the FTS row, are ever read.
CREATE TABLE IF NOT EXISTS symbols(
    id INTEGER PRIMARY KEY, qualname TEXT NOT NULL, name TEXT NOT NULL, kind TEXT NOT NULL,
    path TEXT NOT NULL, start_line INTEGER NOT NULL, end_line INTEGER NOT NULL,
    start_col INTEGER NOT NULL, end_col INTEGER NOT NULL, signature TEXT NOT NULL,
    docstring TEXT NOT NULL, decorators TEXT NOT NULL, parent TEXT NOT NULL,
    card TEXT NOT NULL, body TEXT NOT NULL, card_tokens INTEGER NOT NULL, body_tokens INTEGER NOT NULL,
    header_tokens INTEGER NOT NULL,
    secrets INTEGER NOT NULL DEFAULT 0, packed BLOB);
CREATE INDEX IF NOT EXISTS symbols_path ON symbols(path, start_line);
CREATE INDEX IF NOT EXISTS symbols_qualname ON symbols(qualname);
CREATE INDEX IF NOT EXISTS symbols_name ON symbols(name);
CREATE TABLE IF NOT EXISTS imports(path TEXT NOT NULL, local_name TEXT NOT NULL, target TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS imports_path ON imports(path);
CREATE INDEX IF NOT EXISTS imports_target ON imports(target);
-- The reference graph. ``targets`` holds each dotted name some definition uses, resolved file-
-- locally (``name``), once. ``resolved`` says whether it was since resolved against the whole
-- workspace, and ``dst`` is the indexed symbol it names (NULL: none). An edge joins the symbol
-- that uses a name (``src``, its row id: the first symbol of that qualname in its file) to the
-- name (``target``), with the number of uses: three small integers where schema 7 repeated
-- three strings per row, in the table and in two indexes.
CREATE TABLE IF NOT EXISTS targets(
    id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, resolved INTEGER NOT NULL DEFAULT 0, dst TEXT);
CREATE INDEX IF NOT EXISTS targets_dst ON targets(dst) WHERE dst IS NOT NULL;
CREATE TABLE IF NOT EXISTS edges(
    src INTEGER NOT NULL, target INTEGER NOT NULL, weight INTEGER NOT NULL,
    PRIMARY KEY (src, target)) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS edges_target ON edges(target);
CREATE TABLE IF NOT EXISTS centrality(
    qualname TEXT PRIMARY KEY, rank REAL NOT NULL, pct REAL NOT NULL, degree INTEGER NOT NULL) WITHOUT ROWID;
CREATE VIRTUAL TABLE IF NOT EXISTS symbols_fts USING fts5(
    {", ".join(FTS_COLUMNS)},
    tokenize = 'unicode61 remove_diacritics 2');
-- how many symbols hold each term (no data of its own: read from the FTS index)
CREATE VIRTUAL TABLE IF NOT EXISTS symbols_vocab USING fts5vocab(symbols_fts, row);
"""
_OWN_TABLES = (
    "files",
    "symbols",
    "imports",
    "symbols_vocab",
    "symbols_fts",
    "edges",
    "targets",
    "centrality",
    "index_meta",
)
SET_META = "INSERT OR REPLACE INTO index_meta(key, value) VALUES (?, ?)"


def normalise_rel(rel: str) -> str:
    """A workspace-relative path as the index stores it: ``/`` separators, no leading ``/``."""
    return rel.replace("\\", "/").lstrip("/")


def marks(n: int) -> str:
    """``n`` SQL parameters: ``?, ?, ?``."""
    return ", ".join("?" * n)


def select_in(conn: sqlite3.Connection, sql: str, values: Iterable[str]) -> Iterator[tuple]:
    """The rows of ``sql`` for distinct ``values`` (sorted), whose ``IN ({})`` is filled in chunks
    of 500 parameters (SQLite limits them per statement)."""
    items = sorted(set(values))
    for i in range(0, len(items), 500):
        chunk = items[i : i + 500]
        yield from conn.execute(sql.format(marks(len(chunk))), chunk).fetchall()  # a row at a time costs more


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


class IndexedSymbol(Symbol, frozen=True, kw_only=True, gc=False):
    """A stored symbol: the parsed fields plus its row id and the token counts of its card and
    body (for the module symbol, ``body_tokens`` is the cost of the whole file, whose text is
    not stored). ``identifiers`` is always empty: the index keeps only their search terms."""

    id: int
    card_tokens: int
    body_tokens: int
    header_tokens: int  # of the line above its body in a prompt (``cards.body_header``)


# A test case's mark as it stands in its row's ``decorators`` (a JSON list): what the lookups of
# candidates for a reference by name leave out (``refgraph.update_graph``, ``names._NameLookup``)
TEST_CASE_JSON = f'"{TEST_CASE_MARK}"'

# The ``symbols`` columns, named after the ``IndexedSymbol`` fields they hold: the three the index
# adds to a parsed symbol, the parsed fields stored as they are, the three texts (``texts``),
# ``decorators`` (a JSON list) and ``packed``. ``identifiers`` is not stored (see SCHEMA).
# ``symbol_row`` and ``row_symbol`` are the one mapping between the two.
_ADDED_FIELDS = ("id", "card_tokens", "body_tokens", "header_tokens")
_TEXT_FIELDS = ("card", "docstring", "body")
_PLAIN_FIELDS = tuple(
    f for f in Symbol.__struct_fields__ if f not in ("decorators", "identifiers") and f not in _TEXT_FIELDS
)
_HEAD_FIELDS = (*_ADDED_FIELDS, *_PLAIN_FIELDS)
SYMBOL_COLUMNS = (*_HEAD_FIELDS, *_TEXT_FIELDS, "decorators", "packed")
INSERT_SYMBOL = f"INSERT INTO symbols({', '.join(SYMBOL_COLUMNS)}) VALUES ({marks(len(SYMBOL_COLUMNS))})"
# Every column of ``symbols s``, in ``SYMBOL_COLUMNS`` order; callers add WHERE and ORDER BY.
SELECT_SYMBOLS = "SELECT " + ", ".join(f"s.{c}" for c in SYMBOL_COLUMNS) + " FROM symbols s"

_plain_values = operator.attrgetter(*_PLAIN_FIELDS)
_encode_json = msgspec.json.Encoder().encode
_decode_json = msgspec.json.decode


def symbol_row(sym: Symbol, id: int, tokens: tuple[int, int, int], packed: bytes | None) -> tuple:
    """The ``symbols`` row (``SYMBOL_COLUMNS``) of a parsed symbol with its token counts (card,
    body, body header); ``packed`` is ``texts.pack`` of its texts, which are then not stored as
    they are (a pool worker may have packed them, and sent ``sym`` without them)."""
    decorators = _encode_json(sym.decorators).decode() if sym.decorators else "[]"
    if packed is None:
        return (id, *tokens, *_plain_values(sym), sym.card, sym.docstring, sym.body, decorators, None)
    return (id, *tokens, *_plain_values(sym), "", "", "", decorators, packed)


def row_symbol(row: tuple) -> IndexedSymbol:
    """The symbol stored in a ``symbols`` row (``SYMBOL_COLUMNS``, as ``SELECT_SYMBOLS`` reads them).
    The columns are named one by one, not zipped into a dict: a plan reads hundreds of rows,
    and this is half the cost (a test round-trips every field)."""
    (
        id, card_tokens, body_tokens, header_tokens, qualname, name, kind, path, start_line, end_line,
        start_col, end_col, signature, parent, secrets, card, docstring, body, decorators, packed,
    ) = row  # fmt: skip
    if packed is not None:
        card, docstring, body = texts.unpack(packed)
    return IndexedSymbol(
        id=id,
        card_tokens=card_tokens,
        body_tokens=body_tokens,
        header_tokens=header_tokens,
        qualname=qualname,
        name=name,
        kind=kind,
        path=path,
        start_line=start_line,
        end_line=end_line,
        start_col=start_col,
        end_col=end_col,
        signature=signature,
        parent=parent,
        secrets=secrets,
        card=card,
        docstring=docstring,
        body=body,
        decorators=tuple(_decode_json(decorators)) if decorators != "[]" else (),
    )


def masking_key(masker: SecretMasker | None) -> str:
    """What the index records about masking (``index_meta.secrets``): rows made another way
    are rebuilt, so every stored text is masked the current way, once."""
    return masker.fingerprint if masker is not None else "off"


def connect(db_path: Path, *, readonly: bool = False) -> sqlite3.Connection:
    conn = sqlite3.connect(db_path, isolation_level=None, check_same_thread=False)
    conn.execute("PRAGMA busy_timeout = 5000")
    if readonly:
        conn.execute("PRAGMA query_only = ON")
    return conn


@contextlib.contextmanager
def write_transaction(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """``BEGIN IMMEDIATE`` … ``COMMIT``, rolled back on any exception (the caller holds the lock)."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield conn
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise


class RefreshStopped(Exception):
    """A refresh ended early because the index is about to close (``WorkspaceIndex.stop``)."""


class KeptPostings(Protocol):
    """What the index keeps of search's in-memory postings (``postings.Postings``, which imports
    this module: only ``search`` and the facade, above both, use the rest)."""

    lock: threading.Lock

    def worn(self) -> bool: ...

    def sync(self, conn: sqlite3.Connection) -> bool: ...


class IndexDb:
    """The database of one workspace's index and what the parts of the index share.

    Thread-safe: writes are serialised by ``lock`` on one connection (``conn``); reads use one
    connection per thread (``reader()``; WAL lets them run while a refresh writes). Two
    processes may share the file.
    """

    def __init__(self, root: Path, db_path: Path | None, encoding: str, masker: SecretMasker | None) -> None:
        self.root = Path(root).resolve()
        self.masker = masker
        self.db_path = Path(db_path) if db_path is not None else self.root / ".ctx" / "index.sqlite3"
        self.encoding = encoding
        self.counter = counter_for(encoding)
        self.lock = threading.RLock()
        self.local = threading.local()  # this thread's reader, and its cached ``stats``
        self._readers: list[sqlite3.Connection] = []
        self._closed = False
        self.stopping = threading.Event()  # set by ``stop``: a refresh ends after the file it is on
        self.generation = 0  # bumped by every write that changes symbols or references
        self.postings: KeptPostings | None = None  # searches score in memory once built (``postings``)
        self.postings_wanted = False  # dropped as too stale to follow: built again when edits pause
        # A long-running face keeps whole tables in memory too (``WorkspaceIndex.prepare_search``):
        # every symbol's node stats, by the version of the centrality table they were read from.
        self.keep_tables = False
        self.graph_stats: tuple[str, dict[str, tuple[float, int]]] | None = None
        self.count_cache: dict[str, int] = {}  # text → tokens, for re-indexing edited files
        self._recovered: str | None = None  # what happened to an unreadable cache, until told
        try:
            self._open()
        except sqlite3.DatabaseError as err:
            if not storage.is_corruption(err):
                raise
            self.recover(err)

    def _open(self) -> None:
        storage.private_file(self.db_path)
        self.conn = connect(self.db_path)
        try:
            self.conn.execute("PRAGMA journal_mode = WAL")
            self.conn.execute("PRAGMA synchronous = NORMAL")  # WAL-safe; a crash loses the last batch only
            self.conn.execute("PRAGMA temp_store = MEMORY")
            # Checkpoints can leave a big WAL file behind after a bulk build; cap what stays on disk.
            self.conn.execute(f"PRAGMA journal_size_limit = {64 * 1024 * 1024}")
            self.init_schema()
        except BaseException:
            self.conn.close()
            raise

    def recover(self, err: sqlite3.DatabaseError) -> None:
        """The index is a cache: one that cannot be read is moved aside (for a bug report) and
        rebuilt from the files, and the user is told — never a crash, never a silent loss."""
        with self.lock:
            for conn in self._readers:
                conn.close()
            self._readers.clear()
            self.local = threading.local()
            with contextlib.suppress(sqlite3.Error, AttributeError):
                self.conn.close()
            aside = storage.move_aside(self.db_path)
            self._open()
            self.generation += 1
        self._recovered = (
            f"the index cache {self.db_path} could not be read ({err}): moved it to {aside.name}; "
            "the index is built again from the files"
        )
        log.warning("%s", self._recovered)

    def take_recovered(self) -> str | None:
        """The message about a cache that was found unreadable and rebuilt (once)."""
        message, self._recovered = self._recovered, None
        return message

    def init_schema(self) -> None:
        """Create the tables; drop them first when they were made with another schema, version
        of the parsers, tokenizer or way of masking secrets (the stored rows are then a stale
        cache)."""
        with self.lock, write_transaction(self.conn) as conn:
            have = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
            meta: dict[str, str] = {}
            if "index_meta" in have:
                meta = dict(conn.execute("SELECT key, value FROM index_meta").fetchall())
            wanted = {
                "schema": SCHEMA_VERSION,
                "parsers": PARSER_VERSION,
                "encoding": self.counter.encoding,
                "secrets": masking_key(self.masker),
            }
            if meta and {k: meta.get(k) for k in wanted} != wanted:
                changed = ", ".join(f"{k} {meta.get(k)} → {v}" for k, v in wanted.items() if meta.get(k) != v)
                log.info("the index %s was made differently (%s): it is emptied and built again", self.db_path, changed)
                for table in _OWN_TABLES:
                    conn.execute(f"DROP TABLE IF EXISTS {table}")
            # Statement by statement: executescript() would COMMIT our transaction.
            for stmt in SCHEMA.split(";"):
                if stmt.strip():
                    conn.execute(stmt)
            conn.executemany(SET_META, sorted(wanted.items()))
            # which making of the index this is: rows of an index emptied and made again may
            # have the ids of rows before it (``postings`` then builds again)
            conn.execute("INSERT OR IGNORE INTO index_meta(key, value) VALUES ('made', ?)", (os.urandom(8).hex(),))

    def set_masker(self, masker: SecretMasker | None) -> bool:
        """Mask secrets with ``masker`` from now on; empty the index when it masks differently
        (see ``WorkspaceIndex.set_masker``). Returns whether it was emptied."""
        with self.lock:
            old = masking_key(self.masker)
            self.masker = masker
            if masking_key(masker) == old:
                return False
            self.generation += 1
            self.count_cache.clear()
            self.init_schema()
            return True

    def reader(self) -> sqlite3.Connection:
        """This thread's read-only connection."""
        if self._closed:
            raise RuntimeError("WorkspaceIndex is closed")
        conn: sqlite3.Connection | None = getattr(self.local, "conn", None)
        if conn is None:
            conn = connect(self.db_path, readonly=True)
            self.local.conn = conn
            with self.lock:
                self._readers.append(conn)
        return conn

    def meta(self, key: str) -> str | None:
        """A value of ``index_meta``."""
        row = self.reader().execute("SELECT value FROM index_meta WHERE key = ?", (key,)).fetchone()
        return row[0] if row else None

    def graph_dirty(self) -> bool:
        """Whether symbols or references changed since the centrality was last computed (the
        mark is a token each write draws anew: ``refgraph.update_graph`` clears only the one it
        read, so a write from any process during an update leaves the graph dirty)."""
        return self.meta("graph_dirty") not in (None, "0")

    def edge_count(self) -> int:
        """Resolved def→ref edges as of the last ``update_graph``."""
        return int(self.meta("edges") or 0)

    def close(self) -> None:
        """Close every connection. The index can not be used afterwards."""
        with self.lock:
            if self._closed:
                return
            self._closed = True
            for conn in self._readers:
                conn.close()
            self._readers.clear()
            with contextlib.suppress(sqlite3.Error):
                self.conn.execute("PRAGMA optimize")
            self.conn.close()
