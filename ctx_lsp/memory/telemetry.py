"""Telemetry read back from the store: how good the estimator is, what plans look like.

One record per plan (plan id, retrieval set, budget, section usage, totals, timings) and one
per usage report are written by the engine as it works; this module only summarises them.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

import msgspec

from ctx_lsp.core.calibration import nearest_rank
from ctx_lsp.memory.compaction import FAILURE
from ctx_lsp.memory.store import MemoryStore


@dataclass(frozen=True, slots=True)
class ModelAccuracy:
    model: str
    reports: int
    median_error_pct: float  # (actual − estimate) / actual, signed: positive = we under-counted
    worst_error_pct: float  # the largest absolute error, signed
    median_ratio: float  # actual / estimate


@dataclass(frozen=True, slots=True)
class PlanStats:
    plans: int
    sessions: int
    median_tokens: float
    median_fill_pct: float
    median_plan_ms: float
    p90_plan_ms: float
    median_retrieval_ms: float
    excluded_by_reason: dict[str, int]


def estimator_accuracy(store: MemoryStore) -> list[ModelAccuracy]:
    by_model: dict[str, list[tuple[int, int]]] = {}
    for model, estimate, actual in store.usage_rows():
        by_model.setdefault(model, []).append((estimate, actual))
    out = []
    for model in sorted(by_model):
        rows = [(e, a) for e, a in by_model[model] if a > 0 and e > 0]
        if not rows:
            continue
        errors = [100 * (a - e) / a for e, a in rows]
        worst = max(errors, key=abs)
        out.append(
            ModelAccuracy(
                model=model,
                reports=len(rows),
                median_error_pct=statistics.median(errors),
                worst_error_pct=worst,
                median_ratio=statistics.median(a / e for e, a in rows),
            )
        )
    return out


def plan_stats(store: MemoryStore, session: str | None = None, limit: int = 10_000) -> PlanStats | None:
    rows = store.plan_summaries(session, limit)
    if not rows:
        return None
    tokens, fill, plan_ms, retrieval_ms = [], [], [], []
    reasons: dict[str, int] = {}
    sessions = set()
    for sess, total, budget, timings_json, plan_json in rows:
        sessions.add(sess)
        tokens.append(total)
        fill.append(100 * total / budget if budget else 0.0)
        timings = msgspec.json.decode(timings_json)
        plan_ms.append(timings.get("plan", 0.0))
        retrieval_ms.append(timings.get("retrieval", 0.0))
        for item in msgspec.json.decode(plan_json).get("excluded", []):
            reasons[item["reason"]] = reasons.get(item["reason"], 0) + 1
    plan_ms.sort()
    return PlanStats(
        plans=len(rows),
        sessions=len(sessions),
        median_tokens=statistics.median(tokens),
        median_fill_pct=statistics.median(fill),
        median_plan_ms=statistics.median(plan_ms),
        p90_plan_ms=nearest_rank(plan_ms, 0.9),
        median_retrieval_ms=statistics.median(retrieval_ms),
        excluded_by_reason=dict(sorted(reasons.items())),
    )


@dataclass(frozen=True, slots=True)
class TurnFeedback:
    """What we showed the model in one turn next to what happened."""

    turn: int
    plan_id: str
    cluster: str | None
    query: str
    included: list[str]  # "reason title (tokens)"
    excluded_by_reason: dict[str, int]
    excluded_rag: list[str]  # retrieval candidates left out, with why
    tools: list[str]  # "name: size, outcome"
    estimate: int | None
    actual: int | None
    reflections: list[str]  # "kind item: reason"


def session_feedback(store: MemoryStore, session: str) -> list[TurnFeedback]:
    """The feedback record of a session, turn by turn (the latest plan of each turn)."""
    plans: dict[int, dict] = {}
    for row in store.session_plans(session):
        plans[row["turn"]] = row  # later plans of a turn replace earlier ones
    usage = {plan_id: (est, actual) for plan_id, est, actual in store.session_usage(session)}
    reflections: dict[int, list[str]] = {}
    for r in store.reflections(session):
        undone = " (undone)" if r["undone"] else ""
        reflections.setdefault(r["turn"], []).append(f"{r['kind']} {r['item']}: {r['reason']}{undone}")
    out = []
    for turn in sorted(plans):
        row = plans[turn]
        plan = msgspec.json.decode(row["plan"])
        reasons: dict[str, int] = {}
        for item in plan["excluded"]:
            reasons[item["reason"]] = reasons.get(item["reason"], 0) + 1
        messages = store.turn_messages(session, turn)
        names = {c["id"]: c["name"] for m in messages for c in (m.tool_calls or [])}
        tools = [
            f"{names.get(m.tool_call_id or '', m.name or 'tool')}: {m.bytes or len(m.content):,} bytes, "
            + ("failed" if FAILURE.search(m.content[:2000]) else "ok")
            for m in messages
            if m.role == "tool"
        ]
        est, actual = usage.get(row["id"], (None, None))
        out.append(
            TurnFeedback(
                turn=turn,
                plan_id=row["id"],
                cluster=row["cluster"],
                query=row["query"],
                included=[f"{i['reason']} {i['title']} ({i['tokens']})" for i in plan["included"]],
                excluded_by_reason=dict(sorted(reasons.items())),
                excluded_rag=[
                    f"{i['title']} ({i['tokens']}): {i['reason']}" for i in plan["excluded"] if i["section"] == "rag"
                ],
                tools=tools,
                estimate=est,
                actual=actual,
                reflections=reflections.get(turn, []),
            )
        )
    return out
