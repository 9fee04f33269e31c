"""Each reply reads its plan back (usage, reflection): with many conversations at once the plan is
still in memory, not rebuilt from the store on the engine's one thread; and a long session keeps
only its latest plans. Real SQLite store, real index."""

from __future__ import annotations

from pathlib import Path

import pytest

from ctx_lsp.engine import Engine, PlanRequest
from ctx_lsp.sessions import plans
from ctx_lsp.sessions.engine import SessionEngine
from ctx_lsp.sessions.values import SessionPlanRequest, Usage


def test_thirty_conversations_at_once_read_their_plans_from_memory(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    sessions = SessionEngine(Engine(ws))
    try:
        made = []
        for i in range(30):  # sub-agents: each asks, then all the replies come back
            ask = PlanRequest(query=f"how is the invoice total computed? case {i}", mode="light")
            made.append((f"agent-{i}", sessions.plan(SessionPlanRequest(session=f"agent-{i}", request=ask))))
        monkeypatch.setattr(plans, "replanned", lambda *a, **k: pytest.fail("a plan rebuilt from the store"))
        for session, outcome in made:
            plan_id = outcome.result.plan.plan_id
            assert sessions.report_usage(session, plan_id, Usage(input_tokens=900, output_tokens=5)).plan_id == plan_id
        # a long session keeps its latest plans only, and an older one is still rebuilt whole
        first = None
        for turn in range(6):
            ask = PlanRequest(query=f"where are discounts applied? turn {turn}", mode="light")
            outcome = sessions.plan(SessionPlanRequest(session="long", request=ask))
            first = first or outcome
        assert len(sessions._plans._outcomes["long"]) == plans.PLANS_PER_SESSION
        monkeypatch.undo()
        again = sessions.outcome("long", first.result.plan.plan_id)
        assert again.result.plan == first.result.plan
    finally:
        sessions.close()


def test_plans_kept_are_bounded_by_the_conversation_they_hold(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Long conversations at once hold a few MB of text each in their plans: past PLANS_BYTES the
    sessions used longest ago go (the latest plan always stays), and an evicted plan is still
    rebuilt whole from the store."""
    monkeypatch.setattr(plans, "PLANS_BYTES", 6_000)
    sessions = SessionEngine(Engine(ws))
    try:
        made = {}
        for i in range(8):
            ask = PlanRequest(query=f"how is the invoice total computed? {'in detail ' * 200} case {i}", mode="light")
            made[f"long-{i}"] = sessions.plan(SessionPlanRequest(session=f"long-{i}", request=ask))
        kept = sessions._plans
        weights = [weight for plans_of in kept._outcomes.values() for _, weight in plans_of.values()]
        assert kept._bytes == sum(weights) and 0 < sum(weights) <= plans.PLANS_BYTES + max(weights)
        assert "long-7" in kept._outcomes and "long-0" not in kept._outcomes
        first = made["long-0"].result.plan
        assert sessions.outcome("long-0", first.plan_id).result.plan == first
    finally:
        sessions.close()
