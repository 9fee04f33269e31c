"""The gateway's accounting, once: the typed record of each request (made here from what the
gateway hands over), the models' prices looked up in one place, the totals and the report, and
the conversations the gateway served. The proxy, the LSP face and ``ctx-lsp statusline`` only
ask for them."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import msgspec

from ctx_lsp.core.harness import first_words
from ctx_lsp.core.items import Message
from ctx_lsp.core.models import Prices
from ctx_lsp.core.prompt_cache import CACHE_TTL_SECONDS
from ctx_lsp.core.report import GatewayReport, build_report
from ctx_lsp.core.runs import client_conversation, one_shot, run_key, trimmed, user_line
from ctx_lsp.core.savings import Totals, saved_tokens, totals
from ctx_lsp.core.verdict import SIDE, context_note
from ctx_lsp.memory.store import MessageMeta
from ctx_lsp.sessions.shared import NotFound, Shared
from ctx_lsp.sessions.values import Usage
from ctx_lsp.workspace.secrets import DEFAULT_MASKER

if TYPE_CHECKING:  # the exchanges room asks the ledger what a session saved
    from ctx_lsp.sessions.exchanges import ExchangePlan

TITLE_CHARS = 80
TITLE_MESSAGES = 8  # user messages read for a conversation's title


class GatewayRequest(msgspec.Struct, kw_only=True):
    """One request through the gateway, as ``gateway_requests`` keeps it: what it sent, saved and
    cost, who sent it and what about (``core.runs``), why ctx_lsp added what it did."""

    session: str
    plan_id: str | None = None
    model: str | None = None
    client_tokens: int = 0  # what the client's request held (estimated)
    forwarded_tokens: int = 0  # what went upstream (the plan's count)
    direct_cached: int = 0  # of client_tokens, what repeats the client's previous request
    input_tokens: int = 0  # as the provider reported
    cached_tokens: int = 0
    cache_write_tokens: int = 0
    output_tokens: int = 0
    shed: int = 0  # tokens saved by each mechanism
    masked: int = 0
    shrunk: int = 0
    injected: int = 0  # what ctx_lsp's own blocks cost
    as_sent: bool = False  # the prompt went as the client sent it (direct cost = cost)
    client: str | None = None  # the assistant, from the User-Agent
    run: str | None = None  # what ties it to its run (``core.runs.run_key``)
    title: str | None = None  # the first line the user wrote in it, secrets masked
    one_shot: bool = False  # no tools, one user message (a side request's shape)
    context: str | None = None  # why ctx_lsp added what it added (``core.verdict``)
    context_items: int = 0
    prefix: str | None = None  # why the cached prefix was rebuilt here; None: it appended
    sent: float | None = None  # when it went upstream (the provider's cache was read then)
    cache_ttl: int | None = None  # the cache lifetime its breakpoints asked for (None: the default)
    created: float | None = None  # when the store kept it (its clock)

    @property
    def cache_used(self) -> float | None:
        """When this request last used the provider's cache (kept before ``sent`` was: ``created``)."""
        return self.sent if self.sent is not None else self.created

    def row(self) -> dict[str, Any]:
        """As the store writes it (it sets ``created``)."""
        row = msgspec.structs.asdict(self)
        del row["created"]
        return row


@dataclass(frozen=True, slots=True)
class Forwarded:
    """What only the gateway's HTTP side knows of a request it forwarded and read the reply of."""

    model: str | None  # as the client named it
    usage: Usage | None  # as the provider reported it (None: the reply said nothing)
    client: str  # the assistant, as its User-Agent names it
    named: str | None  # the session the client named (the ``X-Ctx-Session`` header)
    client_session: str | None  # the client's own conversation id
    messages: list[Message]  # the request's conversation, as the client sent it
    tools: tuple[str, ...]  # the names of its tools
    # of the client's request, the share that repeats its previous one (``gateway.direct``): what
    # the provider would have served from its cache had the client sent it direct
    repeated: float = 0.0
    sent: float | None = None  # when it went upstream (epoch seconds)
    cache_ttl: int = CACHE_TTL_SECONDS  # the cache lifetime its breakpoints asked for


@dataclass(frozen=True, slots=True)
class GatewayConversation:
    """A conversation the gateway served, with its requests."""

    session: str
    title: str  # the first line the user wrote
    model: str | None  # of its latest request
    messages: int
    requests: int
    last_activity: float  # when its latest request was kept


@dataclass(frozen=True, slots=True)
class GatewayRun:
    """Where one run stands (``ctx-lsp statusline``): the latest request of its own conversation
    (not a title or quota request beside it), that request's prompt budget, the run's totals."""

    last: GatewayRequest
    prompt_budget: int | None  # None: a plan of an earlier version, or none
    totals: Totals


@dataclass(frozen=True, slots=True)
class GatewayMoney:
    """A conversation's money: its totals and the prices of its model (None: none known)."""

    totals: Totals
    prices: Prices | None


@dataclass(slots=True)
class Ledger:
    shared: Shared

    # ---- writing ----------------------------------------------------------------------------

    def account(self, plan: ExchangePlan, sent: Forwarded) -> GatewayRequest:
        """The record of a request the gateway planned and forwarded, kept."""
        usage, s = sent.usage, plan.savings
        as_sent = not (s.shed or s.masked or s.shrunk or s.injected)
        repeated = sent.repeated
        if as_sent and usage and usage.input_tokens:  # the client's own prompt: cached as the provider said
            repeated = usage.cached_input_tokens / usage.input_tokens
        context, items = (SIDE, 0) if plan.side else context_note(plan.outcome.result, plan.outcome.inputs)
        p = plan.outcome.result.plan
        record = GatewayRequest(
            session=plan.session,
            plan_id=p.plan_id,
            model=sent.model,
            client_tokens=plan.client_tokens,
            forwarded_tokens=p.totals.tokens or 0,
            direct_cached=round(plan.client_tokens * repeated),
            input_tokens=usage.input_tokens if usage else 0,
            cached_tokens=usage.cached_input_tokens if usage else 0,
            cache_write_tokens=usage.cache_write_tokens if usage else 0,
            output_tokens=usage.output_tokens if usage else 0,
            shed=s.shed,
            masked=s.masked,
            shrunk=s.shrunk,
            injected=s.injected,
            as_sent=as_sent,
            client=sent.client,
            run=run_key(sent.named, sent.client_session),
            title=self.masked(user_line(sent.messages)),
            one_shot=one_shot(sent.messages, sent.tools),
            context=context,
            context_items=items,
            # ours first; else the provider's own reason, when it gave one (cache diagnostics)
            prefix=plan.rebuilt or (f"provider: {usage.cache_miss}" if usage and usage.cache_miss else None),
            sent=sent.sent,
            cache_ttl=sent.cache_ttl,
        )
        self.keep(record)
        return record

    def keep(self, record: GatewayRequest | Mapping[str, Any]) -> None:
        """A record kept as it is (a mapping: by the store's column names, as an import has it)."""
        self.shared.require_memory()
        if not isinstance(record, GatewayRequest):
            record = msgspec.convert(dict(record), GatewayRequest, strict=False)
        self.shared.store.record_gateway_request(record.row())

    def masked(self, line: str) -> str:
        """The user's line as the store may keep it: secrets masked, whatever the settings say."""
        return trimmed((self.shared.engine.masker or DEFAULT_MASKER).mask(line).text) if line else ""

    # ---- reading ----------------------------------------------------------------------------

    def requests(self, session: str | None = None) -> list[GatewayRequest]:
        """The records kept (of one session), in the order kept."""
        return msgspec.convert(self.shared.store.gateway_requests(session), list[GatewayRequest], strict=False)

    def prices(self, rows: list[dict[str, Any]]) -> dict[str, Prices | None]:
        """The prices of the models ``rows`` name (None: a model without prices): the one place a
        request's model is priced."""
        engine = self.shared.engine
        return {m: engine.resolve_model(m).spec.prices for m in {r["model"] for r in rows} if m}

    def totals(self, session: str | None = None, rows: list[dict[str, Any]] | None = None) -> Totals:
        """What the gateway's requests (of ``session``, or ``rows``) sent, saved and cost, through
        vs direct (``core.savings``), each at its model's prices."""
        if rows is None:
            rows = self.shared.store.gateway_requests(session)
        return totals(rows, self.prices(rows))

    def saved(self, session: str, model: str) -> int:
        """What the gateway has saved ``session`` so far, in tokens of ``model`` at its input price."""
        rows = self.shared.store.gateway_requests(session)
        return saved_tokens(rows, self.prices(rows), model)

    def money(self, session: str, model: str | None = None) -> GatewayMoney:
        """A conversation's totals and the prices of ``model`` (by default the session's own)."""
        model = model or self.shared.open_session(session).model
        prices = self.shared.engine.resolve_model(model).spec.prices if model else None
        return GatewayMoney(self.totals(session), prices)

    def report(self, session: str | None = None, since: float | None = None) -> GatewayReport:
        """The gateway report (``core.report``) of every session, or of one: NotFound when no
        request of that session went through the gateway. ``since``: only the requests recorded
        at or after that time (seconds since the epoch)."""
        self.shared.require_memory()
        store = self.shared.store
        if session is None:
            rows = store.gateway_requests()
        elif not (rows := store.gateway_requests(session) if session else []):  # the store reads "" as all
            known = list(dict.fromkeys(r["session"] for r in store.gateway_requests()))
            hint = f"; sessions with requests: {', '.join(known[:5])}{' …' if len(known) > 5 else ''}" if known else ""
            raise NotFound(f"no requests through the gateway in session {session!r}{hint}")
        if since is not None:
            rows = [r for r in rows if r["created"] >= since]
        return build_report(rows, self.prices(rows))

    def title(self, session: str, meta: list[MessageMeta] | None = None) -> str:
        """The first line the user wrote in ``session`` (``meta``: its path, when read already)."""
        store = self.shared.store
        meta = store.path_meta(session) if meta is None else meta
        # the first user messages: an assistant's own (aider's example, its file listings) come first
        users = [m.id for m in meta if m.role == "user"][:TITLE_MESSAGES]
        texts = store.contents(session, users, prefix=True) if users else {}
        words = first_words(texts.get(i, "") for i in users)
        lines = [line.strip() for line in words.splitlines() if line.strip()]
        return lines[0][:TITLE_CHARS] if lines else "(no user message yet)"

    def conversations(self) -> list[GatewayConversation]:
        """The conversations the gateway served, the one with the latest request first."""
        latest: dict[str, tuple[GatewayRequest, int]] = {}
        for r in self.requests():
            latest[r.session] = (r, latest[r.session][1] + 1 if r.session in latest else 1)
        out = []
        for session, (last, count) in sorted(latest.items(), key=lambda kv: -(kv[1][0].created or 0.0)):
            meta = self.shared.store.path_meta(session)
            out.append(
                GatewayConversation(
                    session=session,
                    title=self.title(session, meta),
                    model=last.model or self.shared.open_session(session).model,
                    messages=len(meta),
                    requests=count,
                    last_activity=last.created or 0.0,
                )
            )
        return out

    def run(self, api: str, client_session: str | None) -> GatewayRun | None:
        """Where the run of a client's own conversation id stands (``api``: the API it speaks);
        without one, or before its first request, the latest conversation's. None: no request
        went through the gateway yet."""
        rows = self.requests()
        if not rows:
            return None
        key = run_key(None, client_session) if client_session else None
        # the sessions that id names (rows of earlier versions carry no run)
        prefix = client_conversation(api, client_session) if client_session else None
        mine = [r for r in rows if key and (r.run == key or r.session.startswith(prefix or "\0"))] or [
            r for r in rows if r.session == rows[-1].session
        ]
        # the run's own conversation, not its title or quota request, says where the budget stands
        last = ([r for r in mine if not r.one_shot] or mine)[-1]
        budget = None
        if last.plan_id:
            try:
                budget = json.loads(self.shared.store.plan_row(last.plan_id)["plan"])["promptBudget"]
            except Exception:  # a plan of an earlier version: no budget shown
                budget = None
        return GatewayRun(last, budget, self.totals(rows=[msgspec.structs.asdict(r) for r in mine]))
