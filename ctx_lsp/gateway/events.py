"""What the gateway tells whoever runs it (the language server, for its editor), as typed events,
and the one snapshot of its state. The gateway knows no editor protocol: a face turns these into
its own messages (``server/gateway.py``: ``ctx/gatewayRequest``, ``ctx/reviewRequest``…)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Literal

from ctx_lsp.core.items import ContextPlan
from ctx_lsp.gateway.planned import Sent
from ctx_lsp.gateway.status import GatewayRecord

# what the editor answers a request held for review; "timeout": it did not answer in time
Decision = Literal["send", "cancel", "replan", "timeout"]


@dataclass(frozen=True, slots=True)
class RequestDone:
    """A request went through (its reply read, or its failure counted)."""

    record: GatewayRecord


@dataclass(frozen=True, slots=True)
class ReviewAsked:
    """A planned request waits for a decision (review before send), at most ``timeout`` seconds
    from when whoever listens has shown it."""

    review_id: str
    session: str
    sent: Sent  # the body as it would go
    plan: ContextPlan | None
    timeout: float


@dataclass(frozen=True, slots=True)
class ReviewResolved:
    """A review ended without a re-plan."""

    review_id: str
    outcome: Literal["sent", "cancelled", "timeout"]


GatewayEvent = RequestDone | ReviewAsked | ReviewResolved
# Called on the gateway's event loop, in order. What it returns, when anything, is awaited before
# the gateway goes on: a review's wait starts once the listener has shown it.
Listener = Callable[[GatewayEvent], Awaitable[None] | None]


@dataclass(frozen=True, slots=True)
class GatewaySnapshot:
    """Where the gateway stands, at once: where it listens, its counts, the latest request."""

    url: str | None
    requests: int
    planned: int
    fail_open: int
    review: bool  # requests wait for review before send
    last: GatewayRecord | None
