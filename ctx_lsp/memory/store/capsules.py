"""Capsules (module summaries), each with the hash of the code it summarises and a stale flag."""

from __future__ import annotations

import time
from typing import Any

from ctx_lsp.memory.store.codec import Codec
from ctx_lsp.memory.store.db import Database
from ctx_lsp.memory.store.schema import CAPSULES

CAPSULE = Codec.dicts(
    CAPSULES,
    ("path", "module", "text", "code_hash", "source", "confidence", "created", "stale", "stale_since"),
    stale=bool,
)


class Capsules(Database):
    def put_capsule(self, path: str, module: str, text: str, code_hash: str, source: str, confidence: float) -> None:
        row = {
            "path": path,
            "module": module,
            "text": text,
            "code_hash": code_hash,
            "source": source,
            "confidence": confidence,
            "created": time.time(),
            "stale": 0,
            "stale_since": None,
            "current_hash": code_hash,
        }
        with self.write() as conn:
            CAPSULES.insert(conn, row, verb="INSERT OR REPLACE")

    def capsules(self) -> list[dict[str, Any]]:
        return [CAPSULE.decode(r) for r in self._read(f"SELECT {CAPSULE.select()} FROM capsules ORDER BY path")]

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
