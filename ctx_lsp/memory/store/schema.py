"""The store's schema: every table with every column, written once.

A new store is created from these tables as they are; a store made by an earlier version is
brought up to date from the same lists (``db.migrate``). The same lists name the columns that
the row codecs read and that inserts write (`Table.insert` refuses a column that is not here).

A column added in a later version must be one `ALTER TABLE … ADD COLUMN` can add to an older
store: nullable, or with a default.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache, cached_property
from typing import Any


@dataclass(frozen=True)
class Table:
    name: str
    columns: tuple[str, ...]  # "name DECLARATION", in CREATE TABLE order
    keys: tuple[str, ...] = ()  # table constraints: PRIMARY KEY(...), UNIQUE(...)

    @cached_property
    def names(self) -> tuple[str, ...]:
        return tuple(c.split()[0] for c in self.columns)

    def create(self) -> str:
        return f"CREATE TABLE IF NOT EXISTS {self.name}({', '.join(self.columns + self.keys)})"

    def insert(self, conn: sqlite3.Connection, values: Mapping[str, Any], *, verb: str = "INSERT") -> sqlite3.Cursor:
        """Insert one row given by column name (``verb``: INSERT, INSERT OR REPLACE…)."""
        return conn.execute(insert_sql(self, tuple(values), verb), tuple(values.values()))


@cache
def insert_sql(table: Table, columns: tuple[str, ...], verb: str = "INSERT") -> str:
    unknown = set(columns) - set(table.names)
    if unknown:
        raise ValueError(f"no column {', '.join(sorted(unknown))} in table {table.name}")
    return f"{verb} INTO {table.name}({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})"


SESSIONS = Table(
    "sessions",
    (
        "id TEXT PRIMARY KEY",
        "created REAL NOT NULL",
        "mode TEXT",
        "model TEXT",
        "branch TEXT NOT NULL DEFAULT 'main'",  # the active branch
        "turn INTEGER NOT NULL DEFAULT 0",
        "compaction_threshold REAL",
        "rolling INTEGER NOT NULL DEFAULT 0",
    ),
)
BRANCHES = Table(
    "branches",
    (
        "session TEXT NOT NULL",
        "name TEXT NOT NULL",
        "head TEXT",  # the id of the last message on the branch's path
        "forked_from TEXT",
        "created REAL NOT NULL",
    ),
    ("PRIMARY KEY(session, name)",),
)
MESSAGES = Table(
    "messages",
    (
        "seq INTEGER PRIMARY KEY AUTOINCREMENT",
        "session TEXT NOT NULL",
        "id TEXT NOT NULL",
        "parent TEXT",
        "role TEXT NOT NULL",
        "content TEXT NOT NULL",  # '' when the text is in `bodies`
        "tool_calls TEXT",  # JSON
        "tool_call_id TEXT",
        "name TEXT",
        "turn INTEGER NOT NULL",
        "archived_by INTEGER",  # the number of the compaction that archived it
        "created REAL NOT NULL",
        "bytes INTEGER",  # UTF-8 size of the text
        "tokens INTEGER",
        "tokens_encoding TEXT",
        "body TEXT",  # hash of the text in `bodies`
    ),
    ("UNIQUE(session, id)",),
)
BODIES = Table(
    "bodies",
    (
        "hash TEXT PRIMARY KEY",
        "bytes INTEGER NOT NULL",
        "head TEXT",  # the first HEAD_CHARS characters, when the text is longer
        "text TEXT NOT NULL",
    ),
)
# The texts of plans' retrieval candidates (symbol cards and bodies), once each: the texts a
# plan offered first are compressed together in one pack.
TEXT_PACKS = Table(
    "text_packs",
    (
        "id INTEGER PRIMARY KEY",
        "data BLOB NOT NULL",  # zlib of the texts' UTF-8, one after another
    ),
)
TEXTS = Table(
    "texts",
    (
        "hash TEXT PRIMARY KEY",  # bodies.body_hash of the UTF-8 text
        "pack INTEGER NOT NULL",
        "start INTEGER NOT NULL",  # where its UTF-8 starts in the pack's, and how long it is
        "size INTEGER NOT NULL",
    ),
)
PINS = Table(
    "pins",
    (
        "seq INTEGER PRIMARY KEY AUTOINCREMENT",
        "id TEXT NOT NULL",
        "session TEXT NOT NULL",
        "branch TEXT NOT NULL",
        "kind TEXT NOT NULL",
        "policy TEXT NOT NULL",
        "ttl INTEGER",
        "ttl_remaining INTEGER",
        "lease_scope TEXT NOT NULL DEFAULT 'turn'",
        "priority INTEGER NOT NULL",
        "created_by TEXT NOT NULL",
        "symbol TEXT",
        "path TEXT",
        "start_line INTEGER",
        "end_line INTEGER",
        "title TEXT NOT NULL",
        "status TEXT NOT NULL DEFAULT 'active'",  # active, grace, expired, removed
        "created_turn INTEGER NOT NULL",
        "created REAL NOT NULL",
        "cluster TEXT",  # the query cluster a task-scoped lease was made under
    ),
    ("UNIQUE(session, branch, id)",),
)
PLANS = Table(
    "plans",
    (
        "id TEXT NOT NULL",
        "session TEXT NOT NULL",
        "branch TEXT NOT NULL",
        "turn INTEGER NOT NULL",
        "created REAL NOT NULL",
        "query TEXT NOT NULL",
        "inputs BLOB NOT NULL",  # zlib(msgpack(PlanInput)), large texts by reference
        "plan BLOB NOT NULL",  # zlib(JSON); plain JSON from earlier versions
        "retrieval_set_id TEXT",
        "tokens INTEGER NOT NULL",
        "prompt_budget INTEGER NOT NULL",
        "timings TEXT NOT NULL",
        "options TEXT",  # the request's parameters besides the query (JSON)
        "cluster TEXT",
        "bodies TEXT",  # the references of `inputs` to `bodies` (JSON)
    ),
    ("PRIMARY KEY(id, session)",),
)
USAGE = Table(
    "usage",
    (
        "seq INTEGER PRIMARY KEY AUTOINCREMENT",
        "plan_id TEXT NOT NULL",
        "session TEXT NOT NULL",
        "model TEXT NOT NULL",
        "estimate INTEGER NOT NULL",
        "raw_estimate INTEGER NOT NULL",
        "input_tokens INTEGER NOT NULL",
        "cached_input_tokens INTEGER NOT NULL",
        "output_tokens INTEGER NOT NULL",
        "created REAL NOT NULL",
        # of estimate and input_tokens, the images and documents (counted the provider's way, not
        # calibrated): a ratio is learned from the text alone, (input_tokens - media) / raw_estimate
        "media INTEGER NOT NULL DEFAULT 0",
    ),
)
COMPACTIONS = Table(
    "compactions",
    (
        "session TEXT NOT NULL",
        "number INTEGER NOT NULL",
        "branch TEXT NOT NULL",
        "summary TEXT NOT NULL",
        "digest BLOB",
        "archived_ids TEXT NOT NULL",  # JSON
        "tokens_before INTEGER NOT NULL",
        "tokens_after INTEGER NOT NULL",
        "milliseconds REAL NOT NULL",
        "summarizer TEXT NOT NULL",
        "note TEXT",
        "created REAL NOT NULL",
    ),
    ("PRIMARY KEY(session, number)",),
)
CAPSULES = Table(
    "capsules",
    (
        "path TEXT PRIMARY KEY",
        "module TEXT NOT NULL",
        "text TEXT NOT NULL",
        "code_hash TEXT NOT NULL",
        "source TEXT NOT NULL",
        "confidence REAL NOT NULL",
        "created REAL NOT NULL",
        "stale INTEGER NOT NULL DEFAULT 0",
        "stale_since REAL",
        "current_hash TEXT",
    ),
)
REFLECTION_STATE = Table(
    "reflection_state",
    (
        "session TEXT PRIMARY KEY",
        "activation BLOB",
        "cluster TEXT",
        "centroid TEXT",
        "next_cluster INTEGER NOT NULL DEFAULT 1",
    ),
)
REFLECTIONS = Table(
    "reflections",
    (
        "seq INTEGER PRIMARY KEY AUTOINCREMENT",
        "session TEXT NOT NULL",
        "turn INTEGER NOT NULL",
        "kind TEXT NOT NULL",
        "item TEXT NOT NULL",
        "pin_id TEXT",
        "reason TEXT NOT NULL",
        "undone INTEGER NOT NULL DEFAULT 0",
        "created REAL NOT NULL",
        "cluster TEXT",
    ),
)
SUGGESTIONS = Table(
    "suggestions",
    (
        "session TEXT NOT NULL",
        "item TEXT NOT NULL",
        "turn INTEGER NOT NULL",
        "reason TEXT NOT NULL",
        "status TEXT NOT NULL DEFAULT 'open'",
    ),
    ("PRIMARY KEY(session, item)",),
)

ORIGINALS = Table(
    "originals",  # a tool output as it came, when the conversation keeps it shortened (expand)
    (
        "session TEXT NOT NULL",
        "id TEXT NOT NULL",  # the message's id
        "kind TEXT NOT NULL",  # which shrinker shortened it
        "tokens INTEGER NOT NULL",  # of the original
        "shrunk_tokens INTEGER NOT NULL",
        "text TEXT NOT NULL",
        "created REAL NOT NULL",
    ),
    ("PRIMARY KEY(session, id)",),
)

GATEWAY_REQUESTS = Table(
    "gateway_requests",  # one per request through the gateway: what was sent, saved and paid
    (
        "seq INTEGER PRIMARY KEY AUTOINCREMENT",
        "session TEXT NOT NULL",
        "plan_id TEXT",
        "created REAL NOT NULL",
        "model TEXT",
        "client_tokens INTEGER NOT NULL DEFAULT 0",  # what the client's request held (estimated)
        "forwarded_tokens INTEGER NOT NULL DEFAULT 0",  # what went upstream (the plan's count)
        "direct_cached INTEGER NOT NULL DEFAULT 0",  # of client_tokens, what repeats the client's previous request
        "input_tokens INTEGER NOT NULL DEFAULT 0",  # as the provider reported
        "cached_tokens INTEGER NOT NULL DEFAULT 0",
        "cache_write_tokens INTEGER NOT NULL DEFAULT 0",
        "output_tokens INTEGER NOT NULL DEFAULT 0",
        "shed INTEGER NOT NULL DEFAULT 0",  # tokens saved by each mechanism
        "masked INTEGER NOT NULL DEFAULT 0",
        "shrunk INTEGER NOT NULL DEFAULT 0",
        "injected INTEGER NOT NULL DEFAULT 0",  # what ctx_lsp's own blocks cost
        "as_sent INTEGER NOT NULL DEFAULT 0",  # 1: the prompt went as the client sent it (direct cost = cost)
        # who sent it and what about (``core.runs``), and why ctx_lsp added what it did (``core.verdict``)
        "client TEXT",  # the assistant, from the User-Agent: "Claude Code 2.1.197"
        "run TEXT",  # what ties it to its run: the client's conversation id (hashed) or its named session
        "title TEXT",  # the first line the user wrote in it, secrets masked, at most 80 characters
        "one_shot INTEGER NOT NULL DEFAULT 0",  # 1: no tools, one user message (a side request's shape)
        "context TEXT",  # why ctx_lsp added what it added (``core.verdict``)
        "context_items INTEGER NOT NULL DEFAULT 0",  # how many items ctx_lsp's blocks held
        # why the prefix the provider caches was rebuilt at this request (a compaction step and what
        # took it); NULL: it repeated the one before and appended (``sessions.cache_plan``)
        "prefix TEXT",
        # when it went upstream: the provider read and refreshed its cache then, not when the
        # reply ended (NULL: kept by an earlier version; ``created`` stands in)
        "sent REAL",
        "cache_ttl INTEGER",  # the cache lifetime its breakpoints asked for, seconds (NULL: the default)
    ),
)

TABLES = (
    SESSIONS,
    BRANCHES,
    MESSAGES,
    BODIES,
    TEXT_PACKS,
    TEXTS,
    PINS,
    PLANS,
    USAGE,
    COMPACTIONS,
    CAPSULES,
    REFLECTION_STATE,
    REFLECTIONS,
    SUGGESTIONS,
    ORIGINALS,
    GATEWAY_REQUESTS,
)
INDEXES = (
    "CREATE INDEX IF NOT EXISTS plans_session ON plans(session, created)",
    "CREATE INDEX IF NOT EXISTS usage_model ON usage(model)",
    # a session's latest report (each new conversation's first plan: without it, a scan of every
    # reply's usage the store ever kept — 2.1 ms at 25k replies, and growing)
    "CREATE INDEX IF NOT EXISTS usage_session ON usage(session, seq)",
    # a session's reflections (each turn's reflection reads them)
    "CREATE INDEX IF NOT EXISTS reflections_session ON reflections(session, seq)",
    # a turn's messages (reflection, each turn): not a walk through all of a long session's
    "CREATE INDEX IF NOT EXISTS messages_turn ON messages(session, turn)",
    # a conversation's latest request (each plan: is its provider cache still warm?)
    "CREATE INDEX IF NOT EXISTS gateway_requests_session ON gateway_requests(session, created)",
)
SCHEMA = ";\n".join(t.create() for t in TABLES) + ";\n" + ";\n".join(INDEXES) + ";\n"
