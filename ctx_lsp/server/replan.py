"""Re-planning after a change, so the meter and the plan tree show the new state: at once after
a pin, an unpin, a mode change, a compaction or an undo ("change, then re-plan"); once things
settle after appends and usage reports, which come in bursts, usually right before a new plan
(which then supersedes the deferred re-plan)."""

from __future__ import annotations

import asyncio
import logging

from pygls.exceptions import JsonRpcException

from ctx_lsp.core.items import ContextPlan
from ctx_lsp.server import convert, lenses
from ctx_lsp.server import protocol as P
from ctx_lsp.server.ctx_server import CtxServer
from ctx_lsp.sessions import SessionEngine
from ctx_lsp.sessions.values import Meter

log = logging.getLogger("ctx_lsp.server")
REPLAN_DEBOUNCE_SECONDS = 0.3


def push_events(ls: CtxServer) -> None:
    """Notifications for what the engine did while it worked (automatic compactions, the
    reflection loop's decisions)."""
    if not ls.serving:
        return
    for event in ls.sessions.drain_events():
        ls.notify(*convert.event(event))


async def announce(ls: CtxServer, session: str, plan: ContextPlan | None) -> None:
    """The session has a new plan (``plan``; None: only its meter changed)."""
    if plan is not None:
        ls.notify("ctx/planChanged", convert.plan_changed(session, plan))
    ls.notify("ctx/budgetChanged", convert.meter(await ls.run(ls.sessions.meter, session)))


async def after_plan(ls: CtxServer, session: str, plan: ContextPlan) -> None:
    """Once a plan's reply is out: keep the plan for replay (the meter reads the store, which
    writes it first) and announce it with the new meter."""
    if not ls.serving:
        return
    try:
        await announce(ls, session, plan)
    except JsonRpcException as err:  # the plan was answered; only the meter after it failed
        log.warning("the meter after plan %s failed: %s", plan.plan_id, err)


def supersede(ls: CtxServer, session: str) -> None:
    """A plan for the session is coming: the deferred re-plan is not needed."""
    pending = ls.pending_replan.pop(session, None)
    if pending is not None:
        pending.cancel()


def soon(ls: CtxServer, session: str) -> None:
    """Re-plan once things settle, unless a plan for the session arrives first."""
    supersede(ls, session)
    loop = asyncio.get_running_loop()
    ls.pending_replan[session] = loop.call_later(
        REPLAN_DEBOUNCE_SECONDS, lambda: (ls.pending_replan.pop(session, None), ls.spawn(latest(ls, session)))
    )


async def latest(ls: CtxServer, session: str) -> None:
    """Re-plan the session's latest question and push the new plan and meter."""

    def work(sessions: SessionEngine) -> tuple[ContextPlan | None, Meter]:
        out = sessions.replan_latest(session)
        return (out.result.plan if out is not None else None), sessions.meter(session)

    try:
        plan, meter = await ls.run(work, ls.sessions)
    except JsonRpcException as err:  # what changed (a pin, a message) stands; only the refresh failed
        log.warning("re-plan of session %s failed: %s", session, err)
        return
    push_events(ls)
    if plan is not None:
        ls.notify("ctx/planChanged", convert.plan_changed(session, plan))
    ls.notify("ctx/budgetChanged", convert.meter(meter))


async def pin(ls: CtxServer, req: P.PinRequest, session: str) -> P.Pin:
    intent = convert.pin_intent(ls, req)
    await ls.wait_index()
    out = convert.pin(ls, await ls.run(ls.sessions.pin, session, intent))
    lenses.refresh(ls)
    await latest(ls, session)
    return out


async def unpin(ls: CtxServer, pin_id: str, session: str) -> P.Pin:
    out = convert.pin(ls, await ls.run(ls.sessions.unpin, session, pin_id))
    lenses.refresh(ls)
    await latest(ls, session)
    return out
