"""A branch's path as the store keeps it between plans (``Database.memo``): every message's meta
in path order, and the same messages split into archived and active ones.

Every plan needs both parts, and a long session's path has thousands of messages of which a
window's worth are active: the parts are kept rather than filtered out of the whole path each
plan. An append adds to the active part; a compaction usually archives the oldest active turns,
which moves them across without looking at the archived part; anything else splits the path
again. The archived part is a tuple that stays the same object until a compaction changes it,
so what is made from it (older-history retrieval's turns) is kept by identity — and grown, when
the tuple that replaces it is of its lineage (``Archived``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import msgspec

from ctx_lsp.memory.store.messages import MessageMeta


class Archived(tuple[MessageMeta, ...]):
    """A path's archived messages. Every tuple of one ``lineage`` begins with all the messages of
    each earlier one: a compaction of the oldest active turns appends to it, and anything else a
    kept path goes through starts a new lineage. So whoever kept an earlier tuple knows, without
    comparing thousands of messages, that a later one only adds to it."""

    lineage: object

    def __new__(cls, messages: Iterable[MessageMeta], lineage: object | None = None) -> Archived:
        made = super().__new__(cls, messages)
        made.lineage = object() if lineage is None else lineage
        return made

    def extends(self, earlier: Sequence[MessageMeta]) -> bool:
        """Whether this tuple is ``earlier`` (a tuple of the same lineage) followed by more."""
        return isinstance(earlier, Archived) and earlier.lineage is self.lineage and len(earlier) <= len(self)


class KeptPath:
    __slots__ = ("_active", "_archived", "_prefix", "head", "metas")

    def __init__(self, head: str | None, metas: list[MessageMeta]) -> None:
        self.head = head
        self.metas = metas  # owned: callers get copies
        self._archived: Archived | None = None  # None: not split yet
        self._active: list[MessageMeta] = []
        self._prefix = False  # the path is its archived part followed by its active part

    def parts(self) -> tuple[tuple[MessageMeta, ...], list[MessageMeta]]:
        """(archived messages, active messages), each in path order; the active list is a copy."""
        if self._archived is None:
            self._split()
        assert self._archived is not None
        return self._archived, list(self._active)

    def _split(self) -> None:
        archived = Archived(m for m in self.metas if m.archived_by is not None)
        self._archived = archived
        self._active = [m for m in self.metas if m.archived_by is None]
        self._prefix = all(m.archived_by is not None for m in self.metas[: len(archived)])

    def extended(self, head: str | None, new: list[MessageMeta]) -> KeptPath:
        """The path once ``new`` (just appended, none archived) follows it."""
        kept = KeptPath(head, self.metas + new)
        if self._archived is not None and all(m.archived_by is None for m in new):
            kept._archived, kept._active, kept._prefix = self._archived, self._active + new, self._prefix
        return kept

    def start(self, at: int) -> KeptPath:
        """The path's first ``at`` messages (a branch forked there)."""
        return KeptPath(self.metas[at - 1].id if at else None, self.metas[:at])

    def archive(self, number: int, ids: set[str]) -> None:
        """Compaction ``number`` archived ``ids`` (those on this path not archived already)."""
        if self._archived is not None and self._prefix:
            moved = _leading(self._active, ids)
            if moved is not None:  # the oldest active messages: they move across, nothing else changes
                done = tuple(msgspec.structs.replace(m, archived_by=number) for m in self._active[:moved])
                self._archived = Archived(self._archived + done, self._archived.lineage)
                self._active = self._active[moved:]
                self.metas = [*self._archived, *self._active]
                return
        self.metas = [
            msgspec.structs.replace(m, archived_by=number) if m.archived_by is None and m.id in ids else m
            for m in self.metas
        ]
        self._archived = None


def _leading(active: Sequence[MessageMeta], ids: set[str]) -> int | None:
    """How many of the first active messages are in ``ids``, when no later one is (else None)."""
    moved = 0
    while moved < len(active) and active[moved].id in ids:
        moved += 1
    return None if any(m.id in ids for m in active[moved:]) else moved
