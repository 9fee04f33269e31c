"""SessionEngine: the one object every face (the language server, the CLI) calls for work that
involves memory. It composes the rooms of this package and holds no logic of its own."""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

from ctx_lsp.core.items import Message, Mode, PlanItem
from ctx_lsp.core.planner import PlanResult
from ctx_lsp.core.report import GatewayReport
from ctx_lsp.core.savings import Totals
from ctx_lsp.core.shrink.excerpt import Excerpt, excerpt
from ctx_lsp.engine import CodeSearch, Engine, PlanOutcome
from ctx_lsp.memory.compaction import Compaction
from ctx_lsp.memory.store import MemoryStore, SessionRecord, StoredMessage
from ctx_lsp.sessions.calibration import Calibration
from ctx_lsp.sessions.capsules import Capsules
from ctx_lsp.sessions.code import Code
from ctx_lsp.sessions.compaction import Compactions
from ctx_lsp.sessions.conversation import Conversation
from ctx_lsp.sessions.events import Event
from ctx_lsp.sessions.exchanges import Exchange, ExchangePlan, Exchanges
from ctx_lsp.sessions.ledger import (
    Forwarded,
    GatewayConversation,
    GatewayMoney,
    GatewayRequest,
    GatewayRun,
    Ledger,
)
from ctx_lsp.sessions.pins import Pins
from ctx_lsp.sessions.planning import Planning
from ctx_lsp.sessions.plans import LEDGER_TURNS, Plans
from ctx_lsp.sessions.records import Branch, Capsule, LedgerTurn, Reflection, Suggestion
from ctx_lsp.sessions.reflection import Reflections
from ctx_lsp.sessions.shared import NotFound, Shared
from ctx_lsp.sessions.usage import UsageAndMeter
from ctx_lsp.sessions.values import (
    AgentContext,
    Meter,
    PinIntent,
    PinState,
    References,
    SessionPlanRequest,
    Transcript,
    Usage,
    UsageReport,
)

if TYPE_CHECKING:
    from ctx_lsp.workspace.index import IndexedSymbol


class SessionEngine:
    """The workspace ``engine`` plus the memory ``store``: sessions, pins, conversation, plans,
    usage and calibration, compaction, capsules, reflection. Its methods run on one thread (the
    language server's worker); they return typed values and queue typed events
    (``drain_events``), and know nothing of any protocol."""

    def __init__(self, engine: Engine, store: MemoryStore | None = None) -> None:
        self._shared = shared = Shared(engine, store)
        self.engine, self.store = engine, shared.store
        calibration = Calibration(shared)
        self._conversation = Conversation(shared)
        self._pins = Pins(shared)
        self._capsules = Capsules(shared)
        self._compactions = Compactions(shared, calibration, self._conversation)
        self._reflections = Reflections(shared, self._pins)
        self._plans = Plans(shared)
        self._planning = Planning(
            shared,
            calibration,
            self._conversation,
            self._compactions,
            self._pins,
            self._capsules,
            self._reflections,
            self._plans,
        )
        self._usage = UsageAndMeter(shared, calibration, self._plans, self._pins, self._reflections)
        self._ledger = Ledger(shared)
        self._exchanges = Exchanges(
            shared, calibration, self._conversation, self._planning, self._usage, self._capsules, self._ledger
        )
        self._code = Code(shared, calibration, self._planning)

    def close(self) -> None:
        self.store.close()
        self.engine.close()

    def startup_messages(self) -> list[str]:
        """What the user should know after start-up: settings that were ignored, a cache that
        was rebuilt, a memory store that cannot be read."""
        error = self._shared.memory_error
        return [*self.engine.config_messages, *([str(error)] if error is not None else [])]

    def require_memory(self) -> None:
        self._shared.require_memory()

    def drain_events(self) -> list[Event]:
        events, self._shared.events = self._shared.events, []
        return events

    # ---- sessions, pins, conversation -------------------------------------------------------

    def open_session(self, session: str) -> SessionRecord:
        return self._shared.open_session(session)

    def set_mode(self, session: str, mode: Mode) -> Mode:
        self.require_memory()
        self.open_session(session)
        self.store.set_mode(session, mode)
        return mode

    def resolve(self, intent: PinIntent) -> IndexedSymbol:
        return self._pins.resolve(intent)

    def pin(self, session: str, intent: PinIntent) -> PinState:
        return self._pins.pin(session, intent)

    def unpin(self, session: str, pin_id: str) -> PinState:
        return self._pins.unpin(session, pin_id)

    def pins(self, session: str) -> list[PinState]:
        return self._pins.pins(session)

    def append_raw(self, session: str, branch: str | None, raw: list[dict[str, Any]]) -> list[StoredMessage]:
        return self._conversation.append_raw(session, branch, raw)

    def messages(self, session: str, branch: str | None = None) -> Transcript:
        return self._conversation.transcript(session, branch)

    def message_count(self, session: str, branch: str | None = None) -> int:
        return self._conversation.message_count(session, branch)

    def branch(self, session: str, from_message: str, name: str | None) -> Branch:
        return self._conversation.branch(session, from_message, name)

    # ---- plans, usage, the meter ------------------------------------------------------------

    def plan(self, req: SessionPlanRequest) -> PlanOutcome:
        return self._planning.plan(req)

    def keep_plan(self, session: str, query: str, outcome: PlanOutcome) -> None:
        """Keep a plan the workspace engine made on its own (`ctx-lsp plan`) under ``session``,
        with the inputs that rebuild it (`ctx-lsp replay`)."""
        self.require_memory()
        self._plans.keep(self.open_session(session), query, None, outcome)

    def warm(self) -> None:
        """What the first requests would read or build, before they come: the workspace's
        scaffold, and the estimator's calibration of every model the store has reports of."""
        self.engine.warm()
        self.store.warm_usage()

    def flush(self) -> None:
        """Write what was kept for after the reply (a plan made with ``keep_later``)."""
        self.store.flush()

    def batch(self) -> AbstractContextManager[None]:
        """What is written inside, in one transaction of the store (one commit for a request that
        writes many times)."""
        return self.store.batch()

    def replan_latest(self, session: str) -> PlanOutcome | None:
        return self._planning.replan_latest(session)

    def outcome(self, session: str, plan_id: str | None) -> PlanOutcome:
        return self._plans.outcome(session, plan_id)

    def replay(self, plan_id: str) -> tuple[bool, PlanResult]:
        return self._plans.replay(plan_id)

    def ledger(self, session: str, plan_id: str | None, turns: int = LEDGER_TURNS) -> list[LedgerTurn]:
        return self._plans.ledger(session, plan_id, turns)

    def excluded_item(self, session: str, item_id: str, plan_id: str | None) -> PlanItem:
        return self._plans.excluded_item(session, item_id, plan_id)

    def report_usage(self, session: str, plan_id: str, usage: Usage) -> UsageReport:
        return self._usage.report_usage(session, plan_id, usage)

    def meter(self, session: str) -> Meter:
        return self._usage.meter(session)

    # ---- the gateway ------------------------------------------------------------------------

    def plan_exchange(self, exchange: Exchange) -> ExchangePlan:
        """A request through the gateway: its conversation synced into the session, then planned."""
        return self._exchanges.plan(exchange)

    def record_reply(
        self,
        session: str,
        plan_id: str,
        parent: str | None,
        reply: Message | None,
        usage: Usage | None,
    ) -> UsageReport | None:
        return self._exchanges.record_reply(session, plan_id, parent, reply, usage)

    def account_exchange(self, plan: ExchangePlan, sent: Forwarded) -> GatewayRequest:
        """The record of a request the gateway planned and forwarded (what it sent, saved and
        cost), made from its plan and what the gateway saw, and kept."""
        return self._ledger.account(plan, sent)

    def record_gateway_request(self, record: GatewayRequest | Mapping[str, Any]) -> None:
        """A record kept as given (a mapping: by the store's column names)."""
        self._ledger.keep(record)

    def gateway_requests(self, session: str | None = None) -> list[GatewayRequest]:
        return self._ledger.requests(session)

    def gateway_report(self, session: str | None = None, since: float | None = None) -> GatewayReport:
        """Per session and overall: each request's tokens and cache share, and the totals."""
        return self._ledger.report(session, since)

    def gateway_totals(self, session: str | None = None, rows: list[dict[str, Any]] | None = None) -> Totals:
        """The gateway's money and tokens (of one session, or of ``rows`` already read), through
        vs direct: the one place a request's model is priced."""
        return self._ledger.totals(session, rows)

    def gateway_money(self, session: str, model: str | None = None) -> GatewayMoney:
        """A conversation's totals and its model's prices (``model``, else the session's)."""
        return self._ledger.money(session, model)

    def gateway_conversations(self) -> list[GatewayConversation]:
        """The conversations the gateway served, the latest first: every face's one list."""
        return self._ledger.conversations()

    def gateway_run(self, api: str, client_session: str | None) -> GatewayRun | None:
        """Where the run of a client's conversation id stands (else the latest conversation's)."""
        return self._ledger.run(api, client_session)

    def original(self, message_id: str, session: str | None = None) -> tuple[str, str, str] | None:
        """A tool output the gateway shortened, whole: (session, kind, text), or None."""
        return self._exchanges.original(message_id, session)

    def expand(
        self,
        message_id: str,
        *,
        start_line: int | None = None,
        max_lines: int | None = None,
        match: str | None = None,
        context: int = 3,
    ) -> tuple[str, Excerpt, int]:
        """A shortened tool output, whole or the part asked for: (kind, the part, the whole's
        token count). NotFound for an id no shortened output has."""
        found = self._exchanges.original(message_id)
        if found is None:
            raise NotFound(f"no shortened output with id {message_id!r}: use the id from the marker, expand('…')")
        _, kind, text = found
        part = excerpt(text, start_line=start_line, max_lines=max_lines, match=match, context=context)
        return kind, part, self.engine.resolve_model(None).counter.count(text)

    def conversation_title(self, session: str) -> str:
        return self._ledger.title(session)

    def count_sample(self, model: str, text: str, actual: int, media_tokens: int = 0) -> None:
        self._exchanges.count_sample(model, text, actual, media_tokens)

    # ---- an agent's questions about the code (the MCP face) ------------------------------

    def symbol(self, name: str) -> IndexedSymbol:
        """The symbol a qualified or short name gives; NotFound lists the candidates of an
        ambiguous name, or close names for an unknown one."""
        return self._code.symbol(name)

    def pinned(self, session: str, qualname: str) -> str | None:
        return self._code.pinned(session, qualname)

    def references(self, name: str) -> References:
        return self._code.references(name)

    def search_code(self, session: str, query: str, budget: int | None = None) -> CodeSearch:
        return self._code.search(session, query, budget)

    def agent_context(
        self, session: str, query: str, budget: int | None = None, mode: Mode | None = None
    ) -> AgentContext:
        return self._code.context(session, query, budget, mode)

    # ---- compaction, capsules, reflection ----------------------------------------------------

    def compact(
        self, session: str, strategy: str = "summary", *, dry_run: bool = False, summary: str | None = None
    ) -> Compaction:
        """Compaction asked for (with ``dry_run``, the proposal: nothing changes)."""
        compaction = self._compactions.compact(session, strategy, dry_run=dry_run, summary=summary)
        assert compaction is not None  # only automatic compaction finds nothing to do; asked for, it says why
        return compaction

    def set_memory_policy(self, session: str, rolling: bool | None, threshold: float | None) -> SessionRecord:
        return self._compactions.set_memory_policy(session, rolling, threshold)

    def capsules(self) -> list[Capsule]:
        return self._capsules.capsules()

    def refresh_capsules(self, paths: list[str] | None = None) -> list[Capsule]:
        return self._capsules.refresh(paths)

    def ensure_capsules(self) -> None:
        self._capsules.ensure()

    def file_saved(self, rel: str, text: str | None = None) -> list[Capsule]:
        return self._capsules.file_saved(rel, text)

    def suggestions(self, session: str) -> list[Suggestion]:
        return self._reflections.suggestions(session)

    def reflections(self, session: str) -> list[Reflection]:
        return self._reflections.reflections(session)

    def undo_reflection(self, session: str, reflection_id: int) -> Reflection:
        return self._reflections.undo(session, reflection_id)
