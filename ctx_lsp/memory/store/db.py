"""The store's SQLite connection: opening the file and bringing an older store up to date, one
lock, short write transactions, writes put off until a reply is sent, and the two errors callers
catch.

Two editors on one workspace run two server processes on one file: every write is one short
`BEGIN IMMEDIATE` transaction, and `busy_timeout` makes the other writer wait instead of fail.

A write that need not hold up a reply (the plan a request just made, kept for replay) can be put
off (``later``): the face answers, then ``flush`` writes it. Every write transaction, and every
read of what such writes keep (``reading``: plans and their texts), first writes what was put
off, so nothing can miss it — the next request, a replay of the plan id just handed out, another
process (after the flush that follows the reply) — and closing the store flushes too. Reads of
other tables (the conversation, pins) leave it put off: they cannot see the difference.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

from ctx_lsp import storage
from ctx_lsp.errors import Missing, Unavailable
from ctx_lsp.memory.store import bodies, schema

log = logging.getLogger("ctx_lsp.store")


class StoreError(Missing, ValueError):
    """A request about something that does not exist (unknown session, message, pin)."""


class MemoryUnavailable(Unavailable):
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
        self._later: list[Callable[[sqlite3.Connection], None]] = []  # writes put off (``later``)
        self._committed: list[Callable[[], None]] = []  # what to note once the transaction commits
        self.text_keys = bodies.TextKeys()  # hashes of texts seen, and which are stored
        self._depth = 0  # open transactions: 1, and savepoints inside a batch
        self._holding = False  # inside ``batch(hold=True)``: writes put off stay put off
        self._memo: dict[Any, Any] = {}  # reads kept between requests (``memo``)
        self._memo_version: int | None = None
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
            self.flush()
            self._conn.close()

    @contextmanager
    def write(self) -> Iterator[sqlite3.Connection]:
        """One short write transaction; other processes wait on the busy timeout. Inside
        ``batch``, a savepoint of the batch's transaction."""
        with self._lock:
            if not self._holding:
                self.flush()
            with self._transaction() as conn:
                yield conn

    @contextmanager
    def batch(self, *, hold: bool = False) -> Iterator[None]:
        """The writes made inside, in one transaction: a request that writes a dozen times (the
        gateway recording a reply and its cost, and the plan its request kept for later) pays for
        one commit. Each write is a savepoint of
        it, so a write that fails undoes only itself, and what the others wrote is committed
        even when the work inside fails — as if each had been a transaction of its own.

        ``hold``: a request waits on what is inside (the gateway planning a request before it
        forwards it): the writes other requests put off stay put off, for the flush after their
        replies (or a read of plans), instead of landing on this request's time — thirty new
        conversations at once each wrote the one before's plan."""
        with self._lock:
            if self._depth:  # inside another batch: part of it
                yield
                return
            self._conn.execute("BEGIN IMMEDIATE")
            self._depth, self._holding = 1, hold
            try:
                if not hold:
                    # what was put off goes in the same commit (a savepoint of its own: a failure
                    # there undoes only it): one commit a gateway request fewer
                    self.flush()
                yield
            finally:
                self._depth, self._holding = 0, False
                self._commit()

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        if self._depth:
            with self._savepoint() as conn:
                yield conn
            return
        self._conn.execute("BEGIN IMMEDIATE")
        self._depth = 1
        try:
            yield self._conn
        except BaseException:
            self._conn.execute("ROLLBACK")
            self._committed.clear()
            self._undone()
            raise
        finally:
            self._depth = 0
        self._commit()

    def _commit(self) -> None:
        """COMMIT; if that fails, roll back and forget what the transaction noted."""
        try:
            self._conn.execute("COMMIT")
        except BaseException:
            with suppress(sqlite3.Error):
                self._conn.execute("ROLLBACK")
            self._committed.clear()
            self._undone()
            raise
        self._noted()

    @contextmanager
    def _savepoint(self) -> Iterator[sqlite3.Connection]:
        name = f"write{self._depth}"
        self._conn.execute(f"SAVEPOINT {name}")
        self._depth += 1
        noted = len(self._committed)
        try:
            yield self._conn
        except BaseException:
            self._conn.execute(f"ROLLBACK TO {name}")
            self._conn.execute(f"RELEASE {name}")
            del self._committed[noted:]
            raise
        finally:
            self._depth -= 1
        self._conn.execute(f"RELEASE {name}")
        # what it changed is noted at once (reads later in the batch see it); if the batch rolls
        # back, everything noted is forgotten (``_undone``)
        self._noted()

    def _noted(self) -> None:
        done, self._committed = self._committed, []
        for note in done:
            note()

    def _undone(self) -> None:
        """A transaction rolled back after notes of its savepoints ran: forget all that is kept."""
        self._memo.clear()
        self.text_keys.stored.clear()

    def memo(self) -> dict[Any, Any]:
        """Reads kept between requests (a session's path, its compactions, usage statistics),
        for the caller holding the lock. This process's writes keep them current themselves
        (each write updates or drops what it changes, once it commits); a commit by another
        connection — a second editor's server on the same file — moves ``PRAGMA data_version``
        and empties them all."""
        version = self._conn.execute("PRAGMA data_version").fetchone()[0]
        if version != self._memo_version:
            self._memo.clear()
            self._memo_version = version
        return self._memo

    def after_commit(self, note: Callable[[], None]) -> None:
        """Call ``note`` once the write in progress commits (not if it rolls back); inside a batch,
        once its savepoint is released."""
        self._committed.append(note)

    def later(self, write: Callable[[sqlite3.Connection], None]) -> None:
        """Put a write off until ``flush`` (or the next write, or read of plans, of the store)."""
        with self._lock:
            self._later.append(write)

    def flush(self) -> None:
        """Write what was put off, in one transaction. A failure is logged, not raised: the
        request that made the write was answered already, and the one that happens to flush it
        must not fail for it."""
        with self._lock:
            if not self._later:
                return
            pending, self._later = self._later, []
            try:
                with self._transaction():
                    for write in pending:  # each a savepoint: what one notes (texts stored) the next sees
                        try:
                            with self._savepoint() as conn:
                                write(conn)
                        except Exception:
                            log.exception("a write put off until after the reply failed; what it kept is lost")
            except Exception:
                log.exception("writes put off until after the reply failed; what they kept is lost")

    @contextmanager
    def reading(self, flush: bool = False) -> Iterator[sqlite3.Connection]:
        """The connection, for reads; with ``flush``, once what was put off is written (reads of
        plans and their texts)."""
        with self._lock:
            if flush:
                self.flush()
            yield self._conn

    def _read(self, sql: str, args: tuple[Any, ...] = (), *, flush: bool = False) -> list[tuple]:
        with self.reading(flush) as conn:
            return conn.execute(sql, args).fetchall()


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
