"""What ctx_lsp added to a request and, when it added nothing, why — read from the plan the engine
made for it, never guessed afterwards — and the one-line verdicts ``ctx-lsp stats``, the report
and ``wrap``'s exit line show. Pure."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ctx_lsp.core.items import SCAFFOLD, SYSTEM_PROMPT
from ctx_lsp.core.meter import format_tokens

if TYPE_CHECKING:
    from ctx_lsp.core.items import PlanInput
    from ctx_lsp.core.planner import PlanResult
    from ctx_lsp.core.report import RequestPoint, RunReport
    from ctx_lsp.core.savings import Totals

# Why a request got the context it got (the ``context`` column of ``gateway_requests``).
ADDED = "added"  # the plan injected items (pins, layout, capsules, retrieved code, a summary)
OFF = "off"  # mode off: no automatic context
COST = "cost"  # context_cost = "savings": what this conversation saved so far pays for none yet
FULL = "full"  # the client's own prompt leaves no room in the window
ROOM = "room"  # what was found did not fit the room the client's prompt leaves
NONE = "none"  # nothing in the workspace matched (no layout, no candidate)
SIDE = "side"  # a side request (a title, a quota check): none by rule
UNRECORDED = "unrecorded"  # a request recorded by an earlier version

REASONS = {
    OFF: "mode off",
    COST: 'context_cost = "savings": no savings yet in this conversation to pay for context',
    FULL: "the assistant's own prompt fills the window: no room for context",
    ROOM: "what was found did not fit the room left in the window",
    NONE: "nothing in the workspace matched the question",
    SIDE: "a side request (title, quota check): none by rule",
    UNRECORDED: "not recorded (an earlier version of ctx_lsp)",
}
UNCHANGED = "fits the window, nothing to shrink: forwarded unchanged"
# the same in a word or two, for a status line
SHORT = {OFF: "mode off", COST: "no savings yet", FULL: "window full", ROOM: "no room", NONE: "nothing matched"}
SHORT |= {SIDE: "side request", UNRECORDED: "not recorded"}


def context_note(result: PlanResult, inputs: PlanInput) -> tuple[str, int]:
    """(why, items): what the plan added to the request, as it decided. Items are those of
    ctx_lsp's own blocks — the same the ``injected`` tokens count."""
    added = sum(1 for c in result.chosen if not c.item.messages and c.item.kind != SYSTEM_PROMPT)
    if added:
        return ADDED, added
    if inputs.mode == "off":
        return OFF, 0
    if inputs.allowance == 0:  # nothing automatic paid for yet: not even searched for
        return COST, 0
    automatic = [i for i in result.plan.excluded if i.section == "rag" or i.kind == SCAFFOLD or i.reason == "cost"]
    reasons = {i.reason for i in automatic}
    if "cost" in reasons:
        return COST, 0
    if "budget" in reasons:
        return (FULL if inputs.budget.rag_budget == 0 else ROOM), 0
    return NONE, 0


def why_none(reasons: Mapping[str, int]) -> str:
    """The reasons of requests that got no context, most frequent first, as words."""
    ranked = sorted(reasons.items(), key=lambda kv: (-kv[1], kv[0]))
    if len(ranked) == 1:
        return REASONS.get(ranked[0][0], ranked[0][0])
    return "; ".join(f"{REASONS.get(k, k)} ({n})" for k, n in ranked)


def context_clause(t: Totals) -> str:
    """What was added over requests ``t`` sums, and why not where nothing was: "context added to
    12 of 41 requests", or "no context added: fits the window, nothing to shrink: forwarded
    unchanged; context_cost = …"."""
    if not t.requests:
        return ""
    if t.context_added:
        return f"context added to {t.context_added} of {t.requests} request{'s' if t.requests != 1 else ''}"
    why = why_none(t.no_context) if t.no_context else REASONS[UNRECORDED]
    if t.unchanged == t.requests:
        return f"no context added: {UNCHANGED}; {why}"
    return f"no context added: {why}"


def verdict(runs: int, t: Totals) -> str:
    """The line on top: "3 runs, 41 requests: cost 0.62× direct, provider cache 91%; context
    added to 12 of 41 requests"."""
    head = f"{runs} run{'s' if runs != 1 else ''}, {t.requests} request{'s' if t.requests != 1 else ''}"
    parts = []
    if t.ratio is not None:
        parts.append(f"cost {t.ratio:.2f}× direct")
    elif t.client_tokens:
        parts.append(f"input {t.forwarded_tokens / t.client_tokens:.2f}× what the assistant sent (no prices)")
    if t.input_tokens:
        parts.append(f"provider cache {t.cache_share:.0%}")
    clause = context_clause(t)
    line = f"{head}: {', '.join(parts)}" if parts else head
    return f"{line}; {clause}" if clause else line


def run_label(run: RunReport) -> str:
    """ "2026-11-27 10:02 UTC · Claude Code 2.1.197 · claude-opus-4-8 · 12 requests (+1 side: m)"."""
    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(run.started))
    n = len(run.requests) - run.side_requests
    count = f"{n} request{'s' if n != 1 else ''}"
    if run.side_requests:
        extra = f": {', '.join(run.side_models)}" if run.side_models else ""
        count += f" (+{run.side_requests} side{extra})"
    models = ", ".join(run.models or run.side_models) or "model unknown"
    return " · ".join([when, run.assistant or "assistant unknown", models, count])


def request_context(p: RequestPoint) -> str:
    """What ctx_lsp added to one request: "+ctx 3 items, 1.2k tokens (plan-…)", or why none."""
    if p.context == ADDED:
        items = f"{p.context_items} item{'s' if p.context_items != 1 else ''}, " if p.context_items else ""
        return f"+ctx {items}{format_tokens(p.injected)} tokens" + (f" ({p.plan_id})" if p.plan_id else "")
    return f"+ctx 0: {REASONS.get(p.context, p.context)}"


def context_label(row: Mapping[str, Any]) -> str:
    """A request's +ctx for a status line: "+ctx 3", or "+ctx 0 (no savings yet)"."""
    items = row.get("context_items") or 0
    why = row.get("context") or ("added" if row.get("injected") else UNRECORDED)
    if why == ADDED:
        return f"+ctx {items}" if items else f"+ctx {format_tokens(row.get('injected') or 0)}"
    return f"+ctx 0 ({SHORT.get(why, why)})"
