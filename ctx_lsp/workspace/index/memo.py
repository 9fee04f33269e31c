"""What plans read from the index, kept in memory while the index does not change.

A plan reads the same things again and again: the editor re-plans the session's latest question
after every pin and message, an agent loop asks about one task for many requests, and the pins
seed the reference graph on every plan. These reads (search results, graph neighbours, node
statistics, symbols by name or row id, the items made from them) are pure functions of the
database: kept per thread (each thread reads through its own connection) and dropped as soon as
``PRAGMA data_version`` moves — which it does when any other connection, in this process or
another, commits a change (an edit re-indexed, a graph update, a second editor's server).

What is made from one row by its id alone (the prompt items of a symbol) may be kept across
changes (``lasting``): a row never changes while its id stands, and ids are not given twice
within one making of the index (``index_meta.made``). Those tables are emptied only when the
index is made again. A re-plan after a save then remakes the items of the rows the save
replaced, not of every symbol offered (on sympy: half the cost of that re-plan).
"""

from __future__ import annotations

import sqlite3
from collections import OrderedDict
from typing import Any

from ctx_lsp.workspace.index.db import IndexDb

MAX_ENTRIES = 20_000  # per kind of read: a table that grows past its limit starts again, empty


def table(db: IndexDb, name: str, limit: int = MAX_ENTRIES, *, lasting: bool = False) -> dict[Any, Any]:
    """This thread's memo of reads called ``name``, valid for the database as it is now, with at
    most about ``limit`` entries (a table of whole results, each of hundreds of rows, keeps
    fewer). ``lasting``: for what is keyed by row id, valid while the index is not made again,
    and ``Recent``: read an entry with ``[]`` to keep it."""
    local = db.local
    conn = db.reader()
    version = conn.execute("PRAGMA data_version").fetchone()[0]
    state = getattr(local, "memo", None)
    if state is None or state[0] != version:
        state = local.memo = (version, {})
        try:
            made = conn.execute("SELECT value FROM index_meta WHERE key = 'made'").fetchone()
        except sqlite3.Error:  # an index being made again: nothing kept can be trusted
            made = None
        kept = getattr(local, "lasting", None)
        if kept is None or made is None or kept[0] != made:
            local.lasting = (made, {})
    if lasting:
        found = local.lasting[1].get(name)
        if found is None:
            found = local.lasting[1][name] = Recent(limit)
        found.limit = limit
        return found
    found = state[1].get(name)
    if found is None or len(found) >= limit:
        found = state[1][name] = {}
    return found


class Recent(OrderedDict):
    """A lasting table: at most ``limit`` entries, the least recently read or written going
    first. Emptying it whole when full, as the other tables are, would also drop what every
    question meets (on sympy, a new question finds a third of its symbols made already)."""

    def __init__(self, limit: int) -> None:
        super().__init__()
        self.limit = limit

    def __getitem__(self, key: Any) -> Any:
        value = super().__getitem__(key)
        self.move_to_end(key)
        return value

    def __setitem__(self, key: Any, value: Any) -> None:
        super().__setitem__(key, value)
        self.move_to_end(key)
        if len(self) > self.limit:
            self.popitem(last=False)
