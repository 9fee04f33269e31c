"""What every room of the sessions engine shares: the workspace engine, the memory store, and
the events queued for the faces."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from ctx_lsp.engine import Engine, UserError
from ctx_lsp.errors import Missing
from ctx_lsp.memory.store import InsideCompaction, MemoryStore, MemoryUnavailable, SessionRecord, StoreError
from ctx_lsp.sessions.events import Event

# The session of every request that names none, whichever face it came through (an editor, a code
# lens, the gateway): one per workspace, since the store is per workspace, so it survives restarts.
DEFAULT_SESSION = "default"


class NotFound(Missing, UserError):
    """Something named in a request does not exist (session, plan, pin, symbol, message); a
    UserError too, for the callers that catch every request a user can fix."""


@contextlib.contextmanager
def found() -> Iterator[None]:
    """The store's "no such session / message / pin / plan" as NotFound (and a branch it refuses
    as a bad request: the message exists)."""
    try:
        yield
    except InsideCompaction as err:
        raise UserError(str(err)) from None
    except StoreError as err:
        raise NotFound(str(err)) from None


class Shared:
    def __init__(self, engine: Engine, store: MemoryStore | None) -> None:
        self.engine = engine
        self.memory_error: MemoryUnavailable | None = None
        if store is None:
            try:
                store = MemoryStore(engine.root / engine.config.store_dir / "memory.sqlite3")
            except MemoryUnavailable as err:  # the index and planning keep working; the file is left as it is
                self.memory_error = err
                store = MemoryStore(None)
        self.store = store
        self.events: list[Event] = []

    def require_memory(self) -> None:
        """Before anything the user makes (a pin, a message, a mode…) is written, and for work
        that reads the store: with the store unreadable, what is made would be lost at the next
        start — so say so instead of pretending."""
        if self.memory_error is not None:
            raise self.memory_error

    def open_session(self, session: str) -> SessionRecord:
        return self.store.ensure_session(session)
