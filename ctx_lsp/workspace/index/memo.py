"""What plans read from the index, kept in memory while the index does not change.

A plan reads the same things again and again: the editor re-plans the session's latest question
after every pin and message, an agent loop asks about one task for many requests, and the pins
seed the reference graph on every plan. These reads (search results, graph neighbours, node
statistics, symbols by name or row id, the items made from them) are pure functions of the
database: kept per thread (each thread reads through its own connection) and dropped as soon as
``PRAGMA data_version`` moves — which it does when any other connection, in this process or
another, commits a change (an edit re-indexed, a graph update, a second editor's server).
"""

from __future__ import annotations

from typing import Any

from ctx_lsp.workspace.index.db import IndexDb

MAX_ENTRIES = 20_000  # per kind of read: a table that grows past its limit starts again, empty


def table(db: IndexDb, name: str, limit: int = MAX_ENTRIES) -> dict[Any, Any]:
    """This thread's memo of reads called ``name``, valid for the database as it is now, with at
    most about ``limit`` entries (a table of whole results, each of hundreds of rows, keeps
    fewer)."""
    local = db.local
    version = db.reader().execute("PRAGMA data_version").fetchone()[0]
    state = getattr(local, "memo", None)
    if state is None or state[0] != version:
        state = local.memo = (version, {})
    found = state[1].get(name)
    if found is None or len(found) >= limit:
        found = state[1][name] = {}
    return found
