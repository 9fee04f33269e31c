"""The memory store: sessions, conversation trees, pins, plans, usage — in SQLite (WAL).

Everything a user made lives here and survives restarts: `.ctx/memory.sqlite3` in the
workspace. (The symbol index is a separate file, `.ctx/index.sqlite3`: it is a cache that can
be deleted and rebuilt at any time, while this one must never lose a pin or a message.)

`MemoryStore` is the one object callers use. It is made of one part per group of tables:

- ``db``: the connection, its lock and short write transactions, opening and migrating a store;
- ``schema``: every table with every column (one list per table), and ``codec``: rows to values;
- ``conversation``: sessions, branches, messages (large texts in ``bodies``; the rows read back
  in ``messages``, a kept path in ``paths``), compactions;
- ``pins``: pins and their TTLs (the TTL rule itself is ``ctx_lsp.core.pins``);
- ``plans``: plans with their stored inputs, and usage reports (maths in ``ctx_lsp.core.calibration``);
- ``capsules`` and ``reflection``.

The parts are mixins over one ``Database``, not objects a facade forwards to: they share one
connection, one lock and one transaction discipline, so a facade would only repeat every
method's signature to forward it. Each part uses nothing of the others through ``self``; where a
write spans two parts' tables in one transaction (a fork copies pins, a finished turn ticks
them), it calls the other part's module function with the open connection.
"""

from __future__ import annotations

from ctx_lsp.memory.store.bodies import BODY_MIN_BYTES, HEAD_CHARS, body_hash
from ctx_lsp.memory.store.capsules import Capsules
from ctx_lsp.memory.store.conversation import BOUND_ENCODING, Conversation, InsideCompaction, SessionRecord
from ctx_lsp.memory.store.db import MemoryUnavailable, StoreError
from ctx_lsp.memory.store.messages import MessageMeta, StoredMessage
from ctx_lsp.memory.store.pins import PinRecord, Pins
from ctx_lsp.memory.store.plans import BodyRef, Plans, UsageStats, decode_inputs, encode_inputs
from ctx_lsp.memory.store.reflection import Reflection
from ctx_lsp.memory.store.schema import SCHEMA


class MemoryStore(Conversation, Pins, Plans, Capsules, Reflection):
    """Sessions, conversation, pins, plans and usage, capsules and reflection state of one
    workspace, in one SQLite file (see the package's docstring for the parts)."""


__all__ = [
    "BODY_MIN_BYTES",
    "BOUND_ENCODING",
    "HEAD_CHARS",
    "SCHEMA",
    "BodyRef",
    "InsideCompaction",
    "MemoryStore",
    "MemoryUnavailable",
    "MessageMeta",
    "PinRecord",
    "SessionRecord",
    "StoreError",
    "StoredMessage",
    "UsageStats",
    "body_hash",
    "decode_inputs",
    "encode_inputs",
]
