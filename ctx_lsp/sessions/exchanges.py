"""Requests through the gateway: an assistant's own conversation, synced into its session, then
planned under the request's model and output reserve; and the reply read back into the session.

The client's system prompt and tools are its own: counted as required, never changed. The
conversation gets everything they leave (its compaction threshold is a share of that), and
retrieval only what the conversation leaves — a request that fits goes out as the client sent it.
"""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any

import msgspec

from ctx_lsp.core.budget import ClientPrompt
from ctx_lsp.core.conversation import Sized, estimated_cost
from ctx_lsp.core.exchange import chain_id, chain_ids, exchange_query
from ctx_lsp.core.ids import content_id
from ctx_lsp.core.items import SYSTEM_PROMPT, Item, Message, Mode
from ctx_lsp.core.models import Prices
from ctx_lsp.core.own_tools import is_ctx_tool
from ctx_lsp.core.planner import FRAMING_TOKENS
from ctx_lsp.core.present import present_lines
from ctx_lsp.core.prompt_cache import CACHE_TTL_SECONDS, warm_until
from ctx_lsp.core.render import Placement, place
from ctx_lsp.core.savings import RELATIVE_PRICES, saved_tokens
from ctx_lsp.core.shrink import can_expand, shrink
from ctx_lsp.core.shrink.command import command_of
from ctx_lsp.core.shrink.request import Place, Request
from ctx_lsp.core.side_requests import side_request
from ctx_lsp.core.tokens import scaled
from ctx_lsp.engine import BudgetOverrides, ConversationContext, PlanOutcome, PlanRequest, ResolvedModel
from ctx_lsp.memory.store import InsideCompaction, MessageMeta
from ctx_lsp.sessions.cache_plan import CachePlan, Epoch, context_tokens, turn_allowance
from ctx_lsp.sessions.calibration import Calibration
from ctx_lsp.sessions.capsules import Capsules
from ctx_lsp.sessions.conversation import Conversation
from ctx_lsp.sessions.ledger import Ledger
from ctx_lsp.sessions.planning import Planning
from ctx_lsp.sessions.shared import Shared
from ctx_lsp.sessions.usage import UsageAndMeter
from ctx_lsp.sessions.values import SessionPlanRequest, Usage, UsageReport

# savings below this buy no automatic context yet: too little for a useful block, and what the
# estimate of "direct" is unsure of
MIN_ALLOWANCE = 1_000
CHAINED_KEPT = 20_000  # messages whose chained ids are remembered


@dataclass(frozen=True, slots=True)
class Exchange:
    """One request through the gateway, in the engine's terms."""

    session: str
    model: str
    system: str  # the client's system prompt and tool definitions as text: counted, never changed
    messages: list[Message]  # the conversation as the client sent it; ids are given here
    max_output: int | None = None
    mode: Mode | None = None
    tools: tuple[str, ...] = ()  # the names of the client's tools (whether it can call ctx_lsp's expand)
    tool_texts: tuple[str, ...] = ()  # their definitions, in the same order (ctx_lsp's own are counted as ours)
    cache_ttl: int = CACHE_TTL_SECONDS  # the provider's cache lifetime the client's breakpoints ask for


@dataclass(frozen=True, slots=True)
class Savings:
    """Tokens each mechanism took out of a request (and what ctx_lsp's own blocks added)."""

    shed: int = 0  # history archived by compaction or outside the window
    masked: int = 0  # old tool results sent as one-line stubs
    shrunk: int = 0  # big tool outputs sent shortened
    injected: int = 0  # pins, layout, retrieved code, the compaction summary, ctx_lsp's tools
    tools: int = 0  # of ``injected``: the definitions of ctx_lsp's own MCP tools (``core.own_tools``)


@dataclass(frozen=True, slots=True)
class ExchangePlan:
    """How to send an Exchange: the ids its messages have in the session (in order), how many
    were new, the plan, and the plan laid over the client's conversation."""

    session: str
    branch: str
    ids: list[str]
    appended: int
    outcome: PlanOutcome
    placement: Placement
    query: str
    client_tokens: int  # what the client's request holds (its system prompt, tools, whole conversation)
    savings: Savings
    side: str | None = None  # the kind of side request this is (``core.side_requests``): no context added
    # why this request rebuilt the prefix the provider caches (a compaction step, and what took it);
    # None: it repeats the one before and appends
    rebuilt: str | None = None


@dataclass(slots=True)
class Exchanges:
    shared: Shared
    calibration: Calibration
    conversation: Conversation
    planning: Planning
    usage: UsageAndMeter
    capsules: Capsules
    ledger: Ledger
    # per session: the scaffold its requests carry, kept until a compaction changes the prompt's
    # start anyway (an agent that edits files would otherwise change it, and miss the cache, each turn)
    scaffolds: dict[str, tuple[tuple[int, str, str], list[Item]]] = field(default_factory=dict)
    # per session: what ctx_lsp's blocks were, frozen between compaction steps (``cache_plan``)
    cache_plans: dict[str, CachePlan] = field(default_factory=dict)
    # the chained ids of messages seen before: every request resends the whole conversation
    chained: dict[tuple[str | None, Message], str] = field(default_factory=dict)

    def plan(self, ex: Exchange) -> ExchangePlan:
        # the sync and the plan's writes, one commit; other requests' plans kept for after their
        # replies are not written on this one's time
        with self.shared.store.batch(hold=True):
            return self._plan(ex)

    def _follow(self, ex: Exchange, ids: list[str]) -> tuple[Exchange, int, str]:
        """The session and branch the conversation goes on in (``MemoryStore.follow``), and how
        many of its messages are stored. A conversation that leaves its session's history inside
        a compaction's archived turns (the same task started again from its first message, or
        rewound past a compaction) goes on in a session of its own: ``<session>.2``, then ``.3``;
        the stored one stays as it is."""
        session = ex.session
        for n in itertools.count(2):
            self.shared.open_session(session)
            try:
                known, branch = self.shared.store.follow(session, ids)
            except InsideCompaction:
                session = f"{ex.session}.{n}"
                continue
            return (ex if session == ex.session else replace(ex, session=session)), known, branch
        raise AssertionError("unreachable")

    def _plan(self, ex: Exchange) -> ExchangePlan:
        shared, store = self.shared, self.shared.store
        shared.require_memory()
        if len(self.chained) >= CHAINED_KEPT:
            self.chained.clear()
        ids = chain_ids(ex.messages, known=self.chained)
        ex, known, branch = self._follow(ex, ids)
        self.conversation.note_media(ex.session, ids, ex.messages)
        model, _ = self.calibration.model(ex.model)  # once per request: every plan of it is given this
        cal = model.estimator.calibration
        new = [msgspec.structs.replace(m, id=i) for m, i in zip(ex.messages[known:], ids[known:], strict=True)]
        new = self._shrink(ex, new, model)
        if new:
            self.conversation.append(ex.session, None, new)
        system = scaled(model.counter.count(ex.system), cal)
        path = store.path_meta(ex.session)
        every = self.conversation.sizes(ex.session, path, model.counter)
        active = {m.id for m in path if m.archived_by is None}
        # what the conversation section needs as the planner counts it (messages with their framing,
        # the compaction summary): retrieval gets only what that leaves, so it never squeezes out
        # the summary or an old turn (a mask there would rewrite the cached prefix)
        talk = self._talk(ex.session, model, path, every)
        sent = system + sum(s.estimate(cal) for s in every.values())  # what the client sent, whole
        # a side request (a title, a summary, a check) gets no added context: it cannot use it
        side = side_request(ex.system, ex.messages, ex.tools, ex.max_output)
        mode: Mode = "off" if side else ex.mode or store.session(ex.session).mode or shared.engine.config.mode
        users = [i for m, i in zip(ex.messages, ids, strict=True) if m.role == "user"]
        user_id = users[-1] if users else None
        previous = self.cache_plans.get(ex.session)
        # the provider's cache of this conversation expired (idle past its TTL): a step here is free
        last = store.last_gateway_request(ex.session)
        cold = last is not None and warm_until(last, time.time(), ex.cache_ttl) is None
        cache = None if side else self._cache_plan(ex.session, (len(store.compactions(ex.session)), mode), user_id)
        # the blocks this conversation holds already (this turn's too, after its first request):
        # resent as they were, so counted as the client's system prompt is; no new search this turn
        carried = "\n\n".join(cache.carried(set(ids)).values()) if cache else ""
        carried_tokens = scaled(model.counter.count(carried), cal) if carried else 0
        system += carried_tokens
        turn_block = cache.turn_block(user_id) if cache else None
        searches = mode != "off" and turn_block is None
        query = exchange_query(ex.messages)
        # a capsule that goes stale (its code changed) or is refreshed changes the scaffold now
        versions = content_id(*(f"{c.path}@{c.code_hash}:{c.stale}" for c in self.capsules.capsules()))
        key = (len(store.compactions(ex.session)), mode, versions)
        kept = self.scaffolds.get(ex.session)
        kept_scaffold = kept[1] if kept is not None and kept[0] == key else None
        kept_context: list[Item] | None = [] if turn_block is not None else None
        allowance = self._allowance(ex, model, mode, kept_scaffold, kept_context)
        if kept_context is None and allowance == 0:
            # nothing automatic is paid for yet (``context_cost = "savings"``): no search this turn,
            # whose every find the plan would leave out for its cost (a new conversation's first
            # request ranked and read the workspace for nothing: most of its plan's time)
            kept_context, searches = [], False
        # the engine sizes the budget around the client's prompt (``Engine.budget``)
        client = ClientPrompt(system=system, conversation=talk, searches=searches)
        overrides = BudgetOverrides(max_completion_tokens=ex.max_output, client=client)
        present = None
        if kept_context is None and mode != "off":  # a new turn's search: what the model has read is not added
            stored = {m.id: m for m in new}  # as stored: big outputs shortened
            present = present_lines(stored.get(i, m) for m, i in zip(ex.messages, ids, strict=True) if i in active)
        request = PlanRequest(
            query=query,
            model=ex.model,
            budget=overrides,
            mode="off" if side else ex.mode,
            system_prompt=ex.system + (f"\n\n{carried}" if carried else ""),
            query_in_conversation=True,
            instructions=False,
        )
        held = ConversationContext(
            scaffold=kept_scaffold, candidates=kept_context, allowance=allowance, present=present
        )
        ask = partial(
            SessionPlanRequest,
            session=ex.session,
            model=model,
            keep_later=True,
            cache_ttl=ex.cache_ttl,
            carried_tokens=carried_tokens,
        )
        outcome = self.planning.plan(ask(request=request, carried=held))
        after = (len(store.compactions(ex.session)), mode, versions)
        if after != key and (held.scaffold is not None or searches):
            # it compacted: the prompt's start changes now, and a turn's search gets the room the step made
            request, held = self._after_step(ex, request, held, model, mode, kept_context, searches)
            outcome = self.planning.plan(ask(request=request, carried=held))
        placement = place(outcome.result)
        count = lambda t: scaled(model.counter.count(t), cal)  # noqa: E731
        rebuilt = None
        if cache is not None and after[0] == cache.epoch[0]:
            # a request that would rewrite the cached prefix between steps takes a step instead
            slack = outcome.inputs.budget.prompt_budget - outcome.result.plan.totals.tokens
            why = cache.holds(placement, set(ids), slack, count)
            if why is not None:
                held = replace(held, scaffold=None, allowance=self._allowance(ex, model, mode, None, kept_context))
                outcome = self.planning.plan(ask(request=request, carried=held, compact=True))
                if searches and len(store.compactions(ex.session)) != after[0]:  # the room the step made
                    request, held = self._after_step(ex, request, held, model, mode, kept_context, searches)
                    outcome = self.planning.plan(ask(request=request, carried=held))
                stepped = len(store.compactions(ex.session)) != after[0]
                after = (len(store.compactions(ex.session)), mode, versions)
                placement = place(outcome.result)
                rebuilt = f"compaction step, instead of: {why}" if stepped else why
        # what was chosen is kept: what was not paid for stays out too (a side request chose nothing)
        if not side and held.scaffold is None:
            chosen_scaffold = [c.item for c in outcome.result.chosen if c.reason == "scaffold"]
            self.scaffolds[ex.session] = (after, chosen_scaffold)
        if cache is not None:
            epoch = (len(store.compactions(ex.session)), mode)
            if epoch != cache.epoch:  # a compaction step: the prefix is rebuilt here, once
                cache = cache.next_epoch(epoch, user_id)
                rebuilt = rebuilt or (
                    f"compaction step: the provider's cache had expired (idle over {ex.cache_ttl // 60} minutes)"
                    if cold
                    else "compaction step: the conversation reached its step size"
                )
            elif previous is not None and previous.epoch[1] != mode:
                rebuilt = f"mode changed to {mode}"
            self.cache_plans[ex.session] = cache
            slack = outcome.inputs.budget.prompt_budget - outcome.result.plan.totals.tokens
            pinned = sorted(c.item.id for c in outcome.result.chosen if c.pin is not None)
            inputs = content_id(versions, *pinned)  # the user's pins and capsules: theirs to see at once
            frozen = cache.stable
            placement = cache.lay(placement, user_id, slack, count, inputs)
            if rebuilt is None and frozen is not None and cache.stable != frozen:
                rebuilt = "stable block: a pin or a capsule changed"
        chosen = outcome.result.chosen
        # ctx_lsp's MCP tools ride in the client's tool list: ours, not the client's own
        ours = [t for n, t in zip(ex.tools, ex.tool_texts, strict=False) if is_ctx_tool(n)]
        tools = scaled(model.counter.count("\n".join(ours)), cal) if ours else 0
        savings = Savings(
            shed=sum(size.estimate(cal) for i, size in every.items() if i not in placement.shown),
            masked=sum(c.item.tokens - c.tokens for c in chosen if c.masked),
            shrunk=store.shrunk_saving(ex.session, ids) if self.shared.engine.config.gateway.shrink_tokens else 0,
            injected=tools
            + carried_tokens
            + sum(c.tokens for c in chosen if not c.item.messages and c.item.kind != SYSTEM_PROMPT),
            tools=tools,
        )
        return ExchangePlan(
            session=ex.session,
            branch=branch,
            ids=ids,
            appended=len(new),
            outcome=outcome,
            placement=placement,
            query=query,
            # direct, the client sends its outputs whole and no ctx_lsp tools
            client_tokens=max(0, sent + savings.shrunk - tools),
            savings=savings,
            side=side,
            rebuilt=rebuilt,
        )

    def _talk(
        self, session: str, model: ResolvedModel, path: list[MessageMeta], every: dict[str, Sized] | None = None
    ) -> int:
        """What the conversation section needs as the planner counts it (messages with their
        framing, the compaction summary): retrieval gets only what that leaves, so it never
        squeezes out the summary or an old turn (a mask there would rewrite the cached prefix)."""
        cal = model.estimator.calibration
        every = every if every is not None else self.conversation.sizes(session, path, model.counter)
        done = self.shared.store.compactions(session)
        talk = sum(
            estimated_cost(model.counter, m.to_message(), every[m.id], cal) for m in path if m.archived_by is None
        )
        return talk + FRAMING_TOKENS + (scaled(model.counter.count(done[-1]["summary"] or ""), cal) if done else 0)

    def _after_step(
        self,
        ex: Exchange,
        request: PlanRequest,
        held: ConversationContext,
        model: ResolvedModel,
        mode: Mode,
        kept_context: list[Item] | None,
        searches: bool,
    ) -> tuple[PlanRequest, ConversationContext]:
        """``request`` again after a compaction step it made: the scaffold chosen afresh and, when
        the turn searches, the budget sized around what the conversation needs now — not what it
        needed before."""
        held = replace(held, scaffold=None, allowance=self._allowance(ex, model, mode, None, kept_context))
        client = request.budget.client
        if not searches or client is None:
            return request, held
        talk = self._talk(ex.session, model, self.shared.store.path_meta(ex.session))
        client = msgspec.structs.replace(client, conversation=talk)
        return replace(request, budget=msgspec.structs.replace(request.budget, client=client)), held

    def _cache_plan(self, session: str, epoch: Epoch, user_id: str | None) -> CachePlan:
        """The session's cache plan for a request in ``epoch``: a compaction step since (made by
        any face) starts the next epoch; a mode change starts afresh."""
        cache = self.cache_plans.get(session)
        if cache is None or cache.epoch[1] != epoch[1]:
            return CachePlan(epoch)
        return cache if cache.epoch == epoch else cache.next_epoch(epoch, user_id)

    def _allowance(
        self,
        ex: Exchange,
        model: ResolvedModel,
        mode: Mode,
        kept_scaffold: list[Item] | None,
        kept_context: list[Item] | None,
    ) -> int | None:
        """Tokens the automatic context of this request (scaffold, capsules, retrieved code) may
        take: with ``context_cost = "savings"``, what the gateway has saved this conversation so
        far pays for what is chosen now, at most a share of what its requests cost; the turn's own
        block, once chosen, is paid for; the layout kept since the last step counts in each turn's
        share (``cache_plan.turn_allowance``). None: no such limit."""
        paid_by = self.shared.engine.config.gateway.context_cost or ("always" if mode == "heavy" else "savings")
        if mode == "off" or paid_by == "always":
            return None
        if kept_scaffold is not None and kept_context is not None:
            return None
        rows = self.shared.store.gateway_requests(ex.session)
        prices = self.ledger.prices(rows)
        saved = saved_tokens(rows, prices, model.spec.name)
        p = model.spec.prices
        new = int(saved * p.input / p.cache_write) if p and p.cache_write > p.input else saved
        new = new if new >= MIN_ALLOWANCE else 0
        if new:  # and what pays over its life in the prompt (``cache_plan.context_tokens``), at least the minimum
            new = min(new, max(MIN_ALLOWANCE, self._context_tokens(ex, rows, prices, model)))
        kept = None if kept_context is None else sum(i.tokens for i in kept_context)
        return turn_allowance(new, sum(i.tokens for i in kept_scaffold or []), kept)

    def _context_tokens(
        self, ex: Exchange, rows: list[dict[str, Any]], prices: dict[str, Prices | None], model: ResolvedModel
    ) -> int:
        """What a turn's automatic context may take in this conversation: a share of what its
        requests cost, each token priced over the requests it stays in (``cache_plan``)."""
        cost = 0.0  # the input of the requests so far, as the provider billed it (the reply is not ours)
        for r in rows:
            p = prices.get(r.get("model") or "") or RELATIVE_PRICES
            read, write = r.get("cached_tokens") or 0, r.get("cache_write_tokens") or 0
            cost += p.cost(max(0, (r.get("input_tokens") or 0) - read - write), read, write, 0)
        if not cost or not rows:
            return 0
        request_cost = cost / len(rows) / ((model.spec.prices or RELATIVE_PRICES).input / 1e6)
        turns = sum(m.role == "user" for m in ex.messages)
        steps = len(self.shared.store.compactions(ex.session))
        cycle = len(rows) / steps if steps else None
        return context_tokens(request_cost, len(rows) / max(1, turns), cycle, model.spec.prices)

    def _shrink(self, ex: Exchange, new: list[Message], model: ResolvedModel) -> list[Message]:
        """Big tool outputs seen for the first time, shortened (``core.shrink``); the originals are
        kept for ``expand``. Once stored, the shortened text is what every later request sends."""
        config = self.shared.engine.config.gateway
        if not config.shrink_tokens or not any(m.role == "tool" for m in new):
            return new
        calls = {t.id: t for m in ex.messages for t in m.tool_calls}
        expand_tool = can_expand(ex.tools)
        query = exchange_query(ex.messages)
        counter = model.counter
        out = []
        for m in new:
            call = calls.get(m.tool_call_id or "")
            tool = call.name if call else m.name or ""
            if m.role == "tool" and tool not in config.shrink_off:
                done = shrink(
                    m.content,
                    tool=tool,
                    command=command_of(call.arguments) if call else "",
                    places=self._places,
                    expand_tool=expand_tool,
                    query=query,
                    count=counter.count,
                    threshold=config.shrink_tokens,
                    expand_id=m.id,
                )
                if done is not None:
                    self.shared.store.put_original(
                        ex.session, m.id, done.kind, done.original_tokens, done.tokens, m.content
                    )
                    m = msgspec.structs.replace(m, content=done.text)
            out.append(m)
        return out

    def _places(self, request: Request) -> tuple[Place, ...]:
        """Where the names a request gives are defined, from the index (1-based lines): a tool
        output's lines that point there are about them. Names the index does not know, or
        knows several of, place nothing."""
        index = self.shared.engine.index
        found = []
        for name in request.names():
            sym = index.lookup(name).symbol
            if sym is not None and sym.kind != "module":
                found.append(Place(sym.path, sym.start_line + 1, sym.end_line + 1))
        return tuple(found)

    def original(self, mid: str, session: str | None = None) -> tuple[str, str, str] | None:
        return self.shared.store.original(mid, session)

    def count_sample(self, model_name: str, text: str, actual: int, media_tokens: int = 0) -> None:
        """A provider's exact count of a request (Anthropic's count_tokens) against ours of the same
        text (and its images and documents, counted the provider's way): one more measurement for
        the model's calibration, as a usage report is."""
        if actual <= 0 or not text:
            return
        self.shared.require_memory()
        model, _ = self.calibration.model(model_name)
        raw, media = model.counter.count(text), max(0, media_tokens)
        estimate = scaled(raw, model.estimator.calibration) + media
        self.shared.store.record_usage("count_tokens", "", model.spec.name, estimate, raw, actual, 0, 0, media)

    def record_reply(
        self,
        session: str,
        plan_id: str,
        parent: str | None,
        reply: Message | None,
        usage: Usage | None,
    ) -> UsageReport | None:
        """The model's reply, read from what streamed back, appended after the request's last
        message (with the id the client's resend of it will have) — unless the branch moved on
        meanwhile (a parallel request): then the client's next request brings it. Then the usage."""
        store = self.shared.store
        if reply is not None:
            record = self.shared.open_session(session)
            heads = store.path_meta(session, record.branch)
            head = heads[-1].id if heads else None
            rid = chain_id(parent, reply)
            if head == parent and not store.contents(session, [rid]):
                self.conversation.append(session, None, [msgspec.structs.replace(reply, id=rid)])
        if usage is None:
            return None
        return self.usage.report_usage(session, plan_id, usage)
