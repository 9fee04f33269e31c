"""Pins: per session and branch, with their TTLs and statuses.

The rules a pin follows live in ``ctx_lsp.core.pins`` (how a TTL ticks, when ``ask`` is asked,
when a pin expires); this module only keeps pins and applies that rule when a turn ends.
"""

from __future__ import annotations

import sqlite3
import time

import msgspec

from ctx_lsp.core import pins as rule
from ctx_lsp.core.items import PinKind, PinPolicy
from ctx_lsp.memory.store.codec import Codec
from ctx_lsp.memory.store.db import Database, StoreError
from ctx_lsp.memory.store.schema import PINS, insert_sql


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


PIN = Codec.struct(PINS, PinRecord)
LIVE = "status IN ('active', 'grace')"  # the pins that count: not expired, not removed
# what re-pinning an existing pin renews (its symbol, place and title stay)
RENEWED = ("status", "kind", "policy", "ttl", "ttl_remaining", "lease_scope", "priority", "created_by", "created_turn")


class Pins(Database):
    def add_pin(self, pin: PinRecord) -> PinRecord:
        """Pin; re-pinning renews the pin rather than duplicating it."""
        row = PIN.encode(pin, leave_out=("seq",)) | {"status": "active", "created": time.time()}
        renew = ", ".join(f"{c} = excluded.{c}" for c in RENEWED)
        with self.write() as conn:
            conn.execute(
                f"{insert_sql(PINS, tuple(row))} ON CONFLICT(session, branch, id) DO UPDATE SET {renew}",
                tuple(row.values()),
            )
        return self.pin(pin.session, pin.branch, pin.id)

    def pin(self, session: str, branch: str, pin_id: str) -> PinRecord:
        rows = self._read(
            f"SELECT {PIN.select()} FROM pins WHERE session = ? AND branch = ? AND id = ?", (session, branch, pin_id)
        )
        if not rows:
            raise StoreError(f"no pin {pin_id!r} in session {session!r} (branch {branch!r})")
        return PIN.decode(rows[0])

    def pins(self, session: str, branch: str, *, include_inactive: bool = False) -> list[PinRecord]:
        where = "" if include_inactive else f" AND {LIVE}"
        rows = self._read(
            f"SELECT {PIN.select()} FROM pins WHERE session = ? AND branch = ?{where} ORDER BY seq", (session, branch)
        )
        return [PIN.decode(r) for r in rows]

    def remove_pin(self, session: str, branch: str, pin_id: str) -> PinRecord:
        pin = self.pin(session, branch, pin_id)
        with self.write() as conn:
            conn.execute(
                "UPDATE pins SET status = 'removed' WHERE session = ? AND branch = ? AND id = ?",
                (session, branch, pin_id),
            )
        pin.status = "removed"
        return pin

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
            f"SELECT id, symbol FROM pins WHERE session = ? AND branch = ? AND {LIVE} "
            "AND lease_scope = 'task' AND cluster IS NOT NULL AND cluster != ?",
            (session, branch, cluster),
        )


def tick(conn: sqlite3.Connection, session: str, branch: str) -> tuple[list[PinRecord], list[PinRecord]]:
    """A turn ended: tick the TTLs of the branch's live pins by the TTL rule. Returns the pins
    that entered their `ask` grace turn (the user is asked) and those that expired."""
    asked: list[PinRecord] = []
    expired: list[PinRecord] = []
    rows = conn.execute(
        f"SELECT {PIN.select()} FROM pins WHERE session = ? AND branch = ? AND {LIVE} ORDER BY seq", (session, branch)
    ).fetchall()
    for pin in map(PIN.decode, rows):
        left, state = rule.tick(pin.policy, pin.ttl_remaining)
        if left == pin.ttl_remaining:
            continue
        pin.ttl_remaining = left
        if state != "live":
            pin.status = state
            (asked if state == "grace" else expired).append(pin)
        conn.execute(
            "UPDATE pins SET ttl_remaining = ?, status = ? WHERE seq = ?", (pin.ttl_remaining, pin.status, pin.seq)
        )
    return asked, expired


def copy_to_branch(conn: sqlite3.Connection, session: str, source: str, target: str) -> None:
    """Copy the live pins of branch ``source`` to a new branch ``target`` (a fork)."""
    columns = [c for c in PINS.names if c != "seq"]
    values = {"branch": ":target", "created": ":now"}
    conn.execute(
        f"INSERT INTO pins({', '.join(columns)}) SELECT {', '.join(values.get(c, c) for c in columns)} "
        f"FROM pins WHERE session = :session AND branch = :source AND {LIVE}",
        {"session": session, "source": source, "target": target, "now": time.time()},
    )
