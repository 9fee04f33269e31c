"""The planner's vocabulary (docs/architecture.md): items, atoms, turns, pins, budgets and the plan.

Everything here is a frozen msgspec Struct so that inputs hash and encode deterministically:
the plan id is a digest of the encoded inputs, and the plan's JSON is byte-stable. The ones made
by the thousand (items, their ranges, messages, plan items) are not tracked by the cyclic garbage
collector (``gc=False``): frozen and holding only strings, numbers and other such structs, they
cannot form a cycle, and warm plans keep many of them alive (the index's memo, the plan cache),
which every full collection would otherwise walk.
"""

from __future__ import annotations

from typing import Literal

import msgspec

from ctx_lsp.errors import Overflow

Section = Literal["system", "conversation", "rag"]
SECTIONS: tuple[Section, ...] = ("system", "conversation", "rag")

Mode = Literal["off", "light", "heavy"]
PinKind = Literal["sticky", "leased", "ephemeral"]
PinPolicy = Literal["automatic", "ask", "unlimited"]
Role = Literal["system", "user", "assistant", "tool"]

IncludedReason = Literal["required", "latest_user", "pinned", "recent", "relevant", "scaffold", "summary"]
ExcludedReason = Literal[
    "budget", "ttl_expired", "policy", "duplicate", "stale", "mode_off", "archived", "cost", "in_conversation"
]

# Item kinds.
SYSTEM_PROMPT = "system_prompt"
FOCUS_HINT = "focus_hint"
SCAFFOLD = "scaffold"
SYMBOL_CARD = "symbol_card"
SYMBOL_BODY = "symbol_body"
TOUCHPOINT = "touchpoint"  # an excerpt of a long body (retrieval no longer makes them; stored plans may hold them)
CAPSULE = "capsule"
MESSAGE = "message"
TOOL_EPISODE = "tool_episode"
COMPACTION_SUMMARY = "compaction_summary"
HISTORY_CHUNK = "history_chunk"
NOTE = "note"
INSTRUCTIONS = "instructions"  # agent instruction files (AGENTS.md, CLAUDE.md, ...)
# A thin card (a card's header, signature and doc line, for a small room) is a card whose id
# starts so: the same kind to every face, another form of its symbol to the planner.
THIN_CARD_PREFIX = "head:"


def is_thin_card(item: Item) -> bool:
    return item.kind == SYMBOL_CARD and item.id.startswith(THIN_CARD_PREFIX)


class Position(msgspec.Struct, frozen=True, gc=False):
    line: int
    character: int


class Range(msgspec.Struct, frozen=True, gc=False):
    start: Position
    end: Position

    @classmethod
    def lines(cls, start_line: int, end_line: int, end_character: int = 0) -> Range:
        return cls(Position(start_line, 0), Position(end_line, end_character))


class ToolCall(msgspec.Struct, frozen=True, gc=False, kw_only=True):
    id: str
    name: str
    arguments: str = ""  # the JSON text the model produced, kept verbatim


class Message(msgspec.Struct, frozen=True, gc=False, kw_only=True, rename="camel", omit_defaults=True):
    id: str
    role: Role
    content: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    name: str | None = None
    # its images and documents as the provider counts them (``core.media``): a gateway's request
    # says; its text shows them as ``[image]``. Not part of what identifies the message.
    media_tokens: int = 0


class Item(msgspec.Struct, frozen=True, gc=False, kw_only=True):
    """Anything that could go into a prompt. ``tokens`` is the estimate the budget is charged.

    Conversation atoms carry their ``messages``; an atom whose tool results may be masked to a
    one-line stub carries ``masked_messages``/``masked_tokens`` too (the planner chooses).
    """

    id: str
    section: Section
    kind: str
    title: str
    tokens: int
    text: str = ""
    priority: int = 0
    path: str | None = None
    range: Range | None = None
    symbol: str | None = None
    score: float | None = None
    why: str | None = None
    detail: str | None = None
    messages: tuple[Message, ...] = ()
    masked_messages: tuple[Message, ...] = ()
    masked_tokens: int | None = None
    # of ``tokens``, the images and documents of its messages as the provider counts them: not
    # calibrated, so calibration learns from the rest (a conversation atom's; 0 for anything else)
    media: int = 0
    stale: bool = False
    pending: bool = False  # an atom with a tool call whose result has not arrived: required


class Turn(msgspec.Struct, frozen=True, gc=False):
    """A user message through the assistant's final reply: its atoms in chronological order."""

    atoms: tuple[Item, ...]


class Conversation(msgspec.Struct, frozen=True):
    turns: tuple[Turn, ...] = ()
    summary: Item | None = None  # the latest compaction summary, standing in for archived turns


class PinSpec(msgspec.Struct, frozen=True, gc=False, kw_only=True):
    pin_id: str
    kind: PinKind = "sticky"
    policy: PinPolicy = "automatic"
    ttl_remaining: int | None = None  # turns left; None = no TTL; 0 = expired this turn
    priority: int = 0
    seq: int = 0  # creation order: newer pins win ties


class PinnedItem(msgspec.Struct, frozen=True, gc=False):
    pin: PinSpec
    item: Item


class Shares(msgspec.Struct, frozen=True):
    system: float = 0.15
    conversation: float = 0.55
    rag: float = 0.30

    def of(self, section: Section) -> float:
        return getattr(self, section)


class BudgetSpec(msgspec.Struct, frozen=True, kw_only=True):
    context_length: int
    max_completion_tokens: int
    safety_buffer: int = 0
    shares: Shares = Shares()
    rag_budget: int | None = None  # fixes the rag section's budget (benchmarks)

    @property
    def prompt_budget(self) -> int:
        return self.context_length - self.max_completion_tokens - self.safety_buffer


class EstimatorInfo(msgspec.Struct, frozen=True, kw_only=True):
    encoding: str
    exact: bool
    calibration: float = 1.0
    spread: float | None = None  # spread of measured calibration, once usage reports exist
    reports: int = 0


class PlanInput(msgspec.Struct, frozen=True, kw_only=True):
    """Every input that matters to a plan. Its encoding is hashed into the plan id."""

    model: str
    budget: BudgetSpec
    estimator: EstimatorInfo
    mode: Mode = "light"
    required: tuple[Item, ...] = ()
    pins: tuple[PinnedItem, ...] = ()
    scaffold: tuple[Item, ...] = ()
    conversation: Conversation = Conversation()
    candidates: tuple[Item, ...] = ()
    retrieval_set_id: str | None = None
    cluster_id: str | None = None  # the query's cluster ("task"), from reflection
    notes: tuple[str, ...] = ()
    # tokens the automatic context (scaffold, capsules, retrieved items) may take in all, beyond
    # the budget: the gateway's savings pay for it (None: no such limit)
    allowance: int | None = None
    # ids of candidates whose code is in the conversation already (``core.present``): excluded
    # as ``in_conversation``; kept last, and out of the plan id when empty (``plan_id_for``)
    in_conversation: tuple[str, ...] = ()


# ---- the plan, as clients see it (docs/protocol.md; camelCase on the wire) ---------------------


class PlanItem(msgspec.Struct, frozen=True, gc=False, rename="camel"):
    """Fields in this order may be given positionally (the planner's hot path does)."""

    id: str
    section: Section
    kind: str
    title: str
    path: str | None
    range: Range | None
    symbol: str | None
    tokens: int
    priority: int
    score: float | None
    reason: str
    detail: str | None = None
    pin_id: str | None = None
    atom_id: str | None = None


class SectionUsage(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    name: Section
    budget: int
    used: int
    count: int
    excluded: int


class Totals(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    tokens: int  # everything the prompt costs: items plus framing
    items: int
    excluded: int
    framing: int  # chat-format overhead of the container messages (docs/budget.md)


class PlanEstimator(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    encoding: str
    exact: bool
    calibration: float
    spread: float | None = None
    reports: int = 0


class ContextPlan(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    plan_id: str
    model: str
    mode: Mode
    context_length: int
    max_completion_tokens: int
    safety_buffer: int
    prompt_budget: int
    sections: tuple[SectionUsage, ...]
    included: tuple[PlanItem, ...]
    excluded: tuple[PlanItem, ...]
    totals: Totals
    estimator: PlanEstimator
    retrieval_set_id: str | None
    cluster_id: str | None = None
    notes: tuple[str, ...] = ()


class ContextOverflow(Overflow):
    """The required items alone do not fit the prompt budget: no plan can be made."""

    def __init__(self, required_tokens: int, prompt_budget: int, largest: list[tuple[str, int]]) -> None:
        self.required_tokens = required_tokens
        self.prompt_budget = prompt_budget
        self.over_by = required_tokens - prompt_budget
        self.largest = largest
        biggest = ", ".join(f"{title} ({tokens} tok)" for title, tokens in largest[:3])
        super().__init__(
            f"context overflow: the required items need {required_tokens} tokens but the prompt budget "
            f"is {prompt_budget} ({self.over_by} over). Largest: {biggest}. Shorten the system prompt "
            f"or the latest message, lower max completion tokens, or use a model with a longer context."
        )
