"""The store's SQLite connection: opening the file and bringing an older store up to date, one
lock, short write transactions, and the two errors callers catch.

Two editors on one workspace run two server processes on one file: every write is one short
`BEGIN IMMEDIATE` transaction, and `busy_timeout` makes the other writer wait instead of fail.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

from ctx_lsp import storage
from ctx_lsp.memory.store import bodies, schema


class StoreError(ValueError):
    """A request about something that does not exist (unknown session, message, pin)."""


class MemoryUnavailable(Exception):
    """The memory store cannot be read. It is the user's data: nothing is changed or moved; the
    message names the file and says what to do."""

    def __init__(self, db_path: Path, err: BaseException) -> None:
        super().__init__(
            f"cannot read the memory store {db_path} ({err}); nothing in it was changed. Pins, "
            "conversations and plans are unavailable until it can be read (planning without them "
            f"keeps working): restore it from a backup, or move it aside (mv {db_path} {db_path}.bad) "
            "to start an empty one."
        )
        self.db_path = db_path


class Database:
    """The connection every part of the store shares (see the package's docstring)."""

    def __init__(self, db_path: Path | None) -> None:
        """Open (or create) the store at ``db_path``; None keeps it in memory only (for a
        server whose store file cannot be read: it plans, it remembers nothing)."""
        self.db_path = db_path
        self._lock = threading.RLock()
        if db_path is not None:
            storage.private_file(db_path)
        try:
            self._conn = sqlite3.connect(
                db_path or ":memory:", isolation_level=None, check_same_thread=False, timeout=30
            )
            self._open()
        except sqlite3.DatabaseError as err:
            if db_path is None or not storage.is_corruption(err):
                raise
            with suppress(sqlite3.Error, AttributeError):
                self._conn.close()
            raise MemoryUnavailable(db_path, err) from None

    def _open(self) -> None:
        self._conn.execute("PRAGMA busy_timeout = 30000")
        self._conn.execute("PRAGMA journal_mode = WAL")
        self._conn.execute("PRAGMA synchronous = NORMAL")
        with self.write() as conn:
            migrate(conn)

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    @contextmanager
    def write(self) -> Iterator[sqlite3.Connection]:
        """One short write transaction; other processes wait on the busy timeout."""
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                yield self._conn
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            self._conn.execute("COMMIT")

    def _read(self, sql: str, args: tuple[Any, ...] = ()) -> list[tuple]:
        with self._lock:
            return self._conn.execute(sql, args).fetchall()


def migrate(conn: sqlite3.Connection) -> set[str]:
    """Create what the store lacks, from the schema's tables: a missing table whole, a missing
    column with its own declaration. Nothing is dropped or rewritten, except that large message
    texts move to `bodies` once, when `messages.body` is added. Returns the columns added to
    existing tables, as ``table.column``."""
    added: set[str] = set()
    for table in schema.TABLES:
        have = {r[1] for r in conn.execute(f"PRAGMA table_info({table.name})")}
        if not have:
            conn.execute(table.create())
            continue
        for name, declaration in zip(table.names, table.columns, strict=True):
            if name not in have:
                conn.execute(f"ALTER TABLE {table.name} ADD COLUMN {declaration}")
                added.add(f"{table.name}.{name}")
    for index in schema.INDEXES:
        conn.execute(index)
    if "messages.body" in added:
        bodies.move_large_texts(conn)
    return added
