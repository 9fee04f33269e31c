"""Sessions, branches and messages: the conversation tree, and the compactions that archive it.

A session's messages form a tree (each names its parent); a branch is a path through it, named
by its head. Messages are appended to the active branch's path, never deleted: a compaction
marks them archived. Each message row records its size and its token count (with the encoding
it was counted in), so planning never re-reads a text to count it; large texts are in `bodies`.
"""

from __future__ import annotations

import sqlite3
import time
from typing import Any

import msgspec

from ctx_lsp.core.items import Message, Mode
from ctx_lsp.memory.store import bodies, pins
from ctx_lsp.memory.store.codec import Codec, json_or_none
from ctx_lsp.memory.store.db import Database, StoreError
from ctx_lsp.memory.store.messages import MessageMeta, StoredMessage, meta_of
from ctx_lsp.memory.store.paths import KeptPath
from ctx_lsp.memory.store.pins import PinRecord
from ctx_lsp.memory.store.schema import BRANCHES, COMPACTIONS, GATEWAY_REQUESTS, MESSAGES, ORIGINALS, SESSIONS


class InsideCompaction(StoreError):
    """A branch would end inside a compaction's archived turns: it would start with archived
    turns whose summary also covers turns that are not on it, so neither would reach a prompt."""


BOUND_ENCODING = "utf-8 bytes"  # a token count that is the text's UTF-8 size (valid for any encoding)


class SessionRecord(msgspec.Struct, kw_only=True, rename="camel"):
    id: str
    mode: Mode | None
    model: str | None
    branch: str
    turn: int
    rolling: bool = False  # trim old turns instead of summarising them
    compaction_threshold: float | None = None  # share of the conversation budget; None = default


SESSION = Codec.struct(SESSIONS, SessionRecord, rolling=bool)
MESSAGE = Codec.struct(MESSAGES, StoredMessage, tool_calls=json_or_none)
META = Codec.struct(MESSAGES, MessageMeta, tool_calls=json_or_none)
COMPACTION = Codec.dicts(
    COMPACTIONS,
    (
        "number",
        "branch",
        "summary",
        "digest",
        "archived_ids",
        "tokens_before",
        "tokens_after",
        "milliseconds",
        "summarizer",
        "note",
    ),
    archived_ids=msgspec.json.decode,
)

# a message's text, read from its row or its body, whole or as the body's head
BODY_JOIN = "LEFT JOIN bodies b ON b.hash = m.body"
WHOLE = "COALESCE(b.text, m.content)"
HEAD = "CASE WHEN m.body IS NULL THEN m.content ELSE COALESCE(b.head, b.text) END"
CUT = "b.head IS NOT NULL"  # HEAD is not the whole text


class Conversation(Database):
    # ---- sessions and branches ----------------------------------------------------------------

    def ensure_session(self, session: str) -> SessionRecord:
        rows = self._read(f"SELECT {SESSION.select()} FROM sessions WHERE id = ?", (session,))
        if rows:  # every request opens its session: a write only for a new one
            return SESSION.decode(rows[0])
        with self.write() as conn:
            conn.execute("INSERT OR IGNORE INTO sessions(id, created) VALUES (?, ?)", (session, time.time()))
            conn.execute(
                "INSERT OR IGNORE INTO branches(session, name, head, created) VALUES (?, 'main', NULL, ?)",
                (session, time.time()),
            )
        return self.session(session)

    def session(self, session: str) -> SessionRecord:
        rows = self._read(f"SELECT {SESSION.select()} FROM sessions WHERE id = ?", (session,))
        if not rows:
            raise StoreError(f"unknown session {session!r}")
        return SESSION.decode(rows[0])

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

    def fork(self, session: str, from_message: str, name: str | None) -> dict[str, Any]:
        """A new branch whose path ends at ``from_message``; the current branch's active pins are
        copied to it, and it becomes the active branch."""
        with self.write() as conn:
            row = conn.execute(
                "SELECT 1 FROM messages WHERE session = ? AND id = ?", (session, from_message)
            ).fetchone()
            if row is None:
                raise StoreError(f"cannot branch: no message {from_message!r} in session {session!r}")
            _refuse_inside_compaction(conn, session, from_message)
            current, _ = session_row(conn, session)
            if name is None:
                n = conn.execute("SELECT COUNT(*) FROM branches WHERE session = ?", (session,)).fetchone()[0]
                name = f"branch-{n}"
            exists = conn.execute("SELECT 1 FROM branches WHERE session = ? AND name = ?", (session, name)).fetchone()
            if exists:
                raise StoreError(f"a branch named {name!r} already exists")
            BRANCHES.insert(
                conn,
                {
                    "session": session,
                    "name": name,
                    "head": from_message,
                    "forked_from": from_message,
                    "created": time.time(),
                },
            )
            pins.copy_to_branch(conn, session, current, name)
            conn.execute("UPDATE sessions SET branch = ? WHERE id = ?", (name, session))
        return {"name": name, "head": from_message, "forkedFrom": from_message, "active": True}

    def follow(self, session: str, chain: list[str]) -> tuple[int, str]:
        """Make the active branch end where the id chain ``chain`` (a conversation as a client
        resent it, ids derived from the ids before them) leaves the store: the current branch when
        its head is there, else a branch whose head is, else a new branch forked there (the client
        edited or rewound its history). Returns how many of ``chain`` are stored, and the branch.
        Raises ``InsideCompaction`` when that branch would end inside a compaction's archived turns
        (the caller keeps the conversation elsewhere)."""
        with self.reading() as conn:  # most requests continue the current branch: no write at all
            known, target = _stored(conn, session, chain)
            current, _ = session_row(conn, session)
            if _head(conn, session, current) == target:
                return known, current
            if target is not None:  # the same conversation started again, or rewound past a compaction
                _refuse_inside_compaction(conn, session, target)
        with self.write() as conn:
            known, target = _stored(conn, session, chain)
            current, _ = session_row(conn, session)
            if _head(conn, session, current) == target:
                return known, current
            row = conn.execute(
                "SELECT name FROM branches WHERE session = ? AND head IS ? ORDER BY created DESC LIMIT 1",
                (session, target),
            ).fetchone()
            if row is None:
                names = {r[0] for r in conn.execute("SELECT name FROM branches WHERE session = ?", (session,))}
                name = next(f"branch-{n}" for n in range(len(names), len(names) * 2 + 2) if f"branch-{n}" not in names)
                BRANCHES.insert(
                    conn,
                    {"session": session, "name": name, "head": target, "forked_from": target, "created": time.time()},
                )
                pins.copy_to_branch(conn, session, current, name)
                self.after_commit(lambda: self._forked(session, current, name, target))
            else:
                name = row[0]
            conn.execute("UPDATE sessions SET branch = ? WHERE id = ?", (name, session))
        return known, name

    def _forked(self, session: str, parent: str, branch: str, head: str | None) -> None:
        """A branch forked at ``head`` of ``parent``'s path: its path is that path's start, kept
        without a read (the gateway forks wherever a client's history left the stored one)."""
        memo = self.memo()
        kept = memo.get(("path", session, parent))
        if kept is None or head is None:
            return
        metas = kept.metas
        at = next((n for n in range(len(metas) - 1, -1, -1) if metas[n].id == head), None)
        if at is not None:
            memo["path", session, branch] = kept.start(at + 1)

    def put_original(self, session: str, mid: str, kind: str, tokens: int, shrunk_tokens: int, text: str) -> None:
        """Keep a tool output as it came, its message holding a shortened form."""
        with self.write() as conn:
            ORIGINALS.insert(
                conn,
                {
                    "session": session,
                    "id": mid,
                    "kind": kind,
                    "tokens": tokens,
                    "shrunk_tokens": shrunk_tokens,
                    "text": text,
                    "created": time.time(),
                },
                verb="INSERT OR IGNORE",
            )

    def original(self, mid: str, session: str | None = None) -> tuple[str, str, str] | None:
        """(session, kind, text) of a shortened tool output, by its message id (ids are content
        hashes, so one id names one output whichever session it is in)."""
        sql = "SELECT session, kind, text FROM originals WHERE id = ?"
        args: tuple[Any, ...] = (mid,)
        if session is not None:
            sql, args = sql + " AND session = ?", (mid, session)
        rows = self._read(sql + " LIMIT 1", args)
        return rows[0] if rows else None

    def shrunk_saving(self, session: str, ids: list[str]) -> int:
        """Tokens the shortened tool outputs among ``ids`` save, whole to shortened. The session's
        shortened outputs are read, not each of ``ids`` looked up: a conversation holds a few of
        them among hundreds of messages, and the gateway asks with every request."""
        wanted = set(ids)
        rows = self._read("SELECT id, tokens - shrunk_tokens FROM originals WHERE session = ?", (session,))
        return sum(saved for mid, saved in rows if mid in wanted)

    def record_gateway_request(self, row: dict[str, Any]) -> None:
        with self.write() as conn:
            GATEWAY_REQUESTS.insert(conn, {**row, "created": time.time()})

    def last_gateway_request(self, session: str) -> float | None:
        """When the session's latest request through the gateway went upstream (epoch seconds)."""
        row = self._read("SELECT MAX(COALESCE(sent, created)) FROM gateway_requests WHERE session = ?", (session,))
        return row[0][0] if row else None

    def gateway_requests(self, session: str | None = None) -> list[dict[str, Any]]:
        names = [n for n in GATEWAY_REQUESTS.names if n != "seq"]
        where, args = (" WHERE session = ?", (session,)) if session else ("", ())
        rows = self._read(f"SELECT {', '.join(names)} FROM gateway_requests{where} ORDER BY seq", args)
        return [dict(zip(names, r, strict=True)) for r in rows]

    def shrink_totals(self, session: str | None = None) -> tuple[int, int, int]:
        """(outputs shortened, their tokens, their shortened tokens)."""
        where, args = (" WHERE session = ?", (session,)) if session else ("", ())
        row = self._read(f"SELECT COUNT(*), SUM(tokens), SUM(shrunk_tokens) FROM originals{where}", args)[0]
        return row[0] or 0, row[1] or 0, row[2] or 0

    def advance_turn(self, session: str) -> tuple[int, list[PinRecord], list[PinRecord]]:
        """A turn ended: count it, and tick the TTLs of the active branch's pins. Returns the new
        turn number, the pins that entered their `ask` grace turn (the user is asked) and those
        that expired."""
        with self.write() as conn:
            branch, turn = session_row(conn, session)
            conn.execute("UPDATE sessions SET turn = ? WHERE id = ?", (turn + 1, session))
            asked, expired = pins.tick(conn, session, branch)
        return turn + 1, asked, expired

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
            active, turn = session_row(conn, session)
            branch = branch or active
            head = _head(conn, session, branch)
            for n, m in enumerate(messages):
                if conn.execute("SELECT 1 FROM messages WHERE session = ? AND id = ?", (session, m.id)).fetchone():
                    raise StoreError(f"message id {m.id!r} is already in session {session!r}")
                calls = [msgspec.to_builtins(c) for c in m.tool_calls] or None
                size, body = bodies.put_body(conn, m.content)
                tokens, encoding = counts[n] if counts else (None, None)
                cur = MESSAGES.insert(
                    conn,
                    {
                        "session": session,
                        "id": m.id,
                        "parent": head,
                        "role": m.role,
                        "content": "" if body else m.content,
                        "tool_calls": msgspec.json.encode(calls).decode() if calls else None,
                        "tool_call_id": m.tool_call_id,
                        "name": m.name,
                        "turn": turn,
                        "created": time.time(),
                        "bytes": size,
                        "tokens": tokens,
                        "tokens_encoding": encoding,
                        "body": body,
                    },
                )
                out.append(
                    StoredMessage(
                        id=m.id,
                        parent=head,
                        role=m.role,
                        content=m.content,
                        tool_calls=calls,
                        tool_call_id=m.tool_call_id,
                        name=m.name,
                        turn=turn,
                        archived_by=None,
                        seq=cur.lastrowid or 0,
                        bytes=size,
                    )
                )
                head = m.id
            conn.execute("UPDATE branches SET head = ? WHERE session = ? AND name = ?", (head, session, branch))
            start = out[0].parent if out else head
            metas = [meta_of(m, counts[n] if counts else (None, None)) for n, m in enumerate(out)]
            self.after_commit(lambda: self._extend_path(session, branch, start, head, metas))
        return out

    def _extend_path(
        self, session: str, branch: str, start: str | None, head: str | None, new: list[MessageMeta]
    ) -> None:
        """Appended to a branch: its kept path grows by the new messages (when it ended where they
        start), instead of being read again whole — a long session's path has thousands."""
        memo = self.memo()
        kept = memo.pop(("path", session, branch), None)
        if kept is not None and kept.head == start:
            memo["path", session, branch] = kept.extended(head, new)

    def _path_rows(self, session: str, branch: str | None, columns: str) -> list[tuple]:
        """Rows of the messages on the branch's path, oldest first (archived ones included)."""
        with self.reading() as conn:
            branch = branch or self.session(session).branch
            head = _head(conn, session, branch)
            if head is None:
                return []
            return conn.execute(
                f"""WITH RECURSIVE chain(id, depth) AS (
                        SELECT ?, 0
                        UNION ALL
                        SELECT m.parent, chain.depth + 1 FROM messages m JOIN chain ON m.id = chain.id
                        WHERE m.session = ? AND m.parent IS NOT NULL)
                    SELECT {columns}
                    FROM chain JOIN messages m ON m.id = chain.id AND m.session = ? {BODY_JOIN}
                    ORDER BY chain.depth DESC""",
                (head, session, session),
            ).fetchall()

    def path(self, session: str, branch: str | None = None) -> list[StoredMessage]:
        """The messages on the branch's path, oldest first (archived ones included, marked), whole."""
        return [MESSAGE.decode(r) for r in self._path_rows(session, branch, MESSAGE.select("m", content=WHOLE))]

    def path_meta(self, session: str, branch: str | None = None) -> list[MessageMeta]:
        """The messages on the branch's path without their texts, oldest first. Kept in memory
        between plans (see ``Database.memo``): every plan reads the whole path, and a long
        session's path has thousands of messages."""
        with self.reading():  # the lock: a commit's note may be changing the kept path
            kept = self._kept_path(session, branch)
            return list(kept.metas) if kept is not None else []

    def path_parts(self, session: str, branch: str | None = None) -> tuple[tuple[MessageMeta, ...], list[MessageMeta]]:
        """The branch's path as (archived messages, active messages), each oldest first. The
        archived tuple is the same object from call to call until a compaction archives more (or
        the store is read again): callers may keep what they make of it by identity."""
        with self.reading():
            kept = self._kept_path(session, branch)
            return kept.parts() if kept is not None else ((), [])

    def _kept_path(self, session: str, branch: str | None) -> KeptPath | None:
        with self.reading() as conn:
            branch = branch or self.session(session).branch
            head = _head(conn, session, branch)
            if head is None:
                return None
            memo = self.memo()
            kept = memo.get(("path", session, branch))
            if kept is None or kept.head != head:
                metas = [META.decode(r) for r in self._path_rows(session, branch, META.select("m"))]
                kept = memo["path", session, branch] = KeptPath(head, metas)
            return kept

    def path_length(self, session: str, branch: str | None = None) -> int:
        """How many messages the branch's path has: the kept path's length (counting the rows
        again would walk the whole path, after every append)."""
        with self.reading():
            kept = self._kept_path(session, branch)
            return len(kept.metas) if kept is not None else 0

    def contents(self, session: str, ids: list[str], *, prefix: bool = False) -> dict[str, str]:
        """The texts of some messages, by id: whole, or (``prefix``) their first ``HEAD_CHARS``
        characters followed by a line saying how large the whole text is."""
        out: dict[str, str] = {}
        columns = f"m.id, {HEAD}, m.bytes, {CUT}" if prefix else f"m.id, {WHOLE}"
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            rows = self._read(
                f"SELECT {columns} FROM messages m {BODY_JOIN} "
                f"WHERE m.session = ? AND m.id IN ({', '.join('?' * len(chunk))})",
                (session, *chunk),
            )
            for mid, text, *size_cut in rows:
                out[mid] = bodies.cut(mid, text, size_cut[0]) if prefix and size_cut[1] else text
        return out

    def set_counts(self, session: str, counts: list[tuple[str, int, int, str]]) -> None:
        """Record (message id, UTF-8 size, token count, encoding) of messages counted after the
        fact (stores of earlier versions, or a session that changed to another encoding)."""
        with self.write() as conn:
            conn.executemany(
                "UPDATE messages SET bytes = ?, tokens = ?, tokens_encoding = ? WHERE session = ? AND id = ?",
                [(size, tokens, encoding, session, mid) for mid, size, tokens, encoding in counts],
            )
            self.after_commit(lambda: self._forget_session(session))

    def _forget_session(self, session: str) -> None:
        """Drop the kept paths and compactions of a session whose messages changed in place."""
        memo = self.memo()
        for key in [k for k in memo if k[0] in ("path", "compactions") and k[1] == session]:
            del memo[key]

    def turn_messages(self, session: str, turn: int) -> list[StoredMessage]:
        """The messages appended during a turn; a large text is read as its first HEAD_CHARS
        characters (``bytes`` says how large it is)."""
        rows = self._read(
            f"SELECT {MESSAGE.select('m', content=HEAD)}, {CUT} FROM messages m {BODY_JOIN} "
            "WHERE m.session = ? AND m.turn = ? ORDER BY m.seq",
            (session, turn),
        )
        out = []
        for *row, cut in rows:
            m = MESSAGE.decode(row)
            if cut:
                m.content = bodies.cut(m.id, m.content, m.bytes)
            out.append(m)
        return out

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
            (last,) = conn.execute(
                "SELECT COALESCE(MAX(number), 0) FROM compactions WHERE session = ?", (session,)
            ).fetchone()
            number = last + 1
            COMPACTIONS.insert(
                conn,
                {
                    "session": session,
                    "number": number,
                    "branch": branch,
                    "summary": summary,
                    "digest": digest,
                    "archived_ids": msgspec.json.encode(archived_ids).decode(),
                    "tokens_before": tokens_before,
                    "tokens_after": tokens_after,
                    "milliseconds": milliseconds,
                    "summarizer": summarizer,
                    "note": note,
                    "created": time.time(),
                },
            )
            conn.executemany(
                "UPDATE messages SET archived_by = ? WHERE session = ? AND id = ? AND archived_by IS NULL",
                [(number, session, mid) for mid in archived_ids],
            )
            self.after_commit(lambda: self._archived(session, number, set(archived_ids)))
        return number

    def _archived(self, session: str, number: int, ids: set[str]) -> None:
        """A compaction archived messages: the kept paths and the kept compactions show it
        (read again, a long session's path and compactions would cost every other turn a read of
        thousands of rows)."""
        memo = self.memo()
        kept = memo.get(("compactions", session))
        if kept is not None:
            rows = self._read(
                f"SELECT {COMPACTION.select()} FROM compactions WHERE session = ? AND number = ?", (session, number)
            )
            memo["compactions", session] = kept + [COMPACTION.decode(r) for r in rows]
        for key in [k for k in memo if k[0] == "path" and k[1] == session]:
            memo[key].archive(number, ids)

    def compactions(self, session: str) -> list[dict[str, Any]]:
        """The session's compactions, oldest first (kept in memory between plans: a long
        session has hundreds, and every plan looks for the latest summary)."""
        with self.reading():
            memo = self.memo()
            kept = memo.get(("compactions", session))
            if kept is None:
                rows = self._read(
                    f"SELECT {COMPACTION.select()} FROM compactions WHERE session = ? ORDER BY number", (session,)
                )
                kept = memo["compactions", session] = [COMPACTION.decode(r) for r in rows]
            return list(kept)


def _refuse_inside_compaction(conn: sqlite3.Connection, session: str, mid: str) -> None:
    """Raise ``InsideCompaction`` when the path that ends at ``mid`` holds turns archived by a
    compaction whose last archived turn is not on it: the compaction ran on another branch (past
    where this one leaves it, or later, over turns the two share), and its summary covers turns
    this path does not have. A path may end at the last turn a compaction archived, or after it."""
    rows = conn.execute(
        """WITH RECURSIVE chain(id) AS (
               SELECT ?
               UNION ALL
               SELECT m.parent FROM messages m JOIN chain ON m.id = chain.id
               WHERE m.session = ? AND m.parent IS NOT NULL)
           SELECT m.id, m.archived_by FROM chain JOIN messages m ON m.id = chain.id AND m.session = ?""",
        (mid, session, session),
    ).fetchall()
    numbers = {n for _, n in rows if n is not None}
    if not numbers:  # the common case: nothing on the path is archived
        return
    on_path = {i for i, _ in rows}
    marks = ", ".join("?" * len(numbers))
    for number, archived_ids in conn.execute(
        f"SELECT number, archived_ids FROM compactions WHERE session = ? AND number IN ({marks})",
        (session, *sorted(numbers)),
    ):
        if msgspec.json.decode(archived_ids)[-1] not in on_path:
            raise InsideCompaction(
                f"cannot branch at {mid!r}: its path holds turns that compaction {number} of session {session!r} "
                "archived with turns not on it; branch from the last turn it archived, or a later one"
            )


# ids at the end of a chain looked up first: an agent's request resends the conversation and
# appends a message or two, so the stored ones end there (each request looked up all of them:
# half a millisecond a request at 300 messages)
TAIL_IDS = 16


def _stored(conn: sqlite3.Connection, session: str, chain: list[str]) -> tuple[int, str | None]:
    """How many of the id chain ``chain`` are stored, and the last of them."""
    if len(chain) > TAIL_IDS:
        # a chain id exists only when every id before it does: with the first of the tail stored,
        # so is everything before it
        start = len(chain) - TAIL_IDS
        tail = chain[start:]
        rows = conn.execute(
            f"SELECT id FROM messages WHERE session = ? AND id IN ({', '.join('?' * len(tail))})", (session, *tail)
        ).fetchall()
        found = {r[0] for r in rows}
        if tail[0] in found:
            known = max(start + n + 1 for n, mid in enumerate(tail) if mid in found)
            return known, chain[known - 1]
    known = 0
    for start in range(0, len(chain), 500):
        part = chain[start : start + 500]
        rows = conn.execute(
            f"SELECT id FROM messages WHERE session = ? AND id IN ({', '.join('?' * len(part))})",
            (session, *part),
        ).fetchall()
        found = {r[0] for r in rows}
        # a chain id exists only when every id before it does: the last one found is the fork point
        known = max([start + n + 1 for n, mid in enumerate(part) if mid in found], default=known)
    return known, chain[known - 1] if known else None


def session_row(conn: sqlite3.Connection, session: str) -> tuple[str, int]:
    """The session's active branch and turn."""
    row = conn.execute("SELECT branch, turn FROM sessions WHERE id = ?", (session,)).fetchone()
    if row is None:
        raise StoreError(f"unknown session {session!r}")
    return row


def _head(conn: sqlite3.Connection, session: str, branch: str) -> str | None:
    row = conn.execute("SELECT head FROM branches WHERE session = ? AND name = ?", (session, branch)).fetchone()
    if row is None:
        raise StoreError(f"unknown branch {branch!r} in session {session!r}")
    return row[0]
