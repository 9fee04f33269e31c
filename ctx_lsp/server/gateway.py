"""The gateway inside the language server: with ``gateway.listen`` in the configuration, the
editor's own ``ctx-lsp serve`` runs it — same process, same engine and worker, same event loop —
so the editor follows every request an assistant sends.

- Each request: ``ctx/gatewayRequest``, then the active conversation's ``ctx/planChanged`` and
  ``ctx/budgetChanged``. The active conversation is where pins and plans without a session go:
  the one the user chose (``ctx/setActiveConversation``), else the one that sent last.
- ``ctx/gatewayPreview``: the body last sent upstream for a conversation, readable.
- Review before send (``gateway.review``): each planned request waits for ``ctx/reviewDecision``
  (send, cancel, or re-plan after a pin change) after a ``ctx/reviewRequest``; after
  ``gateway.review_timeout`` seconds it is sent as planned.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pygls.exceptions import JsonRpcServerError

from ctx_lsp.core.prompt_cache import CACHE_TTL_SECONDS, cache_label, cache_read_price, savings_label, warm_until
from ctx_lsp.engine import UserError
from ctx_lsp.gateway.events import GatewayEvent, RequestDone, ReviewAsked, ReviewResolved
from ctx_lsp.gateway.options import address_of, resolve
from ctx_lsp.gateway.planned import Sent
from ctx_lsp.gateway.preview import preview
from ctx_lsp.gateway.status import GatewayRecord
from ctx_lsp.server import convert, replan
from ctx_lsp.server import protocol as P
from ctx_lsp.server.ctx_server import CtxServer

if TYPE_CHECKING:  # aiohttp (10 MB resident) is loaded only by a server that runs the gateway
    from ctx_lsp.gateway.proxy import Gateway

log = logging.getLogger("ctx_lsp.server")


@dataclass(slots=True)
class Seen:
    """A conversation the gateway served since this server started."""

    model: str | None
    requests: int = 0
    last: float = field(default_factory=time.time)  # when its latest request went upstream
    ttl: int = CACHE_TTL_SECONDS  # the cache lifetime that request's breakpoints asked for


@dataclass(slots=True, frozen=True)
class Money:
    """A conversation's money as the meter says it, as last summed on the worker."""

    saved: str = ""  # "saved $1.20" / "cost +$0.03"; "" for a model without prices
    cache_read_price: str = ""  # "half the input price ($1.25 vs $2.50 per million tokens)"


@dataclass(slots=True)
class EditorGateway:
    gateway: Gateway
    chosen: bool = False  # the user picked the active conversation: it no longer follows traffic
    seen: dict[str, Seen] = field(default_factory=dict)
    money: dict[str, Money] = field(default_factory=dict)  # by session


async def start(ls: CtxServer) -> None:
    config = ls.sessions.engine.config.gateway
    if not config.listen or ls.gateway is not None:
        return
    try:
        options = resolve(config, workspace=ls.sessions.engine.file_config.gateway)
    except UserError as err:
        ls.warn(f"gateway not started: {err}")
        ls.notify("ctx/gatewayStatusChanged", status(ls))
        return
    from ctx_lsp.gateway.proxy import Gateway

    # engine calls queued on the server's engine worker, in call order
    gateway = Gateway(ls.sessions, options, ls.host.run, lambda e: _on_event(ls, e), config.review)
    try:
        url = await gateway.start()
    except OSError as err:
        where = address_of(options.host, options.port)
        ls.warn(f"gateway not started: cannot listen on {where}: {err.strerror or err}")
        await gateway.close()
        ls.notify("ctx/gatewayStatusChanged", status(ls))
        return
    ls.gateway = EditorGateway(gateway)
    log.info("gateway listening on %s%s", url, " (review before send)" if config.review else "")
    ls.notify("ctx/gatewayStatusChanged", status(ls))


async def stop(ls: CtxServer) -> None:
    state, ls.gateway = ls.gateway, None
    if state is not None:
        if state.gateway.desk is not None:
            state.gateway.desk.close()  # nothing waits on an editor that is gone
        await state.gateway.close()


def _on_event(ls: CtxServer, event: GatewayEvent) -> Awaitable[None] | None:
    """The gateway's events as the editor's messages."""
    if isinstance(event, RequestDone):
        _on_record(ls, event.record)
    elif isinstance(event, ReviewAsked):
        return _show_review(ls, event)
    elif isinstance(event, ReviewResolved):
        ls.notify("ctx/reviewResolved", P.ReviewResolved(review_id=event.review_id, outcome=event.outcome))
    return None


def _on_record(ls: CtxServer, record: GatewayRecord) -> None:
    state: EditorGateway | None = ls.gateway
    ls.notify("ctx/gatewayRequest", convert.gateway_request(record))
    if state is None or record.session is None or record.plan_id is None:
        return
    seen = state.seen.setdefault(record.session, Seen(record.model))
    seen.model, seen.requests = record.model, seen.requests + 1
    seen.last, seen.ttl = record.sent or record.time, record.cache_ttl or CACHE_TTL_SECONDS
    if not state.chosen:
        ls.session_id = record.session
    ls.spawn(_after_request(ls, state, record.session))
    if record.session == ls.session_id:
        ls.spawn(_announce(ls, record.session, record.plan_id))


async def _after_request(ls: CtxServer, state: EditorGateway, session: str) -> None:
    """The savings summed again with this request's usage, then ``ctx/gatewayStatusChanged``:
    the editors' meters show the new savings and restart the cache countdown from it."""
    await _sum_money(ls, state, session)
    if ls.gateway is state:  # not after the gateway stopped
        ls.notify("ctx/gatewayStatusChanged", status(ls))


async def _sum_money(ls: CtxServer, state: EditorGateway, session: str) -> None:
    """The conversation's savings (cache-weighted against sending direct) and what its model's
    cache reads cost. No wait for the request's own record: the gateway queued storing it on the
    same one-thread worker before telling the editor, so this runs after it."""
    seen = state.seen.get(session)
    sessions = ls.sessions

    def summed() -> Money:
        money = sessions.gateway_money(session, seen.model if seen else None)
        return Money(savings_label(money.totals), cache_read_price(money.prices))

    try:
        state.money[session] = await ls.run(summed)
    except Exception:
        log.exception("gateway: summing savings failed")


async def _announce(ls: CtxServer, session: str, plan_id: str) -> None:
    try:
        outcome = await ls.run(ls.sessions.outcome, session, plan_id)
        await replan.announce(ls, session, outcome.result.plan)
    except Exception:
        log.exception("gateway: telling the editor about a request failed")


# ---- review before send ---------------------------------------------------------------------


async def _show_review(ls: CtxServer, asked: ReviewAsked) -> None:
    """A request held for review, shown: its conversation made active (a pin made while it waits
    goes there, shown in the view), then ``ctx/reviewRequest`` with the body as it would go."""
    if not (ls.gateway and ls.gateway.chosen):
        ls.session_id = asked.session
        if asked.plan is not None:
            await replan.announce(ls, asked.session, asked.plan)
    shown = await _preview(ls, asked.session, asked.sent)
    title = await ls.run(ls.sessions.conversation_title, asked.session)
    ls.notify(
        "ctx/reviewRequest",
        P.ReviewRequest(
            review_id=asked.review_id,
            session=asked.session,
            title=title,
            timeout_seconds=asked.timeout,
            preview=shown,
        ),
    )


def decide(ls: CtxServer, p: P.ReviewDecisionParams) -> P.ReviewDecisionResult:
    state: EditorGateway | None = ls.gateway
    desk = state.gateway.desk if state else None
    pending = desk.decide(p.review_id, p.decision) if desk is not None else False
    return P.ReviewDecisionResult(review_id=p.review_id, decision=p.decision, pending=pending)


# ---- what the editor asks ---------------------------------------------------------------------


def status(ls: CtxServer) -> P.GatewayStatus:
    state: EditorGateway | None = ls.gateway
    if state is None:
        return P.GatewayStatus(
            listening=None,
            requests=0,
            planned=0,
            fail_open=0,
            review=False,
            active_session=ls.session_id,
            label="",
            cache="",
            cache_warm_until=None,
            cache_ttl_seconds=CACHE_TTL_SECONDS,
            cache_read_price="",
            saved="",
            latest=None,
        )
    st = state.gateway.snapshot()
    latest = convert.gateway_request(st.last) if st.last else None
    # The provider's cache of the active conversation, from its latest request since this server
    # started (of a conversation served only before, the state is unknown: "" and None).
    seen = state.seen.get(ls.session_id)
    last, now = (seen.last if seen else None), time.time()
    ttl = seen.ttl if seen else CACHE_TTL_SECONDS
    until = warm_until(last, now, ttl)
    money = state.money.get(ls.session_id, Money())
    return P.GatewayStatus(
        listening=st.url,
        requests=st.requests,
        planned=st.planned,
        fail_open=st.fail_open,
        review=st.review,
        active_session=ls.session_id,
        label=latest.label if latest else f"⇄ {st.requests}",
        cache=cache_label(last, now, ttl),
        cache_warm_until=None if until is None else round(until * 1000),
        cache_ttl_seconds=ttl,
        cache_read_price=money.cache_read_price,
        saved=money.saved,
        latest=latest,
    )


async def conversations(ls: CtxServer) -> list[P.GatewayConversation]:
    """The conversations the gateway served (the store's, whichever process served them)."""
    return [
        P.GatewayConversation(
            session=c.session,
            title=c.title,
            model=c.model,
            messages=c.messages,
            requests=c.requests,
            last_activity=c.last_activity,
            active=c.session == ls.session_id,
        )
        for c in await ls.run(ls.sessions.gateway_conversations)
    ]


async def set_active(ls: CtxServer, session: str) -> P.GatewayStatus:
    state: EditorGateway | None = ls.gateway
    await ls.run(ls.sessions.open_session, session)
    ls.session_id = session
    if state is not None:
        state.chosen = True
        if session not in state.money:  # a conversation served before this server started
            await _sum_money(ls, state, session)
    await replan.announce(ls, session, None)
    return status(ls)


async def last_preview(ls: CtxServer, session: str) -> P.GatewayPreview:
    state: EditorGateway | None = ls.gateway
    sent = state.gateway.sent.get(session) if state else None
    if sent is None:
        raise JsonRpcServerError(f"no request of conversation {session!r} went through the gateway yet", P.NOT_FOUND)
    return await _preview(ls, session, sent)


async def _preview(ls: CtxServer, session: str, sent: Sent) -> P.GatewayPreview:
    engine = ls.sessions.engine

    def build() -> Any:
        return preview(sent.api, sent.body, engine.resolve_model(sent.model).counter.count)

    return convert.gateway_preview(session, sent, await ls.run(build))
