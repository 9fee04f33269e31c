"""What faces hand the sessions engine, and what it hands back: typed values in the engine's
own terms (workspace-relative paths, records of the store, the planner's types). The faces turn
them into their wire shapes."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import msgspec

from ctx_lsp.core.items import BudgetSpec, ContextPlan, EstimatorInfo, Mode, PinKind, PinPolicy, SectionUsage
from ctx_lsp.core.prompt_cache import CACHE_TTL_SECONDS
from ctx_lsp.engine import (
    NOTHING_CARRIED,
    BudgetOverrides,
    ConversationContext,
    Focus,
    PlanOutcome,
    PlanRequest,
    ResolvedModel,
)
from ctx_lsp.memory.store import PinRecord, SessionRecord, StoredMessage, UsageStats

if TYPE_CHECKING:
    from ctx_lsp.workspace.index import IndexedSymbol


@dataclass(frozen=True, slots=True)
class PinIntent:
    """A pin to make (or, in a what-if plan, to imagine)."""

    symbol: str | None = None
    path: str | None = None
    line: int | None = None
    character: int | None = None
    text: str | None = None  # the buffer's text when it differs from disk
    kind: PinKind = "sticky"
    ttl: int | None = None
    policy: PinPolicy = "automatic"
    priority: int = 0
    lease_scope: str = "turn"
    created_by: str = "user"


@dataclass(slots=True)
class SessionPlanRequest:
    """A plan for a session: the engine's request (the question and how to ask it), what a face
    carries between the requests of one conversation (the gateway), and what only a session has:
    what-if pins and items to drop, for a plan that changes nothing."""

    session: str
    request: PlanRequest
    carried: ConversationContext = NOTHING_CARRIED
    # the request's model, when the caller resolved it already (the gateway sizes its budget with
    # it): resolved once per request, not again here
    model: ResolvedModel | None = None
    dry_run: bool = False
    extra_pins: list[PinIntent] = field(default_factory=list)
    drop_items: list[str] = field(default_factory=list)
    # keep the plan in the store once the face has answered (``SessionEngine.flush``, or the next
    # read or write of the store, whichever comes first), not before: writing it costs a few
    # milliseconds the reply need not wait for
    keep_later: bool = False
    # take a compaction step before planning, whatever the conversation's size (the gateway's cache
    # plan: the plan would otherwise mask or shed between steps)
    compact: bool = False
    # the provider's cache lifetime the client's breakpoints ask for (the gateway): idle past it,
    # the cache is cold and a step costs nothing extra
    cache_ttl: int = CACHE_TTL_SECONDS
    # tokens of ctx_lsp's own blocks the client's prompt carries (the gateway's per-turn blocks):
    # a step is sized on the room the conversation has without them, as in mode off
    carried_tokens: int = 0


class PlanOptions(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """The parts of a plan request a re-plan repeats (after a pin, a mode change, new messages),
    stored with the plan. Not the mode: a re-plan uses the session's mode as it is now."""

    model: str | None = None
    budget: BudgetOverrides = BudgetOverrides()
    focus: Focus | None = None
    open_files: list[str] = []
    query_in_conversation: bool = False
    instructions: bool = True

    @classmethod
    def of(cls, req: PlanRequest, budget: BudgetSpec) -> PlanOptions:
        """``req``'s options; a budget sized around a client's prompt as the numbers it came to
        (a re-plan has no client's prompt to size around: it asks the same way)."""
        numbers = req.budget
        if numbers.client is not None:
            shares = budget.shares
            numbers = msgspec.structs.replace(
                numbers,
                client=None,
                rag_budget=budget.rag_budget,
                shares=(shares.system, shares.conversation, shares.rag),
            )
        return cls(
            model=req.model,
            budget=numbers,
            focus=req.focus,
            open_files=req.open_files,
            query_in_conversation=req.query_in_conversation,
            instructions=req.instructions,
        )

    @classmethod
    def read(cls, stored: dict[str, Any]) -> PlanOptions:
        """Options as stored; plans stored by earlier versions have the budget numbers at the top
        level instead of under ``budget``."""
        flat = {k: stored[k] for k in BudgetOverrides.__struct_fields__ if k in stored}
        rest = {k: v for k, v in stored.items() if k not in flat}
        if flat:
            rest["budget"] = {**flat, **rest.get("budget", {})}
        return msgspec.convert(rest, cls)

    def request(self, query: str) -> PlanRequest:
        return PlanRequest(
            query=query,
            model=self.model,
            budget=self.budget,
            focus=self.focus,
            open_files=list(self.open_files),
            query_in_conversation=self.query_in_conversation,
            instructions=self.instructions,
        )


@dataclass(frozen=True, slots=True)
class PinState:
    """A pin as it stands: its record, and what its symbol's body costs now (None when the
    symbol is no longer in the workspace)."""

    record: PinRecord
    tokens: int | None


@dataclass(frozen=True, slots=True)
class Meter:
    """The budget meter of a session: its latest plan's numbers, or before any plan the budget
    a plan would have (``plan_id`` None, nothing used)."""

    session: SessionRecord
    mode: Mode
    model: str
    budget: BudgetSpec
    used: int
    sections: tuple[SectionUsage, ...]
    estimator: EstimatorInfo  # with the spread and number of the model's usage reports
    plan_id: str | None
    usage: UsageStats  # the session's last estimate and actual


@dataclass(frozen=True, slots=True)
class Usage:
    """What a model call actually used, as the client reports it."""

    input_tokens: int
    output_tokens: int
    cached_input_tokens: int = 0
    cache_write_tokens: int = 0  # input the provider wrote to its prompt cache (Anthropic charges a premium)
    # the provider's own reason its cache missed part of the prompt (Anthropic's cache diagnostics)
    cache_miss: str | None = None


@dataclass(frozen=True, slots=True)
class UsageReport:
    """Estimate vs actual tokens for one plan, and what it changed: the calibration, the turn,
    pins whose TTL ran out (``asked``: under the ``ask`` policy, the user decides)."""

    plan_id: str
    model: str
    estimate: int
    actual: Usage
    before: EstimatorInfo
    after: EstimatorInfo
    turn: int
    expired: list[PinRecord]
    asked: list[PinState]

    @property
    def error(self) -> int:
        return self.actual.input_tokens - self.estimate

    @property
    def error_percent(self) -> float:
        return round(100 * self.error / self.estimate, 2) if self.estimate else 0.0


@dataclass(frozen=True, slots=True)
class StoredPlan:
    """A plan of the session's history, as stored."""

    plan_id: str
    turn: int
    query: str
    plan: ContextPlan


@dataclass(frozen=True, slots=True)
class Transcript:
    """The messages of a branch's path, archived ones included."""

    session: str
    branch: str
    messages: list[StoredMessage]


@dataclass(frozen=True, slots=True)
class Reference:
    """A neighbour in the reference graph, and how many times one names the other."""

    symbol: IndexedSymbol
    weight: int


@dataclass(frozen=True, slots=True)
class References:
    """A symbol with the definitions whose code names it (``callers``) and those its code names
    (``callees``), heaviest first."""

    symbol: IndexedSymbol
    callers: list[Reference]
    callees: list[Reference]


@dataclass(frozen=True, slots=True)
class AgentContext:
    """A session's plan for an agent's question, and the context it adds to the agent's own
    prompt (``text``: the stable part — pins, layout, capsules —, then this question's)."""

    outcome: PlanOutcome
    text: str
