"""The ctx/ protocol: every params and result type of the custom LSP methods (docs/protocol.md).

msgspec Structs, camelCase on the wire. Handlers call ``decode(params, T)`` at the edge (a
malformed request becomes InvalidParams with the field named) and return ``encode(result)``
(builtins: pygls cannot serialise a Struct), a result built by ``server/convert.py`` from the
engine's values. ``docs/protocol.schema.json`` is generated from this module (``python -m
ctx_lsp.server.protocol``); the clients' types follow it.

Each wire shape is defined once. Engine values that clients see as they are — the plan and its
items, capsules, reflections, suggestions, ledger turns — are listed here as the engine defines
them; where clients know such a shape by another name, a subclass here gives it that name and
adds nothing (``CompactionResult``, ``RenderedPromptResult``, ``BranchResult``, ``EstimatorMeter``).

Longer than most modules on purpose: the whole protocol is read in one place.
"""

from __future__ import annotations

import inspect
import json
import math
import sys
from typing import Annotated, Any, Literal, TypeVar

import msgspec

from ctx_lsp.core.items import ContextPlan, Mode, PinKind, PinPolicy, PlanEstimator, Position, Range
from ctx_lsp.core.render import RenderedPrompt
from ctx_lsp.errors import Invalid
from ctx_lsp.memory.compaction import Compaction
from ctx_lsp.sessions.records import Branch, Capsule, LedgerTurn, Reflection, Suggestion

T = TypeVar("T")

# JSON-RPC error codes: the standard ones (JSON-RPC 2.0), and ours in the server range.
PARSE_ERROR = -32700  # a body that is not JSON, a malformed message header
INVALID_REQUEST = -32600  # not a JSON-RPC message, over the size limit, a second initialize, after shutdown
INVALID_PARAMS = -32602
CONTEXT_OVERFLOW = -32001  # the required items alone do not fit the prompt budget
NOT_FOUND = -32002  # unknown session, plan, pin, message or symbol
NOT_INITIALIZED = -32003  # before initialize (LSP's ServerNotInitialized is -32002: here that is NotFound)
MEMORY_UNAVAILABLE = -32004  # the memory store cannot be read: nothing the user makes can be kept
# JSON's interoperable integer range (RFC 8259 §6): what every client can represent exactly, and
# far beyond any token count, line number or TTL. Larger numbers in params are InvalidParams.
MAX_SAFE_INTEGER = 2**53 - 1


class _P(msgspec.Struct, kw_only=True, rename="camel"):
    """Base of all params/results: camelCase, every field present in results (null when unset),
    unknown fields in params ignored (clients may send more)."""


# ---- shared shapes ----------------------------------------------------------------------------


class TextDocument(_P):
    uri: str


class Focus(_P):
    uri: str
    position: Position | None = None


class ToolCallIn(_P):
    id: str
    name: str | None = None
    arguments: str | dict[str, Any] | None = None
    function: dict[str, Any] | None = None  # OpenAI's {name, arguments} nesting is accepted too
    type: str | None = None


class MessageIn(_P):
    role: Literal["system", "user", "assistant", "tool"]
    content: str | list[Any] | None = None
    id: str | None = None
    tool_calls: list[ToolCallIn] | None = None
    tool_call_id: str | None = None
    name: str | None = None
    usage: dict[str, Any] | None = None


class PinRequest(_P):
    """A pin to apply (``ctx/pinSymbol``) or to imagine (``extraPins`` of a what-if plan)."""

    symbol: str | None = None
    text_document: TextDocument | None = None
    position: Position | None = None
    kind: PinKind = "sticky"
    ttl: int | None = None
    policy: PinPolicy = "automatic"
    priority: int = 0
    lease_scope: Literal["turn", "task"] = "turn"


# ---- requests ---------------------------------------------------------------------------------


class PlanContextParams(_P):
    query: str
    session: str | None = None
    model: str | None = None
    mode: Mode | None = None
    max_completion_tokens: int | None = None
    context_length: int | None = None
    safety_buffer: int | None = None
    rag_budget: int | None = None
    focus: Focus | None = None
    open_files: list[str] | None = None
    dry_run: bool = False
    extra_pins: list[PinRequest] | None = None
    drop_items: list[str] | None = None


class RenderPromptParams(_P):
    session: str | None = None
    plan_id: str | None = None
    format: Literal["openai", "anthropic", "text"] = "openai"


class SessionParams(_P):
    session: str | None = None


class PinSymbolParams(PinRequest):
    session: str | None = None


class UnpinParams(_P):
    pin_id: str
    session: str | None = None


class AppendMessagesParams(_P):
    messages: list[MessageIn]
    session: str | None = None
    branch: str | None = None


class ReportUsageParams(_P):
    plan_id: str
    input_tokens: int
    output_tokens: int
    cached_input_tokens: int = 0
    session: str | None = None


class ListMessagesParams(_P):
    session: str | None = None
    branch: str | None = None
    include_archived: bool = True


class ListExcludedParams(_P):
    session: str | None = None
    plan_id: str | None = None
    turns: int = 5


class ReplayPlanParams(_P):
    plan_id: str


class SetModeParams(_P):
    mode: Mode
    session: str | None = None


class BranchParams(_P):
    from_message_id: str
    session: str | None = None
    name: str | None = None


class CompactParams(_P):
    session: str | None = None
    strategy: Literal["summary", "trim"] = "summary"
    dry_run: bool = False
    summary: str | None = None  # an edited summary (from a dry-run proposal) to apply


class MemoryPolicyParams(_P):
    """Per-session conversation memory: rolling (trim) instead of summarising, and the share of
    the conversation budget at which compaction starts."""

    session: str | None = None
    rolling: bool | None = None
    compaction_threshold: float | None = None


class RefreshCapsulesParams(_P):
    paths: list[str] | None = None


class UndoReflectionParams(_P):
    id: int
    session: str | None = None


class RestoreItemParams(_P):
    """Restore an excluded item of the dropped ledger by pinning it."""

    item_id: str
    session: str | None = None
    plan_id: str | None = None
    kind: PinKind = "sticky"
    ttl: int | None = None


# ---- results ----------------------------------------------------------------------------------


class SectionMeter(_P):
    name: str
    budget: int
    used: int
    count: int


class EstimatorMeter(PlanEstimator, frozen=True):
    pass


class BudgetMeter(_P):
    session: str
    model: str
    mode: Mode
    context_length: int
    prompt_budget: int
    used: int
    percent: float
    sections: list[SectionMeter]
    estimator: EstimatorMeter
    plan_id: str | None = None
    turn: int = 0
    last_estimate: int | None = None
    last_actual: int | None = None
    text: str = ""  # "ctx 41.2k / 120k": clients may show it as is


class Pin(_P):
    id: str
    kind: PinKind
    policy: PinPolicy
    ttl: int | None
    ttl_remaining: int | None
    lease_scope: str
    priority: int
    created_by: str
    title: str
    status: str
    symbol: str | None = None
    uri: str | None = None
    path: str | None = None
    range: Range | None = None
    tokens: int | None = None


class AppendResult(_P):
    appended: int
    messages: int
    budget: BudgetMeter


class UsageReport(_P):
    plan_id: str
    model: str
    estimate: int
    input_tokens: int
    cached_input_tokens: int
    output_tokens: int
    error: int  # actual − estimate
    error_percent: float
    calibration_before: float
    calibration_after: float
    spread: float | None
    reports: int
    turn: int
    expired_pins: list[str]
    ask_repin: list[str]


class RenderedPromptResult(RenderedPrompt):
    pass


class StoredMessageOut(_P):
    id: str
    role: str
    content: str
    turn: int
    parent: str | None = None
    tool_calls: list[dict[str, Any]] | None = None
    tool_call_id: str | None = None
    name: str | None = None
    archived: bool = False
    archived_by: int | None = None


class MessagesResult(_P):
    session: str
    branch: str
    messages: list[StoredMessageOut]


class LedgerResult(_P):
    session: str
    turns: list[LedgerTurn]


class ReplayResult(_P):
    plan_id: str
    identical: bool
    replayed_plan_id: str
    plan: ContextPlan


class CompactionResult(Compaction):
    pass


class MemoryPolicyResult(_P):
    session: str
    rolling: bool
    compaction_threshold: float | None = None


class ModeResult(_P):
    session: str
    mode: Mode


class BranchResult(Branch):
    pass


# ---- notifications ---------------------------------------------------------------------------


class PlanChanged(_P):
    session: str
    plan_id: str
    tokens: int
    prompt_budget: int


class AskRepin(_P):
    session: str
    pins: list[Pin]


class Reflected(_P):
    session: str
    id: int
    turn: int
    kind: str
    item: str
    pin_id: str | None
    reason: str


class CapsulesStale(_P):
    capsules: list[Capsule]
    files: list[str]


class Compacted(_P):
    session: str
    compaction: CompactionResult
    marker: str  # a one-line marker for the client's history view


class GatewayRequest(_P):
    """One assistant request through the gateway (when ``ctx-lsp serve`` runs it)."""

    session: str | None
    model: str | None
    plan_id: str | None
    estimated_input: int | None  # the plan's count of what was sent
    input_tokens: int | None  # what the provider reported
    cached_input_tokens: int | None
    output_tokens: int | None
    client_messages: int
    sent_messages: int
    dropped: int
    masked: int
    injected: int
    added_ms: float
    note: str | None  # why the request went as the client sent it
    prompt_budget: int | None  # of the plan: what the request had to fit
    requests: int  # through the gateway so far
    label: str  # for a status bar: "⇄ 12 · 41.2k/180k · 83% cached"


class NoParams(_P):
    """A method that takes nothing (any params are ignored)."""


class GatewayStatus(_P):
    listening: str | None  # the gateway's base URL, None when this server runs none
    requests: int
    planned: int
    fail_open: int
    review: bool  # requests wait for the editor (review before send)
    active_session: str  # where pins and plans without a session go
    label: str
    cache: str  # the active conversation's prompt cache: "warm 4m12s" (counted over cache_ttl_seconds), "cold", ""
    # When that cache goes cold, in epoch milliseconds (None: cold, or no request yet): a status bar
    # counts down from it, where the "warm 4m12s" snapshot would go stale.
    cache_warm_until: int | None
    # the lifetime the server counts: the providers' default, or the hour the conversation's
    # breakpoints asked for (Anthropic's ``"ttl": "1h"``)
    cache_ttl_seconds: int
    cache_read_price: str  # what a warm cache charges for the repeated prefix, e.g. "half the input price (…)"
    saved: str  # what the active conversation saved so far, cache-weighted against sending direct
    latest: GatewayRequest | None


class GatewayConversation(_P):
    session: str
    title: str  # the first line the user wrote
    model: str | None
    messages: int
    requests: int
    last_activity: float
    active: bool


class ActiveConversationParams(_P):
    session: Annotated[str, msgspec.Meta(min_length=1)]  # "" names no conversation


class PreviewPart(_P):
    role: str
    kind: str  # system | tools | message | context (ctx_lsp's own block)
    text: str
    tokens: int
    injected: bool


class GatewayPreview(_P):
    """The body last sent upstream for a conversation (or about to be sent, under review)."""

    session: str
    plan_id: str | None
    api: str
    model: str
    tokens: int
    time: float
    parts: list[PreviewPart]
    text: str  # the same as a readable document


class GatewayPreviewParams(_P):
    session: str | None = None


class ReviewRequest(_P):
    """A request waits for the editor: answer with ctx/reviewDecision before the timeout."""

    review_id: str
    session: str
    title: str  # the conversation's first user line
    timeout_seconds: float
    preview: GatewayPreview


class ReviewDecisionParams(_P):
    review_id: str
    decision: Literal["send", "cancel", "replan"]


class ReviewDecisionResult(_P):
    review_id: str
    decision: str
    pending: bool  # False: the request was no longer waiting (sent after a timeout, or answered)


class ReviewResolved(_P):
    review_id: str
    outcome: Literal["sent", "cancelled", "timeout"]


REQUESTS: dict[str, tuple[type | None, Any]] = {
    "ctx/gatewayStatus": (NoParams, GatewayStatus),
    "ctx/listConversations": (NoParams, list[GatewayConversation]),
    "ctx/setActiveConversation": (ActiveConversationParams, GatewayStatus),
    "ctx/gatewayPreview": (GatewayPreviewParams, GatewayPreview),
    "ctx/reviewDecision": (ReviewDecisionParams, ReviewDecisionResult),
    "ctx/planContext": (PlanContextParams, ContextPlan),
    "ctx/renderPrompt": (RenderPromptParams, RenderedPromptResult),
    "ctx/showBudget": (SessionParams, BudgetMeter),
    "ctx/pinSymbol": (PinSymbolParams, Pin),
    "ctx/unpin": (UnpinParams, Pin),
    "ctx/listPins": (SessionParams, list[Pin]),
    "ctx/restoreItem": (RestoreItemParams, Pin),
    "ctx/appendMessages": (AppendMessagesParams, AppendResult),
    "ctx/reportUsage": (ReportUsageParams, UsageReport),
    "ctx/listMessages": (ListMessagesParams, MessagesResult),
    "ctx/listExcluded": (ListExcludedParams, LedgerResult),
    "ctx/replayPlan": (ReplayPlanParams, ReplayResult),
    "ctx/setMode": (SetModeParams, ModeResult),
    "ctx/branch": (BranchParams, BranchResult),
    "ctx/compact": (CompactParams, CompactionResult),
    "ctx/setMemoryPolicy": (MemoryPolicyParams, MemoryPolicyResult),
    "ctx/listCapsules": (SessionParams, list[Capsule]),
    "ctx/refreshCapsules": (RefreshCapsulesParams, list[Capsule]),
    "ctx/listSuggestions": (SessionParams, list[Suggestion]),
    "ctx/listReflections": (SessionParams, list[Reflection]),
    "ctx/undoReflection": (UndoReflectionParams, Reflection),
}
NOTIFICATIONS: dict[str, Any] = {
    "ctx/budgetChanged": BudgetMeter,
    "ctx/planChanged": PlanChanged,
    "ctx/askRepin": AskRepin,
    "ctx/capsulesStale": CapsulesStale,
    "ctx/compacted": Compacted,
    "ctx/gatewayRequest": GatewayRequest,
    "ctx/reviewRequest": ReviewRequest,
    "ctx/gatewayStatusChanged": GatewayStatus,
    "ctx/reviewResolved": ReviewResolved,
    "ctx/reflected": Reflected,
}


class ParamsError(Invalid, ValueError):
    """Params that do not match the method's type; the message names the field."""


def to_builtin(obj: Any) -> Any:
    """pygls hands custom-method params over as namedtuples named ``Object``; turn them back
    into plain JSON values (recursively: ``_asdict`` is shallow)."""
    if hasattr(obj, "_asdict"):
        return {k: to_builtin(v) for k, v in obj._asdict().items()}
    if isinstance(obj, list | tuple):
        return [to_builtin(v) for v in obj]
    if isinstance(obj, dict):
        return {k: to_builtin(v) for k, v in obj.items()}
    return obj


def check_numbers(value: Any, path: str = "$") -> None:
    """Every number in params is a finite float or an integer within ±(2**53 − 1); else
    ParamsError naming the field (msgspec alone accepts any Python int, and a 10**30 would only
    fail deep inside, as an internal error)."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return
    if isinstance(value, int):
        if not -MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER:
            digits = len(str(abs(value)))
            shown = str(value) if digits <= 24 else f"an integer of {digits} digits"
            raise ParamsError(
                f"invalid params: {shown} is out of range (integers must be within ±{MAX_SAFE_INTEGER}) - at `{path}`"
            )
    elif isinstance(value, float):
        if not math.isfinite(value):
            raise ParamsError(f"invalid params: {value} is not a finite number - at `{path}`")
    elif isinstance(value, dict):
        for key, item in value.items():
            check_numbers(item, f"{path}.{key}")
    elif isinstance(value, list | tuple):
        for n, item in enumerate(value):
            check_numbers(item, f"{path}[{n}]")


def decode(params: Any, kind: type[T]) -> T:
    raw = to_builtin(params)
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise ParamsError(f"params must be an object, got {type(raw).__name__}")
    check_numbers(raw)
    try:
        return msgspec.convert(raw, kind)
    except msgspec.ValidationError as err:
        raise ParamsError(f"invalid params: {err}") from None


def encode(value: Any) -> Any:
    return msgspec.to_builtins(value)


def json_schema() -> dict[str, Any]:
    """The JSON Schema of every method's params and result, and of every notification."""
    types: list[Any] = []
    for params, result in REQUESTS.values():
        types += [params, result]
    types += list(NOTIFICATIONS.values())
    (schemas, components) = msgspec.json.schema_components(types, ref_template="#/$defs/{name}")
    for component in components.values():  # a docstring's lines as written: msgspec 0.23 dedents them, 0.22 did not
        if "description" in component:
            component["description"] = inspect.cleandoc(component["description"])
    methods = {}
    it = iter(schemas)
    for method in REQUESTS:
        methods[method] = {"params": next(it), "result": next(it)}
    notifications = {method: next(it) for method in NOTIFICATIONS}
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "ctx_lsp protocol",
        "description": "Custom LSP methods of ctx_lsp (see docs/protocol.md). Generated; do not edit.",
        "errors": {
            "ParseError": PARSE_ERROR,
            "InvalidRequest": INVALID_REQUEST,
            "InvalidParams": INVALID_PARAMS,
            "ContextOverflow": CONTEXT_OVERFLOW,
            "NotFound": NOT_FOUND,
            "NotInitialized": NOT_INITIALIZED,
            "MemoryUnavailable": MEMORY_UNAVAILABLE,
        },
        "requests": methods,
        "notifications": notifications,
        "$defs": components,
    }


if __name__ == "__main__":
    json.dump(json_schema(), sys.stdout, indent=2, sort_keys=True)
    sys.stdout.write("\n")
