"""Review before send (``gateway.review``): the desk where a planned request waits for the
editor's decision — send, cancel, or re-plan after a pin change — and is sent as planned when
none comes in time. The desk holds the waits; whoever listens to the gateway shows each request
(``ReviewAsked``) and hands the answer back (``decide``)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from ctx_lsp.gateway.events import Decision, GatewayEvent, ReviewAsked, ReviewResolved
from ctx_lsp.gateway.planned import Planned, Sent

OUTCOME = {"send": "sent", "cancel": "cancelled"}  # a decision as the review's end says it


class ReviewDesk:
    def __init__(self, timeout: Callable[[], float], emit: Callable[[GatewayEvent], object]) -> None:
        self._timeout = timeout  # read at each review: the settings may change while the gateway runs
        self._emit = emit
        self._waiting: dict[str, asyncio.Future[Decision]] = {}
        self._closed = False

    async def ask(self, review_id: str, planned: Planned) -> Decision:
        """Hold ``planned`` until the editor decides, or the review times out ("timeout")."""
        if self._closed or planned.parsed is None or planned.session is None:
            return "send"
        plan = planned.plan.outcome.result.plan if planned.plan else None
        sent = Sent(planned.api, planned.parsed.model, planned.body, plan.plan_id if plan else None, time.time())
        future: asyncio.Future[Decision] = asyncio.get_running_loop().create_future()
        self._waiting[review_id] = future
        timeout = self._timeout()
        try:
            shown = self._emit(ReviewAsked(review_id, planned.session, sent, plan, timeout))
            if shown is not None:
                await shown  # type: ignore[misc]
            decision = await asyncio.wait_for(asyncio.shield(future), timeout)
        except TimeoutError:
            decision = "timeout"
        finally:
            self._waiting.pop(review_id, None)
        if decision != "replan":
            self._emit(ReviewResolved(review_id, OUTCOME.get(decision, "timeout")))  # type: ignore[arg-type]
        return decision

    def decide(self, review_id: str, decision: Decision) -> bool:
        """The editor's answer; False when no request waits under that id (any more)."""
        future = self._waiting.get(review_id)
        if future is None or future.done():
            return False
        future.set_result(decision)
        return True

    def close(self) -> None:
        """Nothing waits on an editor that is gone: every held request is sent as planned."""
        self._closed = True
        for future in self._waiting.values():
            if not future.done():
                future.set_result("send")
