"""What reflection keeps per session: its activation and query-cluster state, the promotions and
demotions it made (undoable), and the suggestions it offered."""

from __future__ import annotations

import time
from typing import Any

from ctx_lsp.memory.store.codec import Codec
from ctx_lsp.memory.store.db import Database
from ctx_lsp.memory.store.schema import REFLECTIONS, SUGGESTIONS

REFLECTION = Codec.dicts(
    REFLECTIONS,
    ("seq", "turn", "kind", "item", "pin_id", "reason", "undone", "cluster"),
    rename={"seq": "id", "cluster": "task"},
    undone=bool,
)
SUGGESTION = Codec.dicts(SUGGESTIONS, ("item", "turn", "reason", "status"))


class Reflection(Database):
    def reflection_state(self, session: str) -> tuple[bytes | None, str | None, str | None, int]:
        rows = self._read(
            "SELECT activation, cluster, centroid, next_cluster FROM reflection_state WHERE session = ?", (session,)
        )
        return rows[0] if rows else (None, None, None, 1)

    def activation_state(self, session: str) -> bytes | None:
        """The activation alone: every plan reads it, and the row's centroid grows with every new
        query word of a long session."""
        return self._state_column(session, "activation")

    def current_cluster(self, session: str) -> str | None:
        return self._state_column(session, "cluster")

    def _state_column(self, session: str, column: str) -> Any:
        rows = self._read(f"SELECT {column} FROM reflection_state WHERE session = ?", (session,))
        return rows[0][0] if rows else None

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
        row = {
            "session": session,
            "turn": turn,
            "kind": kind,
            "item": item,
            "pin_id": pin_id,
            "reason": reason,
            "created": time.time(),
            "cluster": cluster,
        }
        with self.write() as conn:
            return REFLECTIONS.insert(conn, row).lastrowid or 0

    def reflections(self, session: str) -> list[dict[str, Any]]:
        rows = self._read(f"SELECT {REFLECTION.select()} FROM reflections WHERE session = ? ORDER BY seq", (session,))
        return [REFLECTION.decode(r) for r in rows]

    def mark_reflection_undone(self, session: str, seq: int) -> None:
        with self.write() as conn:
            conn.execute("UPDATE reflections SET undone = 1 WHERE session = ? AND seq = ?", (session, seq))

    def add_suggestion(self, session: str, item: str, turn: int, reason: str) -> bool:
        row = {"session": session, "item": item, "turn": turn, "reason": reason}
        with self.write() as conn:
            return SUGGESTIONS.insert(conn, row, verb="INSERT OR IGNORE").rowcount > 0

    def suggestions(self, session: str) -> list[dict[str, Any]]:
        rows = self._read(
            f"SELECT {SUGGESTION.select()} FROM suggestions WHERE session = ? ORDER BY turn, item", (session,)
        )
        return [SUGGESTION.decode(r) for r in rows]

    def set_suggestion_status(self, session: str, item: str, status: str) -> None:
        with self.write() as conn:
            conn.execute("UPDATE suggestions SET status = ? WHERE session = ? AND item = ?", (status, session, item))
