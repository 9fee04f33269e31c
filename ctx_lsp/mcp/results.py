"""What the tools return: pydantic models (each tool's output schema and structured content) built
from the sessions engine's values, and the readable text an agent reads next to them. Lines are
1-based and inclusive, as an agent cites them (``path:line``); paths are workspace-relative."""

from __future__ import annotations

from collections import Counter
from typing import Literal, get_args

from pydantic import BaseModel, Field

from ctx_lsp.core.items import SYMBOL_BODY, SYMBOL_CARD, ExcludedReason, IncludedReason, Item, PlanItem
from ctx_lsp.core.meter import format_tokens
from ctx_lsp.engine import CodeSearch
from ctx_lsp.sessions.records import Capsule
from ctx_lsp.sessions.values import AgentContext, Meter, PinState, Reference, References
from ctx_lsp.workspace.index import IndexedSymbol
from ctx_lsp.workspace.languages import comment_mark, kind_label

EXCLUDED_LISTED = 40  # excluded items a plan summary lists (all are counted by reason)


class SymbolResult(BaseModel):
    """A symbol and its code."""

    qualname: str = Field(description="qualified name: module path plus the name, e.g. shop.inventory.Inventory")
    kind: str = Field(description="module, class, function, method or variable")
    path: str = Field(description="workspace-relative path of its file")
    start_line: int = Field(description="first line (1-based; decorators included)")
    end_line: int = Field(description="last line (1-based, inclusive)")
    signature: str = Field(description="the def or class line(s), empty for a variable or module")
    docstring: str
    code: str = Field(description="its source as indexed (secrets masked); for a module, its card")
    tokens: int = Field(description="tokens of the code")
    pin_id: str | None = Field(description="the session's pin on it, if pinned")
    note: str | None = Field(default=None, description="what to know about the code shown")


class ExpandResult(BaseModel):
    """A tool output the gateway shortened, whole or in part."""

    id: str = Field(description="the id the shortened output named")
    kind: str = Field(description="what it was recognised as: test_log, search, vcs, json, command")
    text: str = Field(description="the output as the tool produced it, or the part asked for")
    tokens: int = Field(description="the whole output's tokens")
    total_lines: int = Field(description="the whole output's lines")
    matches: int | None = Field(default=None, description="with match: how many lines matched")


class SearchItem(BaseModel):
    """One retrieved item: whole, never truncated."""

    symbol: str | None = Field(description="qualified name of the symbol shown")
    form: Literal["body", "card", "excerpt", "other"] = Field(
        description="body: the whole code; card: signature, docstring and first lines; excerpt: lines of a long body"
    )
    title: str
    path: str | None
    start_line: int | None = Field(description="1-based")
    end_line: int | None = Field(description="1-based, inclusive")
    tokens: int
    score: float | None
    why: str | None = Field(description="why retrieval chose it: the matches, boosts and graph relations")
    text: str


class SearchResult(BaseModel):
    """Ranked code for a query, best first, within a token budget."""

    query: str
    budget: int
    used: int = Field(description="tokens of the items returned")
    items: list[SearchItem]
    left_out: int = Field(description="ranked items that did not fit the budget")
    ranked: int = Field(description="symbols retrieval ranked for the query")


class SectionSummary(BaseModel):
    name: str
    budget: int
    used: int
    count: int
    excluded: int


# the planner's own lists, so a reason it adds is named here too
REASONS = f"included: {', '.join(get_args(IncludedReason))}; excluded: {', '.join(get_args(ExcludedReason))}"


class PlanEntry(BaseModel):
    """An item of the plan, included or excluded, with the reason."""

    title: str
    kind: str
    section: str
    tokens: int
    reason: str = Field(
        description=REASONS,
    )
    symbol: str | None = None
    path: str | None = None
    start_line: int | None = Field(default=None, description="1-based")
    end_line: int | None = Field(default=None, description="1-based, inclusive")
    pin_id: str | None = None
    detail: str | None = None


class ContextResult(BaseModel):
    """A plan for a question: the context it adds to a prompt, and why each item is in or out."""

    plan_id: str
    model: str
    mode: str
    prompt_budget: int
    tokens: int = Field(description="what the whole plan costs (the plan's own system prompt and question included)")
    context_tokens: int = Field(description="tokens of the context items (pins, layout, capsules, retrieved code)")
    sections: list[SectionSummary]
    included: list[PlanEntry]
    excluded: list[PlanEntry] = Field(description=f"the first {EXCLUDED_LISTED} excluded items")
    excluded_total: int
    excluded_by_reason: dict[str, int]
    notes: list[str]
    context: str = Field(description="the rendered context: what the plan keeps, then what it found for the question")


class PinResult(BaseModel):
    """A pin of the session."""

    id: str = Field(description="the pin's id (unpin takes it)")
    symbol: str | None
    title: str
    kind: str = Field(description="sticky, leased or ephemeral")
    policy: str = Field(description="automatic, ask or unlimited: what happens when the TTL runs out")
    ttl: int | None = Field(description="turns it was pinned for (null: no TTL)")
    ttl_remaining: int | None
    status: str = Field(description="active, grace, expired or removed")
    path: str | None
    start_line: int | None = Field(description="1-based")
    end_line: int | None = Field(description="1-based, inclusive")
    tokens: int | None = Field(description="what its code costs in a prompt now (null: no longer in the workspace)")
    created_by: str = Field(description="user (an editor), agent (this server), auto (reflection)")


class PinsResult(BaseModel):
    session: str
    pins: list[PinResult]


class SectionMeter(BaseModel):
    name: str
    budget: int
    used: int
    count: int


class BudgetResult(BaseModel):
    """The session's budget meter: its latest plan's numbers, or the budget a plan would have."""

    session: str
    model: str
    mode: str
    context_length: int
    prompt_budget: int
    used: int
    percent: float
    sections: list[SectionMeter]
    encoding: str
    exact: bool = Field(description="whether the token counts are the model's own")
    calibration: float = Field(description="the factor estimates are scaled by")
    plan_id: str | None
    turn: int
    text: str


class CapsuleResult(BaseModel):
    path: str
    module: str
    source: str = Field(description="extracted or llm")
    confidence: float
    stale: bool = Field(description="its module changed since it was made")
    text: str


class CapsulesResult(BaseModel):
    """Module summaries: orientation aids, never ground truth."""

    capsules: list[CapsuleResult]


class Neighbour(BaseModel):
    qualname: str
    kind: str
    path: str
    start_line: int = Field(description="1-based")
    weight: int = Field(description="times one names the other")


class ReferencesResult(BaseModel):
    """Callers and callees from the reference graph (by name, not proven calls), heaviest first."""

    qualname: str
    kind: str
    path: str
    start_line: int
    callers: list[Neighbour] = Field(description="definitions whose code names it")
    callees: list[Neighbour] = Field(description="definitions its code names")


# ---- the engine's values → results (and their text) ------------------------------------------------


def _where(path: str | None, start: int | None, end: int | None) -> str:
    if path is None:
        return ""
    if start is None:
        return path
    return f"{path}:{start}" if end in (None, start) else f"{path}:{start}-{end}"


def symbol(sym: IndexedSymbol, pin_id: str | None) -> tuple[SymbolResult, str]:
    module = sym.kind == "module"
    out = SymbolResult(
        qualname=sym.qualname,
        kind=sym.kind,
        path=sym.path,
        start_line=sym.start_line + 1,
        end_line=sym.end_line + 1,
        signature=sym.signature,
        docstring=sym.docstring,
        code=sym.card.rstrip() if module else sym.body.rstrip(),
        tokens=sym.card_tokens if module else sym.body_tokens,
        pin_id=pin_id,
        note="a module: its card (docstring and outline); read the file for its whole text" if module else None,
    )
    where = _where(out.path, out.start_line, out.end_line)
    head = (
        f"{comment_mark(out.path)} {where} · {kind_label(sym.kind, sym.signature)} {sym.qualname} · {out.tokens} tokens"
    )
    if pin_id:
        head += f" · pinned ({pin_id})"
    return out, f"{head}\n{out.code}" + (f"\n({out.note})" if out.note else "")


_FORMS = {SYMBOL_BODY: "body", SYMBOL_CARD: "card", "touchpoint": "excerpt"}


def _search_item(item: Item) -> SearchItem:
    rng = item.range
    return SearchItem(
        symbol=item.symbol,
        form=_FORMS.get(item.kind, "other"),  # type: ignore[arg-type]
        title=item.title,
        path=item.path,
        start_line=rng.start.line + 1 if rng else None,
        end_line=rng.end.line + 1 if rng else None,
        tokens=item.tokens,
        score=item.score,
        why=item.why,
        text=item.text,
    )


def search(found: CodeSearch) -> tuple[SearchResult, str]:
    out = SearchResult(
        query=found.query,
        budget=found.budget,
        used=found.used,
        items=[_search_item(i) for i in found.items],
        left_out=found.left_out,
        ranked=found.ranked,
    )
    head = f"search {found.query!r}: {len(out.items)} items, {out.used} / {out.budget} tokens"
    if out.left_out:
        head += f"; {out.left_out} more ranked items did not fit (raise budget to see more)"
    if not out.items:
        head += " — nothing matched: try other words, or a name (get_symbol)"
    parts = [head]
    for i in out.items:
        score = f" · score {i.score:.2f}" if i.score is not None else ""
        title = i.title if i.title.endswith(")") else f"{i.title} ({i.form})"
        parts.append(f"## {title}{score} · {i.tokens} tokens\nwhy: {i.why or '-'}\n{i.text}")
    return out, "\n\n".join(parts)


def _entry(p: PlanItem) -> PlanEntry:
    rng = p.range
    return PlanEntry(
        title=p.title,
        kind=p.kind,
        section=p.section,
        tokens=p.tokens,
        reason=p.reason,
        symbol=p.symbol,
        path=p.path,
        start_line=rng.start.line + 1 if rng else None,
        end_line=rng.end.line + 1 if rng else None,
        pin_id=p.pin_id,
        detail=p.detail,
    )


_PLAN_OWN = ("system_prompt", "message", "tool_episode", "compaction_summary")  # not in the agent's context


def context(ctx: AgentContext) -> tuple[ContextResult, str]:
    plan = ctx.outcome.result.plan
    by_reason = Counter(p.reason for p in plan.excluded)
    included = [_entry(p) for p in plan.included]
    out = ContextResult(
        plan_id=plan.plan_id,
        model=plan.model,
        mode=plan.mode,
        prompt_budget=plan.prompt_budget,
        tokens=plan.totals.tokens,
        context_tokens=sum(e.tokens for e in included if e.kind not in _PLAN_OWN),
        sections=[SectionSummary(**{f: getattr(s, f) for f in SectionSummary.model_fields}) for s in plan.sections],
        included=included,
        excluded=[_entry(p) for p in plan.excluded[:EXCLUDED_LISTED]],
        excluded_total=len(plan.excluded),
        excluded_by_reason=dict(sorted(by_reason.items())),
        notes=list(plan.notes),
        context=ctx.text,
    )
    lines = [
        f"plan {out.plan_id} · {out.model} · mode {out.mode} · {format_tokens(out.tokens)} / "
        f"{format_tokens(out.prompt_budget)} tokens · context {out.context_tokens} tokens",
        "included: " + "; ".join(f"{e.title} ({e.reason}, {e.tokens})" for e in included if e.kind not in _PLAN_OWN),
    ]
    if out.excluded_total:
        reasons = ", ".join(f"{n} {r}" for r, n in out.excluded_by_reason.items())
        lines.append(f"excluded {out.excluded_total}: {reasons}")
    lines += [f"note: {n}" for n in out.notes]
    return out, "\n".join(lines) + "\n\n" + (ctx.text or "(no context: nothing pinned, nothing retrieved)")


def pin(state: PinState) -> PinResult:
    p = state.record
    return PinResult(
        id=p.id,
        symbol=p.symbol,
        title=p.title,
        kind=p.kind,
        policy=p.policy,
        ttl=p.ttl,
        ttl_remaining=p.ttl_remaining,
        status=p.status,
        path=p.path,
        start_line=p.start_line + 1 if p.start_line is not None else None,
        end_line=p.end_line + 1 if p.end_line is not None else None,
        tokens=state.tokens,
        created_by=p.created_by,
    )


def pin_line(p: PinResult) -> str:
    ttl = "no TTL" if p.ttl_remaining is None else f"{p.ttl_remaining} of {p.ttl} turns left, then {p.policy}"
    cost = "gone from the workspace" if p.tokens is None else f"{p.tokens} tokens"
    where = _where(p.path, p.start_line, p.end_line)
    return f"{p.id}: {p.title} · {p.kind} · {ttl} · {cost}" + (f" · {where}" if where else "") + f" [{p.status}]"


def pinned(state: PinState, verb: str) -> tuple[PinResult, str]:
    out = pin(state)
    return out, f"{verb} {pin_line(out)}"


def pins(session: str, states: list[PinState]) -> tuple[PinsResult, str]:
    out = PinsResult(session=session, pins=[pin(s) for s in states])
    if not out.pins:
        return out, f"no pins in session {session!r}: pin keeps a symbol in every plan"
    return out, f"{len(out.pins)} pins in session {session!r}:\n" + "\n".join(pin_line(p) for p in out.pins)


def budget(m: Meter) -> tuple[BudgetResult, str]:
    total = m.budget.prompt_budget
    out = BudgetResult(
        session=m.session.id,
        model=m.model,
        mode=m.mode,
        context_length=m.budget.context_length,
        prompt_budget=total,
        used=m.used,
        percent=round(100 * m.used / total, 1) if total > 0 else 0.0,
        sections=[SectionMeter(name=s.name, budget=s.budget, used=s.used, count=s.count) for s in m.sections],
        encoding=m.estimator.encoding,
        exact=m.estimator.exact,
        calibration=m.estimator.calibration,
        plan_id=m.plan_id,
        turn=m.session.turn,
        text=f"ctx {format_tokens(m.used)} / {format_tokens(total)}",
    )
    est = f"{out.encoding}{'' if out.exact else ' (estimated)'} ×{out.calibration:g}"
    lines = [f"{out.text} ({out.percent}%) · {out.model} · mode {out.mode} · {est} · session {out.session}"]
    lines += [f"  {s.name}: {s.used} / {s.budget} tokens, {s.count} items" for s in out.sections]
    if m.plan_id is None:
        lines.append("  no plan yet: the budget a plan would have")
    return out, "\n".join(lines)


def capsules(found: list[Capsule]) -> tuple[CapsulesResult, str]:
    out = CapsulesResult(
        capsules=[
            CapsuleResult(
                path=c.path, module=c.module, source=c.source, confidence=c.confidence, stale=c.stale, text=c.text
            )
            for c in found
        ]
    )
    if not out.capsules:
        return out, "no capsules"
    parts = [
        f"## {c.module} ({c.path}) · {c.source}, confidence {c.confidence:.1f}"
        + (" · STALE" if c.stale else "")
        + f"\n{c.text}"
        for c in out.capsules
    ]
    return out, "\n\n".join(parts)


def _neighbour(sym: IndexedSymbol, weight: int) -> Neighbour:
    return Neighbour(qualname=sym.qualname, kind=sym.kind, path=sym.path, start_line=sym.start_line + 1, weight=weight)


# How a reference is linked, for an answer an agent might read as "nothing uses it".
UNTYPED = (
    "a call is linked to the nearest definition of its name, without types: a call through a "
    "variable may be linked elsewhere, or not at all when two definitions are as near; "
    "search_code with its name finds the code that mentions it"
)


def references(refs: References) -> tuple[ReferencesResult, str]:
    sym = refs.symbol
    out = ReferencesResult(
        qualname=sym.qualname,
        kind=sym.kind,
        path=sym.path,
        start_line=sym.start_line + 1,
        callers=[_neighbour(r.symbol, r.weight) for r in refs.callers],
        callees=[_neighbour(r.symbol, r.weight) for r in refs.callees],
    )

    def listed(title: str, found: list[Reference]) -> str:
        if not found:
            return f"{title}: none"
        return f"{title}:\n" + "\n".join(
            f"  {r.symbol.qualname} ({kind_label(r.symbol.kind, r.symbol.signature)}, "
            f"{r.symbol.path}:{r.symbol.start_line + 1}) ×{r.weight}"
            for r in found
        )

    head = f"{kind_label(sym.kind, sym.signature)} {sym.qualname} ({sym.path}:{sym.start_line + 1})"
    callers = listed("callers (code that names it)", refs.callers)
    if not refs.callers:  # an agent should not read this as "unused"
        callers += f" found by name ({UNTYPED})"
    return out, "\n".join([head, callers, listed("callees (what its code names)", refs.callees)])
