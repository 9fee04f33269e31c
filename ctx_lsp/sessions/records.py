"""What the memory store keeps about a session, typed: capsules, reflection decisions, the
model's suggestions, branches, the dropped ledger of stored plans.

The store hands these over as camelCase dicts; they are decoded here once, and clients see them
as they are (the protocol lists these types instead of defining them again).
"""

from __future__ import annotations

from typing import Any, Literal, TypeVar

import msgspec

from ctx_lsp.core.items import PlanItem

R = TypeVar("R")


class _Record(msgspec.Struct, kw_only=True, rename="camel"):
    pass


class Capsule(_Record):
    """A module summary, with the hash of the code it summarises and whether that code changed since."""

    path: str
    module: str
    text: str
    code_hash: str
    source: str
    confidence: float
    created: float
    stale: bool
    stale_since: float | None = None


class Reflection(_Record):
    """One decision of the reflection loop: promote, renew, demote or suggest, with its reason."""

    id: int
    turn: int
    kind: Literal["promote", "renew", "demote", "suggest"]
    item: str
    pin_id: str | None
    reason: str
    undone: bool = False
    task: str | None = None  # the query cluster a promotion was made in


class Suggestion(_Record):
    item: str
    turn: int
    reason: str
    status: Literal["open", "accepted", "dismissed"]


class Branch(_Record):
    name: str
    head: str | None
    forked_from: str | None
    active: bool


def records(rows: list[dict[str, Any]], kind: type[R]) -> list[R]:
    """The store's rows as records of ``kind``."""
    return msgspec.convert(rows, list[kind])  # type: ignore[valid-type]


class LedgerTurn(_Record):
    """The dropped ledger of one turn: what its latest plan excluded, restorable by pinning."""

    plan_id: str
    turn: int
    query: str
    excluded: list[PlanItem]
