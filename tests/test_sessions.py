"""The sessions engine without a server: what-if pins agree with real ones, re-plans repeat the
stored request (also one stored by an earlier version)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from ctx_lsp.core.items import ContextPlan
from ctx_lsp.engine import BudgetOverrides, Engine, Focus, PlanRequest
from ctx_lsp.sessions import PinIntent, SessionEngine, SessionPlanRequest
from tests.workspaces import copy_sample

QUERY = "how is the invoice total calculated with tax?"
SYMBOL = "shop.billing.invoice.tax_for"


@pytest.fixture(scope="module")
def core(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SessionEngine]:
    core = SessionEngine(Engine(copy_sample(tmp_path_factory.mktemp("sessions") / "ws")))
    core.engine.refresh_index()
    yield core
    core.close()


def plan(core: SessionEngine, session: str, **kw) -> ContextPlan:
    return core.plan(SessionPlanRequest(session=session, request=PlanRequest(query=QUERY), **kw)).result.plan


@pytest.mark.parametrize("ttl", [2, 0])
def test_a_what_if_sticky_pin_keeps_its_ttl_like_the_real_pin(core: SessionEngine, ttl: int):
    session = f"what-if-{ttl}"
    intent = PinIntent(symbol=SYMBOL, kind="sticky", ttl=ttl)

    def pinned(p) -> tuple[str, str | None]:
        item = next(i for i in (*p.included, *p.excluded) if i.symbol == SYMBOL and i.pin_id)
        return item.reason, item.detail

    what_if = pinned(plan(core, session, dry_run=True, extra_pins=[intent]))
    assert not core.pins(session)
    core.pin(session, intent)
    assert pinned(plan(core, session)) == what_if
    assert f"ttl {ttl}" in (what_if[1] or "")
    assert what_if[0] == ("pinned" if ttl else "ttl_expired")


def test_a_replan_repeats_the_stored_request(core: SessionEngine):
    budget = BudgetOverrides(context_length=9_000, max_completion_tokens=1_000, rag_budget=150)
    request = PlanRequest(query=QUERY, budget=budget, focus=Focus("shop/billing/invoice.py", 3))
    first = core.plan(SessionPlanRequest(session="replan", request=request)).result.plan
    again = core.replan_latest("replan")
    assert again is not None and again.result.plan == first


def test_a_replan_reads_the_options_an_earlier_version_stored(core: SessionEngine):
    first = core.plan(SessionPlanRequest(session="old", request=PlanRequest(query=QUERY)))
    old_options = {"context_length": 9_000, "rag_budget": 150, "focus": {"path": "shop/billing/invoice.py", "line": 3}}
    record = core.open_session("old")
    core.store.save_plan("old", record.branch, record.turn, QUERY, first.inputs, first.result.plan, {}, old_options)
    again = core.replan_latest("old")
    assert again is not None
    p = again.result.plan
    assert p.context_length == 9_000 and next(s for s in p.sections if s.name == "rag").budget == 150
    assert any(i.kind == "focus_hint" and i.path == "shop/billing/invoice.py" for i in p.included)
