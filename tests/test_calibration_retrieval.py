"""A new calibration factor does not make retrieval run again: a gateway's usage reports move the
factor after every reply, and retrieval was kept by factor, so each request of an agent loop was
ranked and its symbols read as if never asked (a first-sight plan, ~12 ms on sympy, instead of a
re-plan's ~2). What retrieval keeps is uncalibrated; each plan scales its tokens. Real index,
real tiktoken."""

from __future__ import annotations

from pathlib import Path

import msgspec

from ctx_lsp.config import CtxConfig, ModelOverride
from ctx_lsp.core.tokens import scaled
from ctx_lsp.engine import Engine, PlanRequest
from tests.workspaces import copy_sample


def test_a_plan_under_another_factor_reuses_retrieval_and_scales_its_tokens(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    copy_sample(ws)
    models = (
        ModelOverride(name="plain", context_length=64_000, max_output=4_000),
        ModelOverride(name="counts-more", context_length=64_000, max_output=4_000, calibration=1.37),
    )
    engine = Engine(ws, msgspec.structs.replace(CtxConfig(), models=models))
    engine.refresh_index()
    searches: list[str] = []
    search = engine.index.search
    engine.index.search = lambda q, **kw: searches.append(q) or search(q, **kw)  # type: ignore[method-assign]
    question = "how is the invoice total calculated with the discount?"
    try:
        plain = engine.plan(PlanRequest(query=question, model="plain", mode="light"))
        more = engine.plan(PlanRequest(query=question, model="counts-more", mode="light"))
        assert len(searches) == 1  # the second plan's retrieval was kept, whatever the factor
        assert more.inputs.estimator.calibration == 1.37
        assert "items" not in more.timings_ms and "items" in plain.timings_ms
        code = [c for c in plain.inputs.candidates if c.section == "rag" and c.symbol]
        scaled_code = {c.id: c.tokens for c in more.inputs.candidates if c.section == "rag" and c.symbol}
        assert code and {c.id: scaled(c.tokens, 1.37) for c in code} == scaled_code
        # the same tokens a plan made under that factor from nothing kept counts
        fresh = Engine(ws, msgspec.structs.replace(CtxConfig(), models=models))
        try:
            alone = fresh.plan(PlanRequest(query=question, model="counts-more", mode="light"))
        finally:
            fresh.close()
        assert {c.id: c.tokens for c in alone.inputs.candidates if c.section == "rag" and c.symbol} == scaled_code
        assert alone.result.plan.plan_id == more.result.plan.plan_id
    finally:
        engine.close()
