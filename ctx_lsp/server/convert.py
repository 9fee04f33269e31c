"""Between the wire and the sessions engine: params (URIs, camelCase Structs) into the engine's
requests (workspace-relative paths, its own values), and the engine's values into the protocol's
result and notification Structs. Nothing else builds a reply."""

from __future__ import annotations

import dataclasses
from typing import Any, Protocol, TypeVar

import msgspec
from pygls.exceptions import JsonRpcInvalidParams

from ctx_lsp.core.items import ContextPlan, Position, Range
from ctx_lsp.core.meter import format_tokens
from ctx_lsp.core.planner import PlanResult
from ctx_lsp.core.render import RenderedPrompt
from ctx_lsp.engine import BudgetOverrides, Focus, PlanRequest
from ctx_lsp.gateway.planned import Sent
from ctx_lsp.gateway.preview import Preview
from ctx_lsp.gateway.status import GatewayRecord
from ctx_lsp.memory.compaction import Compaction
from ctx_lsp.memory.store import SessionRecord
from ctx_lsp.server import protocol as P
from ctx_lsp.sessions.events import Compacted, Event
from ctx_lsp.sessions.records import Branch, Capsule, LedgerTurn
from ctx_lsp.sessions.values import Meter, PinIntent, PinState, SessionPlanRequest, Transcript, Usage, UsageReport

T = TypeVar("T")


class Paths(Protocol):
    """How the server maps document URIs to workspace paths and back."""

    def rel(self, uri: str) -> str: ...
    def uri(self, rel: str) -> str: ...
    def open_text(self, uri: str) -> str | None: ...


def wire(value: Any, kind: type[T]) -> T:
    """``value``'s fields of ``kind``, by name (the rest of ``kind`` at its defaults), checked."""
    return msgspec.convert(value, kind, from_attributes=True)


# ---- params → the engine's requests -------------------------------------------------------------


def plan_request(paths: Paths, p: P.PlanContextParams, session: str) -> SessionPlanRequest:
    focus = None
    if p.focus is not None:
        focus = Focus(path=paths.rel(p.focus.uri), line=p.focus.position.line if p.focus.position else None)
    request = PlanRequest(
        query=p.query,
        model=p.model,
        budget=wire(p, BudgetOverrides),
        mode=p.mode,
        focus=focus,
        open_files=[paths.rel(u) for u in p.open_files or []],
    )
    return SessionPlanRequest(
        session=session,
        request=request,
        dry_run=p.dry_run,
        extra_pins=[pin_intent(paths, x) for x in p.extra_pins or []],
        drop_items=list(p.drop_items or []),
        keep_later=True,  # the handler's reply goes first; the meter that follows it flushes
    )


def pin_intent(paths: Paths, req: P.PinRequest) -> PinIntent:
    """The pin a request asks for: its symbol, or its document (the buffer's text when open)
    and position."""
    path = text = None
    line = character = None
    if req.text_document is not None:
        path = paths.rel(req.text_document.uri)
        text = paths.open_text(req.text_document.uri)
    if req.position is not None:
        line, character = req.position.line, req.position.character
    if req.symbol is None and (path is None or line is None):
        raise JsonRpcInvalidParams("give either 'symbol' (a qualified name) or 'textDocument' and 'position'")
    return dataclasses.replace(wire(req, PinIntent), path=path, line=line, character=character, text=text)


def messages_in(p: P.AppendMessagesParams) -> list[dict[str, Any]]:
    """Messages as the engine parses them: the fields the client sent."""
    return [{k: v for k, v in P.encode(m).items() if v is not None} for m in p.messages]


def usage(p: P.ReportUsageParams) -> Usage:
    return wire(p, Usage)


# ---- the engine's values → results ---------------------------------------------------------------


def pin(paths: Paths, state: PinState) -> P.Pin:
    p = state.record
    rng = None
    if p.start_line is not None and p.end_line is not None:
        rng = Range(Position(p.start_line, 0), Position(p.end_line, 0))
    uri = paths.uri(p.path) if p.path else None
    return msgspec.structs.replace(wire(p, P.Pin), uri=uri, range=rng, tokens=state.tokens)


def meter(m: Meter) -> P.BudgetMeter:
    budget = m.budget.prompt_budget
    return P.BudgetMeter(
        session=m.session.id,
        model=m.model,
        mode=m.mode,
        context_length=m.budget.context_length,
        prompt_budget=budget,
        used=m.used,
        percent=round(100 * m.used / budget, 1) if budget > 0 else 0.0,
        sections=[wire(s, P.SectionMeter) for s in m.sections],
        estimator=wire(m.estimator, P.EstimatorMeter),
        plan_id=m.plan_id,
        turn=m.session.turn,
        last_estimate=m.usage.last_estimate,
        last_actual=m.usage.last_actual,
        text=f"ctx {format_tokens(m.used)} / {format_tokens(budget)}",
    )


def usage_report(r: UsageReport) -> P.UsageReport:
    return P.UsageReport(
        plan_id=r.plan_id,
        model=r.model,
        estimate=r.estimate,
        input_tokens=r.actual.input_tokens,
        cached_input_tokens=r.actual.cached_input_tokens,
        output_tokens=r.actual.output_tokens,
        error=r.error,
        error_percent=r.error_percent,
        calibration_before=r.before.calibration,
        calibration_after=r.after.calibration,
        spread=r.after.spread,
        reports=r.after.reports,
        turn=r.turn,
        expired_pins=[p.id for p in r.expired],
        ask_repin=[p.record.id for p in r.asked],
    )


def transcript(t: Transcript, include_archived: bool) -> P.MessagesResult:
    out = [
        msgspec.structs.replace(wire(m, P.StoredMessageOut), archived=m.archived_by is not None)
        for m in t.messages
        if include_archived or m.archived_by is None
    ]
    return P.MessagesResult(session=t.session, branch=t.branch, messages=out)


def ledger(session: str, turns: list[LedgerTurn]) -> P.LedgerResult:
    return P.LedgerResult(session=session, turns=turns)


def replay(plan_id: str, identical: bool, result: PlanResult) -> P.ReplayResult:
    replayed = result.plan
    return P.ReplayResult(plan_id=plan_id, identical=identical, replayed_plan_id=replayed.plan_id, plan=replayed)


def rendered(prompt: RenderedPrompt) -> P.RenderedPromptResult:
    return wire(prompt, P.RenderedPromptResult)


def compaction(c: Compaction) -> P.CompactionResult:
    return wire(c, P.CompactionResult)


def branch(b: Branch) -> P.BranchResult:
    return wire(b, P.BranchResult)


def mode(session: str, value: P.Mode) -> P.ModeResult:
    return P.ModeResult(session=session, mode=value)


def memory_policy(record: SessionRecord) -> P.MemoryPolicyResult:
    return P.MemoryPolicyResult(
        session=record.id, rolling=record.rolling, compaction_threshold=record.compaction_threshold
    )


# ---- notifications ------------------------------------------------------------------------------


def plan_changed(session: str, plan: ContextPlan) -> P.PlanChanged:
    return P.PlanChanged(
        session=session, plan_id=plan.plan_id, tokens=plan.totals.tokens, prompt_budget=plan.prompt_budget
    )


def gateway_request(r: GatewayRecord) -> P.GatewayRequest:
    return P.GatewayRequest(
        session=r.session,
        model=r.model,
        plan_id=r.plan_id,
        estimated_input=r.estimated_input,
        input_tokens=r.input_tokens,
        cached_input_tokens=r.cached_input_tokens,
        output_tokens=r.output_tokens,
        client_messages=r.client_messages,
        sent_messages=r.sent_messages,
        dropped=r.dropped,
        masked=r.masked,
        injected=r.injected,
        added_ms=r.added_ms,
        note=r.note,
        prompt_budget=r.prompt_budget,
        requests=r.requests,
        label=r.label(),
    )


def gateway_preview(session: str, sent: Sent, preview: Preview) -> P.GatewayPreview:
    return P.GatewayPreview(
        session=session,
        plan_id=sent.plan_id,
        api=preview.api,
        model=preview.model,
        tokens=preview.tokens,
        time=sent.time,
        parts=[wire(p, P.PreviewPart) for p in preview.parts],
        text=preview.text(),
    )


def compacted(session: str, c: Compaction) -> P.Compacted:
    marker = (
        f"── compaction #{c.number}: {len(c.archived_ids)} messages summarised "
        f"({c.tokens_before:,} → {c.tokens_after:,} tokens, {c.summarizer}) ──"
    )
    return P.Compacted(session=session, compaction=compaction(c), marker=marker)


def ask_repin(paths: Paths, session: str, pins: list[PinState]) -> P.AskRepin:
    return P.AskRepin(session=session, pins=[pin(paths, x) for x in pins])


def capsules_stale(capsules: list[Capsule], files: list[str]) -> P.CapsulesStale:
    return P.CapsulesStale(capsules=capsules, files=files)


def event(e: Event) -> tuple[str, Any]:
    """An engine event as the notification that tells clients."""
    if isinstance(e, Compacted):
        return "ctx/compacted", compacted(e.session, e.compaction)
    r = e.reflection
    return "ctx/reflected", P.Reflected(
        session=e.session, id=r.id, turn=r.turn, kind=r.kind, item=r.item, pin_id=r.pin_id, reason=r.reason
    )
