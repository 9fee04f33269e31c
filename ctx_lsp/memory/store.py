"""The memory store: sessions, conversation trees, pins, plans, usage — in SQLite (WAL).

Everything a user made lives here and survives restarts: `.ctx/memory.sqlite3` in the
workspace. (The symbol index is a separate file, `.ctx/index.sqlite3`: it is a cache that can
be deleted and rebuilt at any time, while this one must never lose a pin or a message.)

Two editors on one workspace run two server processes on one file: every write is one short
`BEGIN IMMEDIATE` transaction, and `busy_timeout` makes the other writer wait instead of fail.

Large message texts (tool results with whole files and logs) are kept once, by content hash, in
`bodies`: a message row stays small (planning reads the rows of a path, not their texts), the
same text sent twice or kept in many plans' inputs is stored once, and the first `HEAD_CHARS`
characters of a body can be read without the rest. Each message row records its size and its
token count (with the encoding it was counted in), so planning never re-reads a text to count it.
"""

from __future__ import annotations

import hashlib
import sqlite3
import threading
import time
import zlib
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

import msgspec

from ctx_lsp import storage
from ctx_lsp.core import calibration
from ctx_lsp.core import pins as pin_ttl
from ctx_lsp.core.items import ContextPlan, Message, Mode, PinKind, PinPolicy, PlanInput, ToolCall

SCHEMA = """
CREATE TABLE IF NOT EXISTS sessions(
    id TEXT PRIMARY KEY, created REAL NOT NULL, mode TEXT, model TEXT,
    branch TEXT NOT NULL DEFAULT 'main', turn INTEGER NOT NULL DEFAULT 0,
    compaction_threshold REAL, rolling INTEGER NOT NULL DEFAULT 0);
CREATE TABLE IF NOT EXISTS branches(
    session TEXT NOT NULL, name TEXT NOT NULL, head TEXT, forked_from TEXT, created REAL NOT NULL,
    PRIMARY KEY(session, name));
CREATE TABLE IF NOT EXISTS messages(
    seq INTEGER PRIMARY KEY AUTOINCREMENT, session TEXT NOT NULL, id TEXT NOT NULL, parent TEXT,
    role TEXT NOT NULL, content TEXT NOT NULL, tool_calls TEXT, tool_call_id TEXT, name TEXT,
    turn INTEGER NOT NULL, archived_by INTEGER, created REAL NOT NULL,
    bytes INTEGER, tokens INTEGER, tokens_encoding TEXT, body TEXT,
    UNIQUE(session, id));
CREATE TABLE IF NOT EXISTS pins(
    seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL, session TEXT NOT NULL,
    branch TEXT NOT NULL, kind TEXT NOT NULL, policy TEXT NOT NULL, ttl INTEGER,
    ttl_remaining INTEGER, lease_scope TEXT NOT NULL DEFAULT 'turn', priority INTEGER NOT NULL,
    created_by TEXT NOT NULL, symbol TEXT, path TEXT, start_line INTEGER, end_line INTEGER,
    title TEXT NOT NULL, status TEXT NOT NULL DEFAULT 'active', created_turn INTEGER NOT NULL,
    created REAL NOT NULL, UNIQUE(session, branch, id));
CREATE TABLE IF NOT EXISTS plans(
    id TEXT NOT NULL, session TEXT NOT NULL, branch TEXT NOT NULL, turn INTEGER NOT NULL,
    created REAL NOT NULL, query TEXT NOT NULL, inputs BLOB NOT NULL, plan BLOB NOT NULL,
    retrieval_set_id TEXT, tokens INTEGER NOT NULL, prompt_budget INTEGER NOT NULL,
    timings TEXT NOT NULL, options TEXT, bodies TEXT, PRIMARY KEY(id, session));
CREATE INDEX IF NOT EXISTS plans_session ON plans(session, created);
CREATE TABLE IF NOT EXISTS usage(
    seq INTEGER PRIMARY KEY AUTOINCREMENT, plan_id TEXT NOT NULL, session TEXT NOT NULL,
    model TEXT NOT NULL, estimate INTEGER NOT NULL, raw_estimate INTEGER NOT NULL, input_tokens INTEGER NOT NULL,
    cached_input_tokens INTEGER NOT NULL, output_tokens INTEGER NOT NULL, created REAL NOT NULL);
CREATE INDEX IF NOT EXISTS usage_model ON usage(model);
CREATE TABLE IF NOT EXISTS compactions(
    session TEXT NOT NULL, number INTEGER NOT NULL, branch TEXT NOT NULL, summary TEXT NOT NULL,
    digest BLOB, archived_ids TEXT NOT NULL, tokens_before INTEGER NOT NULL, tokens_after INTEGER NOT NULL,
    milliseconds REAL NOT NULL, summarizer TEXT NOT NULL, note TEXT, created REAL NOT NULL,
    PRIMARY KEY(session, number));
CREATE TABLE IF NOT EXISTS reflection_state(
    session TEXT PRIMARY KEY, activation BLOB, cluster TEXT, centroid TEXT, next_cluster INTEGER NOT NULL DEFAULT 1);
CREATE TABLE IF NOT EXISTS reflections(
    seq INTEGER PRIMARY KEY AUTOINCREMENT, session TEXT NOT NULL, turn INTEGER NOT NULL, kind TEXT NOT NULL,
    item TEXT NOT NULL, pin_id TEXT, reason TEXT NOT NULL, undone INTEGER NOT NULL DEFAULT 0, created REAL NOT NULL);
CREATE TABLE IF NOT EXISTS suggestions(
    session TEXT NOT NULL, item TEXT NOT NULL, turn INTEGER NOT NULL, reason TEXT NOT NULL,
    status TEXT NOT NULL DEFAULT 'open', PRIMARY KEY(session, item));
CREATE TABLE IF NOT EXISTS bodies(
    hash TEXT PRIMARY KEY, bytes INTEGER NOT NULL, head TEXT, text TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS capsules(
    path TEXT PRIMARY KEY, module TEXT NOT NULL, text TEXT NOT NULL, code_hash TEXT NOT NULL,
    source TEXT NOT NULL, confidence REAL NOT NULL, created REAL NOT NULL, stale INTEGER NOT NULL DEFAULT 0,
    stale_since REAL, current_hash TEXT);
"""


BODY_MIN_BYTES = 16 * 1024  # message texts at least this large live in `bodies`, once
HEAD_CHARS = 16_000  # the prefix of a body that summaries, history chunks and reflection read
BOUND_ENCODING = "utf-8 bytes"  # a token count that is the text's UTF-8 size (valid for any encoding)


def body_hash(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


# A conversation message of a plan's inputs whose text is kept in `bodies`: (turn, atom,
# 0 = messages / 1 = masked_messages, message, body hash).
BodyRef = tuple[int, int, int, int, str]


def encode_inputs(inputs: PlanInput) -> tuple[bytes, list[BodyRef], dict[str, str]]:
    """A plan's inputs as stored for replay: msgpack, zlib-compressed (plans of a long session
    repeat most of their text; compressed they take ~10x less room). Conversation texts of
    ``BODY_MIN_BYTES`` or more are left out and referenced by hash instead (they are in
    `bodies` already, or go there once): a session's plans do not each keep a copy of every
    large tool result they showed. Returns (blob, references, bodies to store)."""
    refs: list[BodyRef] = []
    bodies: dict[str, str] = {}
    for t, turn in enumerate(inputs.conversation.turns):
        for a, atom in enumerate(turn.atoms):
            for f, messages in enumerate((atom.messages, atom.masked_messages)):
                for k, m in enumerate(messages):
                    if len(m.content) * 4 < BODY_MIN_BYTES:  # at most 4 bytes per character
                        continue
                    data = m.content.encode("utf-8", "surrogatepass")
                    if len(data) >= BODY_MIN_BYTES:
                        h = body_hash(data)
                        bodies[h] = m.content
                        refs.append((t, a, f, k, h))
    stored = _set_contents(inputs, {ref[:4]: "" for ref in refs})
    return zlib.compress(msgspec.msgpack.encode(stored), 1), refs, bodies


def decode_inputs(blob: bytes, refs: list[BodyRef] | None = None, bodies: dict[str, str] | None = None) -> PlanInput:
    """Stored inputs back, with the texts ``refs`` name filled in from ``bodies``."""
    try:
        raw = zlib.decompress(blob)
    except zlib.error:  # stored before inputs were compressed
        raw = blob
    inputs = msgspec.msgpack.decode(raw, type=PlanInput)
    if not refs:
        return inputs
    return _set_contents(inputs, {ref[:4]: (bodies or {})[ref[4]] for ref in refs})


def _set_contents(inputs: PlanInput, contents: dict[tuple[int, int, int, int], str]) -> PlanInput:
    """``inputs`` with the content of the conversation messages at (turn, atom, form, message)
    replaced."""
    if not contents:
        return inputs
    replace = msgspec.structs.replace
    turns = list(inputs.conversation.turns)
    by_atom: dict[tuple[int, int], list[tuple[int, int, str]]] = {}
    for (t, a, f, k), text in contents.items():
        by_atom.setdefault((t, a), []).append((f, k, text))
    for (t, a), entries in sorted(by_atom.items()):
        atoms = list(turns[t].atoms)
        forms = [list(atoms[a].messages), list(atoms[a].masked_messages)]
        for f, k, text in entries:
            forms[f][k] = replace(forms[f][k], content=text)
        atoms[a] = replace(atoms[a], messages=tuple(forms[0]), masked_messages=tuple(forms[1]))
        turns[t] = replace(turns[t], atoms=tuple(atoms))
    return replace(inputs, conversation=replace(inputs.conversation, turns=tuple(turns)))


class StoreError(ValueError):
    """A request about something that does not exist (unknown session, message, pin)."""


class PinRecord(msgspec.Struct, kw_only=True, rename="camel"):
    id: str
    session: str
    branch: str
    kind: PinKind
    policy: PinPolicy
    ttl: int | None
    ttl_remaining: int | None
    lease_scope: str
    priority: int
    created_by: str
    symbol: str | None
    path: str | None
    start_line: int | None
    end_line: int | None
    title: str
    status: str
    created_turn: int
    seq: int


class StoredMessage(msgspec.Struct, kw_only=True, rename="camel"):
    id: str
    parent: str | None
    role: str
    content: str
    tool_calls: list[dict[str, str]] | None
    tool_call_id: str | None
    name: str | None
    turn: int
    archived_by: int | None
    seq: int
    bytes: int | None = None  # UTF-8 size of the whole content (``content`` may be a prefix of it)

    def to_message(self) -> Message:
        calls = tuple(ToolCall(**c) for c in self.tool_calls or [])
        return Message(
            id=self.id,
            role=self.role,  # type: ignore[arg-type]
            content=self.content,
            tool_calls=calls,
            tool_call_id=self.tool_call_id,
            name=self.name,
        )


class MessageMeta(msgspec.Struct, kw_only=True):
    """A stored message without its text: what planning reads for every message of a path."""

    id: str
    parent: str | None
    role: str
    tool_calls: list[dict[str, str]] | None
    tool_call_id: str | None
    name: str | None
    turn: int
    archived_by: int | None
    seq: int
    bytes: int | None  # UTF-8 size of the content; None until counted (stores of earlier versions)
    tokens: int | None  # raw token count of the content in ``tokens_encoding``
    tokens_encoding: str | None  # BOUND_ENCODING: ``tokens`` is the UTF-8 size, an upper bound

    def to_message(self, content: str = "") -> Message:
        calls = tuple(ToolCall(**c) for c in self.tool_calls or [])
        return Message(
            id=self.id,
            role=self.role,  # type: ignore[arg-type]
            content=content,
            tool_calls=calls,
            tool_call_id=self.tool_call_id,
            name=self.name,
        )


class SessionRecord(msgspec.Struct, kw_only=True, rename="camel"):
    id: str
    mode: Mode | None
    model: str | None
    branch: str
    turn: int
    rolling: bool = False  # trim old turns instead of summarising them
    compaction_threshold: float | None = None  # share of the conversation budget; None = default


class UsageStats(msgspec.Struct, kw_only=True):
    reports: int
    factor: float | None  # median of actual / raw estimate, once reports exist
    p90: float | None  # 90th percentile of the same ratio (the conservative calibration)
    spread: float | None  # (max - min) of the ratio
    last_estimate: int | None
    last_actual: int | None


_PIN_COLUMNS = (
    "id, session, branch, kind, policy, ttl, ttl_remaining, lease_scope, priority, created_by, "
    "symbol, path, start_line, end_line, title, status, created_turn, seq"
)
_MSG_COLUMNS = "m.id, m.parent, m.role, {content}, m.tool_calls, m.tool_call_id, m.name, m.turn, m.archived_by, m.seq"
_META_COLUMNS = (
    "m.id, m.parent, m.role, m.tool_calls, m.tool_call_id, m.name, m.turn, m.archived_by, m.seq, "
    "m.bytes, m.tokens, m.tokens_encoding"
)
_FULL = "COALESCE(b.text, m.content)"
# the first HEAD_CHARS characters (a body's head is stored apart, ahead of its text), and the size
_PREFIX = "CASE WHEN m.body IS NULL THEN m.content ELSE COALESCE(b.head, b.text) END, m.bytes, b.head IS NOT NULL"
_BODY_JOIN = "LEFT JOIN bodies b ON b.hash = m.body"


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


class MemoryStore:
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
            for statement in filter(str.strip, SCHEMA.split(";")):
                conn.execute(statement)
            # stores made by earlier versions: add the columns they lack
            added = set()
            for table, column, kind in (
                ("plans", "options", "TEXT"),
                ("plans", "cluster", "TEXT"),
                ("plans", "bodies", "TEXT"),
                ("pins", "cluster", "TEXT"),
                ("reflections", "cluster", "TEXT"),
                ("messages", "bytes", "INTEGER"),
                ("messages", "tokens", "INTEGER"),
                ("messages", "tokens_encoding", "TEXT"),
                ("messages", "body", "TEXT"),
            ):
                if column not in {r[1] for r in conn.execute(f"PRAGMA table_info({table})")}:
                    conn.execute(f"ALTER TABLE {table} ADD COLUMN {column} {kind}")
                    added.add(f"{table}.{column}")
            if "messages.body" in added:
                _move_large_texts(conn)

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

    # ---- sessions and branches ----------------------------------------------------------------

    def ensure_session(self, session: str) -> SessionRecord:
        with self.write() as conn:
            conn.execute("INSERT OR IGNORE INTO sessions(id, created) VALUES (?, ?)", (session, time.time()))
            conn.execute(
                "INSERT OR IGNORE INTO branches(session, name, head, created) VALUES (?, 'main', NULL, ?)",
                (session, time.time()),
            )
        return self.session(session)

    def session(self, session: str) -> SessionRecord:
        rows = self._read(
            "SELECT id, mode, model, branch, turn, rolling, compaction_threshold FROM sessions WHERE id = ?", (session,)
        )
        if not rows:
            raise StoreError(f"unknown session {session!r}")
        sid, mode, model, branch, turn, rolling, threshold = rows[0]
        return SessionRecord(
            id=sid,
            mode=mode,
            model=model,
            branch=branch,
            turn=turn,
            rolling=bool(rolling),
            compaction_threshold=threshold,
        )

    def set_memory_policy(self, session: str, rolling: bool | None, threshold: float | None) -> None:
        with self.write() as conn:
            if rolling is not None:
                conn.execute("UPDATE sessions SET rolling = ? WHERE id = ?", (int(rolling), session))
            if threshold is not None:
                conn.execute("UPDATE sessions SET compaction_threshold = ? WHERE id = ?", (threshold, session))

    def set_mode(self, session: str, mode: Mode) -> None:
        with self.write() as conn:
            conn.execute("UPDATE sessions SET mode = ? WHERE id = ?", (mode, session))

    def set_model(self, session: str, model: str) -> None:
        with self.write() as conn:
            conn.execute("UPDATE sessions SET model = ? WHERE id = ?", (model, session))

    def _head(self, conn: sqlite3.Connection, session: str, branch: str) -> str | None:
        row = conn.execute("SELECT head FROM branches WHERE session = ? AND name = ?", (session, branch)).fetchone()
        if row is None:
            raise StoreError(f"unknown branch {branch!r} in session {session!r}")
        return row[0]

    def fork(self, session: str, from_message: str, name: str | None) -> dict[str, Any]:
        """A new branch whose path ends at ``from_message``; the current branch's active pins are
        copied to it, and it becomes the active branch."""
        with self.write() as conn:
            row = conn.execute(
                "SELECT 1 FROM messages WHERE session = ? AND id = ?", (session, from_message)
            ).fetchone()
            if row is None:
                raise StoreError(f"cannot branch: no message {from_message!r} in session {session!r}")
            current = conn.execute("SELECT branch FROM sessions WHERE id = ?", (session,)).fetchone()[0]
            if name is None:
                n = conn.execute("SELECT COUNT(*) FROM branches WHERE session = ?", (session,)).fetchone()[0]
                name = f"branch-{n}"
            exists = conn.execute("SELECT 1 FROM branches WHERE session = ? AND name = ?", (session, name)).fetchone()
            if exists:
                raise StoreError(f"a branch named {name!r} already exists")
            conn.execute(
                "INSERT INTO branches(session, name, head, forked_from, created) VALUES (?, ?, ?, ?, ?)",
                (session, name, from_message, from_message, time.time()),
            )
            conn.execute(
                "INSERT INTO pins(id, session, branch, kind, policy, ttl, ttl_remaining, lease_scope, priority, "
                "created_by, symbol, path, start_line, end_line, title, status, created_turn, created) "
                "SELECT id, session, ?, kind, policy, ttl, ttl_remaining, lease_scope, priority, created_by, symbol, "
                "path, start_line, end_line, title, status, created_turn, ? FROM pins "
                "WHERE session = ? AND branch = ? AND status IN ('active', 'grace')",
                (name, time.time(), session, current),
            )
            conn.execute("UPDATE sessions SET branch = ? WHERE id = ?", (name, session))
        return {"name": name, "head": from_message, "forkedFrom": from_message, "active": True}

    # ---- messages --------------------------------------------------------------------------

    def append(
        self,
        session: str,
        branch: str | None,
        messages: list[Message],
        counts: list[tuple[int, str]] | None = None,
    ) -> list[StoredMessage]:
        """Append to the branch's path (each message's parent is the previous head). ``counts``
        are the messages' (token count, encoding), counted once by the caller."""
        out = []
        with self.write() as conn:
            sess = conn.execute("SELECT branch, turn FROM sessions WHERE id = ?", (session,)).fetchone()
            if sess is None:
                raise StoreError(f"unknown session {session!r}")
            branch = branch or sess[0]
            head = self._head(conn, session, branch)
            for n, m in enumerate(messages):
                if conn.execute("SELECT 1 FROM messages WHERE session = ? AND id = ?", (session, m.id)).fetchone():
                    raise StoreError(f"message id {m.id!r} is already in session {session!r}")
                calls = (
                    msgspec.json.encode([msgspec.to_builtins(c) for c in m.tool_calls]).decode()
                    if m.tool_calls
                    else None
                )
                size, body = _put_body(conn, m.content)
                tokens, encoding = counts[n] if counts else (None, None)
                cur = conn.execute(
                    "INSERT INTO messages(session, id, parent, role, content, tool_calls, tool_call_id, name, turn, "
                    "created, bytes, tokens, tokens_encoding, body) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        session,
                        m.id,
                        head,
                        m.role,
                        "" if body else m.content,
                        calls,
                        m.tool_call_id,
                        m.name,
                        sess[1],
                        time.time(),
                        size,
                        tokens,
                        encoding,
                        body,
                    ),
                )
                out.append(
                    StoredMessage(
                        id=m.id,
                        parent=head,
                        role=m.role,
                        content=m.content,
                        tool_calls=[msgspec.to_builtins(c) for c in m.tool_calls] or None,
                        tool_call_id=m.tool_call_id,
                        name=m.name,
                        turn=sess[1],
                        archived_by=None,
                        seq=cur.lastrowid or 0,
                        bytes=size,
                    )
                )
                head = m.id
            conn.execute("UPDATE branches SET head = ? WHERE session = ? AND name = ?", (head, session, branch))
        return out

    def _path_rows(self, session: str, branch: str | None, columns: str) -> list[tuple]:
        """Rows of the messages on the branch's path, oldest first (archived ones included)."""
        with self._lock:
            branch = branch or self.session(session).branch
            head = self._head(self._conn, session, branch)
            if head is None:
                return []
            return self._conn.execute(
                f"""WITH RECURSIVE chain(id, depth) AS (
                        SELECT ?, 0
                        UNION ALL
                        SELECT m.parent, chain.depth + 1 FROM messages m JOIN chain ON m.id = chain.id
                        WHERE m.session = ? AND m.parent IS NOT NULL)
                    SELECT {columns}
                    FROM chain JOIN messages m ON m.id = chain.id AND m.session = ? {_BODY_JOIN}
                    ORDER BY chain.depth DESC""",
                (head, session, session),
            ).fetchall()

    def path(self, session: str, branch: str | None = None) -> list[StoredMessage]:
        """The messages on the branch's path, oldest first (archived ones included, marked), whole."""
        return [_stored(r) for r in self._path_rows(session, branch, _MSG_COLUMNS.format(content=_FULL) + ", m.bytes")]

    def path_meta(self, session: str, branch: str | None = None) -> list[MessageMeta]:
        """The messages on the branch's path without their texts, oldest first."""
        return [_meta(r) for r in self._path_rows(session, branch, _META_COLUMNS)]

    def path_length(self, session: str, branch: str | None = None) -> int:
        return len(self._path_rows(session, branch, "m.seq"))

    def contents(self, session: str, ids: list[str], *, prefix: bool = False) -> dict[str, str]:
        """The texts of some messages, by id: whole, or (``prefix``) their first ``HEAD_CHARS``
        characters followed by a line saying how large the whole text is."""
        out: dict[str, str] = {}
        columns = "m.id, " + (_PREFIX if prefix else _FULL)
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            rows = self._read(
                f"SELECT {columns} FROM messages m {_BODY_JOIN} "
                f"WHERE m.session = ? AND m.id IN ({', '.join('?' * len(chunk))})",
                (session, *chunk),
            )
            for r in rows:
                out[r[0]] = _cut(r[0], r[1], r[2], r[3]) if prefix else r[1]
        return out

    def set_counts(self, session: str, counts: list[tuple[str, int, int, str]]) -> None:
        """Record (message id, UTF-8 size, token count, encoding) of messages counted after the
        fact (stores of earlier versions, or a session that changed to another encoding)."""
        with self.write() as conn:
            conn.executemany(
                "UPDATE messages SET bytes = ?, tokens = ?, tokens_encoding = ? WHERE session = ? AND id = ?",
                [(size, tokens, encoding, session, mid) for mid, size, tokens, encoding in counts],
            )

    # ---- pins ------------------------------------------------------------------------------

    def add_pin(self, pin: PinRecord) -> PinRecord:
        with self.write() as conn:
            existing = conn.execute(
                "SELECT status FROM pins WHERE session = ? AND branch = ? AND id = ?",
                (pin.session, pin.branch, pin.id),
            ).fetchone()
            if existing is not None:  # re-pinning renews the pin rather than duplicating it
                conn.execute(
                    "UPDATE pins SET status = 'active', kind = ?, policy = ?, ttl = ?, ttl_remaining = ?, "
                    "lease_scope = ?, priority = ?, created_by = ?, created_turn = ? "
                    "WHERE session = ? AND branch = ? AND id = ?",
                    (
                        pin.kind,
                        pin.policy,
                        pin.ttl,
                        pin.ttl_remaining,
                        pin.lease_scope,
                        pin.priority,
                        pin.created_by,
                        pin.created_turn,
                        pin.session,
                        pin.branch,
                        pin.id,
                    ),
                )
            else:
                conn.execute(
                    f"INSERT INTO pins({_PIN_COLUMNS.replace(', seq', '')}, created) VALUES ({', '.join('?' * 17)}, ?)",
                    (
                        pin.id,
                        pin.session,
                        pin.branch,
                        pin.kind,
                        pin.policy,
                        pin.ttl,
                        pin.ttl_remaining,
                        pin.lease_scope,
                        pin.priority,
                        pin.created_by,
                        pin.symbol,
                        pin.path,
                        pin.start_line,
                        pin.end_line,
                        pin.title,
                        "active",
                        pin.created_turn,
                        time.time(),
                    ),
                )
        return self.pin(pin.session, pin.branch, pin.id)

    def pin(self, session: str, branch: str, pin_id: str) -> PinRecord:
        rows = self._read(
            f"SELECT {_PIN_COLUMNS} FROM pins WHERE session = ? AND branch = ? AND id = ?",
            (session, branch, pin_id),
        )
        if not rows:
            raise StoreError(f"no pin {pin_id!r} in session {session!r} (branch {branch!r})")
        return _pin(rows[0])

    def pins(self, session: str, branch: str, *, include_inactive: bool = False) -> list[PinRecord]:
        where = "" if include_inactive else " AND status IN ('active', 'grace')"
        rows = self._read(
            f"SELECT {_PIN_COLUMNS} FROM pins WHERE session = ? AND branch = ?{where} ORDER BY seq",
            (session, branch),
        )
        return [_pin(r) for r in rows]

    def remove_pin(self, session: str, branch: str, pin_id: str) -> PinRecord:
        pin = self.pin(session, branch, pin_id)
        with self.write() as conn:
            conn.execute(
                "UPDATE pins SET status = 'removed' WHERE session = ? AND branch = ? AND id = ?",
                (session, branch, pin_id),
            )
        pin.status = "removed"
        return pin

    def advance_turn(self, session: str) -> tuple[int, list[PinRecord], list[PinRecord]]:
        """A turn ended: tick the TTLs of the active branch's pins. Returns the new turn number,
        the pins that entered their `ask` grace turn (the user is asked) and those that expired."""
        with self.write() as conn:
            row = conn.execute("SELECT branch, turn FROM sessions WHERE id = ?", (session,)).fetchone()
            if row is None:
                raise StoreError(f"unknown session {session!r}")
            branch, turn = row
            turn += 1
            conn.execute("UPDATE sessions SET turn = ? WHERE id = ?", (turn, session))
            rows = conn.execute(
                f"SELECT {_PIN_COLUMNS} FROM pins WHERE session = ? AND branch = ? AND status IN ('active', 'grace') "
                "ORDER BY seq",
                (session, branch),
            ).fetchall()
            asked, expired = [], []
            for r in rows:
                pin = _pin(r)
                left, state = pin_ttl.tick(pin.policy, pin.ttl_remaining)
                if left == pin.ttl_remaining:
                    continue
                pin.ttl_remaining = left
                if state != "live":
                    pin.status = state
                    (asked if state == "grace" else expired).append(pin)
                conn.execute(
                    "UPDATE pins SET ttl_remaining = ?, status = ? WHERE session = ? AND branch = ? AND id = ?",
                    (pin.ttl_remaining, pin.status, session, branch, pin.id),
                )
        return turn, asked, expired

    # ---- plans and usage -------------------------------------------------------------------

    def save_plan(
        self,
        session: str,
        branch: str,
        turn: int,
        query: str,
        inputs: PlanInput,
        plan: ContextPlan,
        timings: dict[str, float],
        options: dict[str, Any] | None = None,
    ) -> None:
        """Keep a plan with the inputs that rebuild it (for replay and telemetry). ``options`` are
        the request's parameters besides the query (model, budgets, focus…), so that a re-plan
        after a pin or a new message asks the same question the same way."""
        blob, refs, bodies = encode_inputs(inputs)
        with self.write() as conn:
            for text in bodies.values():
                _put_body(conn, text)
            conn.execute(
                "INSERT OR REPLACE INTO plans(id, session, branch, turn, created, query, inputs, plan, "
                "retrieval_set_id, tokens, prompt_budget, timings, options, cluster, bodies) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    plan.plan_id,
                    session,
                    branch,
                    turn,
                    time.time(),
                    query,
                    blob,
                    msgspec.json.encode(plan),
                    plan.retrieval_set_id,
                    plan.totals.tokens,
                    plan.prompt_budget,
                    msgspec.json.encode(timings).decode(),
                    msgspec.json.encode(options or {}).decode(),
                    plan.cluster_id,
                    msgspec.json.encode(refs).decode() if refs else None,
                ),
            )

    def plan_row(self, plan_id: str, session: str | None = None) -> dict[str, Any]:
        sql = (
            "SELECT id, session, branch, turn, query, inputs, plan, tokens, timings, options, bodies "
            "FROM plans WHERE id = ?"
        )
        args: tuple[Any, ...] = (plan_id,)
        if session is not None:
            sql += " AND session = ?"
            args += (session,)
        rows = self._read(sql + " ORDER BY created DESC LIMIT 1", args)
        if not rows:
            raise StoreError(f"no stored plan {plan_id!r}")
        pid, sess, branch, turn, query, inputs, plan, tokens, timings, options, refs = rows[0]
        return {
            "id": pid,
            "session": sess,
            "branch": branch,
            "turn": turn,
            "query": query,
            "inputs": inputs,
            "plan": plan,
            "tokens": tokens,
            "timings": timings,
            "options": msgspec.json.decode(options) if options else {},
            "bodies": msgspec.json.decode(refs, type=list[tuple[int, int, int, int, str]]) if refs else [],
        }

    def plan_inputs(self, row: dict[str, Any]) -> PlanInput:
        """The inputs of a stored plan (a ``plan_row``), large texts read back from `bodies`."""
        refs = row["bodies"]
        hashes = sorted({r[4] for r in refs})
        bodies = (
            dict(
                self._read(
                    f"SELECT hash, text FROM bodies WHERE hash IN ({', '.join('?' * len(hashes))})", tuple(hashes)
                )
            )
            if hashes
            else {}
        )
        return decode_inputs(row["inputs"], refs, bodies)

    def latest_plan_id(self, session: str) -> str | None:
        rows = self._read("SELECT id FROM plans WHERE session = ? ORDER BY created DESC LIMIT 1", (session,))
        return rows[0][0] if rows else None

    def plans(self, session: str | None = None, limit: int = 50) -> list[dict[str, Any]]:
        sql = "SELECT id, session, turn, plan, created FROM plans"
        args: tuple[Any, ...] = ()
        if session is not None:
            sql += " WHERE session = ?"
            args = (session,)
        rows = self._read(sql + " ORDER BY created DESC LIMIT ?", (*args, limit))
        return [{"id": r[0], "session": r[1], "turn": r[2], "plan": r[3], "created": r[4]} for r in rows]

    def record_usage(
        self,
        plan_id: str,
        session: str,
        model: str,
        estimate: int,
        raw_estimate: int,
        input_tokens: int,
        cached: int,
        output: int,
    ) -> None:
        """``estimate`` is what the plan said (calibrated); ``raw_estimate`` the same before the
        calibration factor, which is what a new factor is learned from."""
        with self.write() as conn:
            conn.execute(
                "INSERT INTO usage(plan_id, session, model, estimate, raw_estimate, input_tokens, "
                "cached_input_tokens, output_tokens, created) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (plan_id, session, model, estimate, raw_estimate, input_tokens, cached, output, time.time()),
            )

    def usage_stats(self, model: str, session: str | None = None) -> UsageStats:
        rows = self._read(
            "SELECT raw_estimate, input_tokens FROM usage WHERE model = ? AND raw_estimate > 0 ORDER BY seq", (model,)
        )
        last: tuple[int, int] | None = None
        if session is not None:
            r = self._read(
                "SELECT estimate, input_tokens FROM usage WHERE session = ? ORDER BY seq DESC LIMIT 1", (session,)
            )
            last = r[0] if r else None
        last_estimate, last_actual = last if last else (None, None)
        stats = calibration.ratio_stats(rows)
        return UsageStats(
            reports=stats.reports if stats else 0,
            factor=stats.median if stats else None,
            p90=stats.p90 if stats else None,
            spread=stats.spread if stats else None,
            last_estimate=last_estimate,
            last_actual=last_actual,
        )

    def plan_summaries(self, session: str | None, limit: int) -> list[tuple[str, int, int, str, bytes]]:
        sql = "SELECT session, tokens, prompt_budget, timings, plan FROM plans"
        args: tuple[Any, ...] = ()
        if session is not None:
            sql += " WHERE session = ?"
            args = (session,)
        return self._read(sql + " ORDER BY created DESC LIMIT ?", (*args, limit))

    # ---- compactions ---------------------------------------------------------------------------

    def add_compaction(
        self,
        session: str,
        branch: str,
        summary: str,
        digest: bytes | None,
        archived_ids: list[str],
        tokens_before: int,
        tokens_after: int,
        milliseconds: float,
        summarizer: str,
        note: str | None,
    ) -> int:
        """Record a compaction and mark its messages archived (never deleted). Returns its number."""
        with self.write() as conn:
            number = (
                1
                + conn.execute(
                    "SELECT COALESCE(MAX(number), 0) FROM compactions WHERE session = ?", (session,)
                ).fetchone()[0]
            )
            conn.execute(
                "INSERT INTO compactions(session, number, branch, summary, digest, archived_ids, tokens_before, "
                "tokens_after, milliseconds, summarizer, note, created) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    session,
                    number,
                    branch,
                    summary,
                    digest,
                    msgspec.json.encode(archived_ids).decode(),
                    tokens_before,
                    tokens_after,
                    milliseconds,
                    summarizer,
                    note,
                    time.time(),
                ),
            )
            conn.executemany(
                "UPDATE messages SET archived_by = ? WHERE session = ? AND id = ? AND archived_by IS NULL",
                [(number, session, mid) for mid in archived_ids],
            )
        return number

    def compactions(self, session: str) -> list[dict[str, Any]]:
        rows = self._read(
            "SELECT number, branch, summary, digest, archived_ids, tokens_before, tokens_after, milliseconds, "
            "summarizer, note FROM compactions WHERE session = ? ORDER BY number",
            (session,),
        )
        return [
            {
                "number": r[0],
                "branch": r[1],
                "summary": r[2],
                "digest": r[3],
                "archivedIds": msgspec.json.decode(r[4]),
                "tokensBefore": r[5],
                "tokensAfter": r[6],
                "milliseconds": r[7],
                "summarizer": r[8],
                "note": r[9],
            }
            for r in rows
        ]

    # ---- capsules ------------------------------------------------------------------------------

    def put_capsule(self, path: str, module: str, text: str, code_hash: str, source: str, confidence: float) -> None:
        with self.write() as conn:
            conn.execute(
                "INSERT OR REPLACE INTO capsules(path, module, text, code_hash, source, confidence, created, stale, "
                "stale_since, current_hash) VALUES (?, ?, ?, ?, ?, ?, ?, 0, NULL, ?)",
                (path, module, text, code_hash, source, confidence, time.time(), code_hash),
            )

    def capsules(self) -> list[dict[str, Any]]:
        rows = self._read(
            "SELECT path, module, text, code_hash, source, confidence, created, stale, stale_since FROM capsules "
            "ORDER BY path"
        )
        return [
            {
                "path": r[0],
                "module": r[1],
                "text": r[2],
                "codeHash": r[3],
                "source": r[4],
                "confidence": r[5],
                "created": r[6],
                "stale": bool(r[7]),
                "staleSince": r[8],
            }
            for r in rows
        ]

    def check_capsule(self, path: str, current_hash: str | None) -> bool | None:
        """Compare a capsule's code hash with the file's current one; mark it stale (or fresh
        again, when the code is back). Returns True when it just became stale, None when there is
        no capsule for ``path``."""
        with self.write() as conn:
            row = conn.execute("SELECT code_hash, stale FROM capsules WHERE path = ?", (path,)).fetchone()
            if row is None:
                return None
            code_hash, stale = row
            now_stale = current_hash != code_hash
            conn.execute(
                "UPDATE capsules SET stale = ?, stale_since = CASE WHEN ? THEN COALESCE(stale_since, ?) END, "
                "current_hash = ? WHERE path = ?",
                (int(now_stale), int(now_stale), time.time(), current_hash, path),
            )
        return now_stale and not stale

    # ---- reflection ----------------------------------------------------------------------------

    def reflection_state(self, session: str) -> tuple[bytes | None, str | None, str | None, int]:
        rows = self._read(
            "SELECT activation, cluster, centroid, next_cluster FROM reflection_state WHERE session = ?", (session,)
        )
        return rows[0] if rows else (None, None, None, 1)

    def save_activation(self, session: str, activation: bytes) -> None:
        with self.write() as conn:
            conn.execute("INSERT OR IGNORE INTO reflection_state(session) VALUES (?)", (session,))
            conn.execute("UPDATE reflection_state SET activation = ? WHERE session = ?", (activation, session))

    def save_cluster(self, session: str, cluster: str, centroid: str, next_cluster: int) -> None:
        with self.write() as conn:
            conn.execute("INSERT OR IGNORE INTO reflection_state(session) VALUES (?)", (session,))
            conn.execute(
                "UPDATE reflection_state SET cluster = ?, centroid = ?, next_cluster = ? WHERE session = ?",
                (cluster, centroid, next_cluster, session),
            )

    def record_reflection(
        self, session: str, turn: int, kind: str, item: str, pin_id: str | None, reason: str, cluster: str | None = None
    ) -> int:
        with self.write() as conn:
            cur = conn.execute(
                "INSERT INTO reflections(session, turn, kind, item, pin_id, reason, created, cluster) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (session, turn, kind, item, pin_id, reason, time.time(), cluster),
            )
            return cur.lastrowid or 0

    def reflections(self, session: str) -> list[dict[str, Any]]:
        rows = self._read(
            "SELECT seq, turn, kind, item, pin_id, reason, undone, cluster FROM reflections WHERE session = ? "
            "ORDER BY seq",
            (session,),
        )
        return [
            {
                "id": r[0],
                "turn": r[1],
                "kind": r[2],
                "item": r[3],
                "pinId": r[4],
                "reason": r[5],
                "undone": bool(r[6]),
                "task": r[7],
            }
            for r in rows
        ]

    def mark_reflection_undone(self, session: str, seq: int) -> None:
        with self.write() as conn:
            conn.execute("UPDATE reflections SET undone = 1 WHERE session = ? AND seq = ?", (session, seq))

    def add_suggestion(self, session: str, item: str, turn: int, reason: str) -> bool:
        with self.write() as conn:
            cur = conn.execute(
                "INSERT OR IGNORE INTO suggestions(session, item, turn, reason) VALUES (?, ?, ?, ?)",
                (session, item, turn, reason),
            )
            return cur.rowcount > 0

    def suggestions(self, session: str) -> list[dict[str, Any]]:
        rows = self._read(
            "SELECT item, turn, reason, status FROM suggestions WHERE session = ? ORDER BY turn, item", (session,)
        )
        return [{"item": r[0], "turn": r[1], "reason": r[2], "status": r[3]} for r in rows]

    def set_suggestion_status(self, session: str, item: str, status: str) -> None:
        with self.write() as conn:
            conn.execute("UPDATE suggestions SET status = ? WHERE session = ? AND item = ?", (status, session, item))

    def set_pin_ttl(self, session: str, branch: str, pin_id: str, ttl_remaining: int, status: str = "active") -> None:
        with self.write() as conn:
            conn.execute(
                "UPDATE pins SET ttl_remaining = ?, status = ? WHERE session = ? AND branch = ? AND id = ?",
                (ttl_remaining, status, session, branch, pin_id),
            )

    def set_pin_cluster(self, session: str, branch: str, pin_id: str, cluster: str | None) -> None:
        with self.write() as conn:
            conn.execute(
                "UPDATE pins SET cluster = ? WHERE session = ? AND branch = ? AND id = ?",
                (cluster, session, branch, pin_id),
            )

    def task_pins_outside(self, session: str, branch: str, cluster: str) -> list[tuple[str, str | None]]:
        """Active task-scoped pins made under another cluster: (pin id, symbol)."""
        return self._read(
            "SELECT id, symbol FROM pins WHERE session = ? AND branch = ? AND status IN ('active', 'grace') "
            "AND lease_scope = 'task' AND cluster IS NOT NULL AND cluster != ?",
            (session, branch, cluster),
        )

    def turn_messages(self, session: str, turn: int) -> list[StoredMessage]:
        """The messages appended during a turn; a large text is read as its first HEAD_CHARS
        characters (``bytes`` says how large it is)."""
        rows = self._read(
            f"SELECT {_MSG_COLUMNS.format(content=_PREFIX)} FROM messages m {_BODY_JOIN} "
            "WHERE m.session = ? AND m.turn = ? ORDER BY m.seq",
            (session, turn),
        )
        return [_stored_prefix(r) for r in rows]

    def session_plans(self, session: str) -> list[dict[str, Any]]:
        rows = self._read(
            "SELECT id, turn, query, plan, cluster, created FROM plans WHERE session = ? ORDER BY created", (session,)
        )
        return [{"id": r[0], "turn": r[1], "query": r[2], "plan": r[3], "cluster": r[4]} for r in rows]

    def session_usage(self, session: str) -> list[tuple[str, int, int]]:
        return self._read(
            "SELECT plan_id, estimate, input_tokens FROM usage WHERE session = ? ORDER BY seq", (session,)
        )

    def usage_rows(self) -> list[tuple[str, int, int]]:
        return self._read("SELECT model, estimate, input_tokens FROM usage ORDER BY seq")


def _pin(r: tuple) -> PinRecord:
    (
        pid,
        session,
        branch,
        kind,
        policy,
        ttl,
        ttl_remaining,
        scope,
        priority,
        created_by,
        symbol,
        path,
        start,
        end,
        title,
        status,
        created_turn,
        seq,
    ) = r
    return PinRecord(
        id=pid,
        session=session,
        branch=branch,
        kind=kind,
        policy=policy,
        ttl=ttl,
        ttl_remaining=ttl_remaining,
        lease_scope=scope,
        priority=priority,
        created_by=created_by,
        symbol=symbol,
        path=path,
        start_line=start,
        end_line=end,
        title=title,
        status=status,
        created_turn=created_turn,
        seq=seq,
    )


def _stored(r: tuple) -> StoredMessage:
    mid, parent, role, content, calls, call_id, name, turn, archived_by, seq, size = r
    return StoredMessage(
        id=mid,
        parent=parent,
        role=role,
        content=content,
        tool_calls=msgspec.json.decode(calls) if calls else None,
        tool_call_id=call_id,
        name=name,
        turn=turn,
        archived_by=archived_by,
        seq=seq,
        bytes=size,
    )


def _stored_prefix(r: tuple) -> StoredMessage:
    mid, parent, role, content, size, cut, *rest = r
    return _stored((mid, parent, role, _cut(mid, content, size, cut), *rest, size))


def _meta(r: tuple) -> MessageMeta:
    mid, parent, role, calls, call_id, name, turn, archived_by, seq, size, tokens, encoding = r
    return MessageMeta(
        id=mid,
        parent=parent,
        role=role,
        tool_calls=msgspec.json.decode(calls) if calls else None,
        tool_call_id=call_id,
        name=name,
        turn=turn,
        archived_by=archived_by,
        seq=seq,
        bytes=size,
        tokens=tokens,
        tokens_encoding=encoding,
    )


def _cut(mid: str, text: str, size: int | None, cut: bool | int | None) -> str:
    if not cut:
        return text
    return f"{text}\n[… cut: the whole text is {size or 0:,} bytes, kept in the session as message {mid}]"


def _put_body(conn: sqlite3.Connection, text: str) -> tuple[int, str | None]:
    """(UTF-8 size, body hash): a text of ``BODY_MIN_BYTES`` or more is stored in `bodies`, once."""
    if len(text) * 4 < BODY_MIN_BYTES:  # at most 4 bytes per character: no need to encode
        return len(text.encode("utf-8", "surrogatepass")), None
    data = text.encode("utf-8", "surrogatepass")
    if len(data) < BODY_MIN_BYTES:
        return len(data), None
    h = body_hash(data)
    if conn.execute("SELECT 1 FROM bodies WHERE hash = ?", (h,)).fetchone() is None:
        head = text[:HEAD_CHARS] if len(text) > HEAD_CHARS else None
        conn.execute("INSERT INTO bodies(hash, bytes, head, text) VALUES (?, ?, ?, ?)", (h, len(data), head, text))
    return len(data), h


def _move_large_texts(conn: sqlite3.Connection) -> None:
    """A store of an earlier version kept every text in its message row: move the large ones to
    `bodies` (once, when the column is added). Sizes and counts are filled in when first needed."""
    rows = conn.execute("SELECT seq FROM messages WHERE length(content) * 4 >= ?", (BODY_MIN_BYTES,)).fetchall()
    for (seq,) in rows:
        (text,) = conn.execute("SELECT content FROM messages WHERE seq = ?", (seq,)).fetchone()
        size, body = _put_body(conn, text)
        if body is not None:
            conn.execute("UPDATE messages SET content = '', body = ?, bytes = ? WHERE seq = ?", (body, size, seq))
