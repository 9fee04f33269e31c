"""Usage and the meter: what a model call actually used ends the turn (TTLs tick, the
reflection loop runs, calibration learns); the meter says where the session's budget stands."""

from __future__ import annotations

from dataclasses import dataclass

from ctx_lsp.core.items import EstimatorInfo, PlanEstimator
from ctx_lsp.engine import UserError
from ctx_lsp.memory.store import UsageStats
from ctx_lsp.sessions.calibration import Calibration
from ctx_lsp.sessions.pins import Pins
from ctx_lsp.sessions.plans import Plans
from ctx_lsp.sessions.reflection import Reflections
from ctx_lsp.sessions.shared import Shared
from ctx_lsp.sessions.values import Meter, Usage, UsageReport


@dataclass(slots=True)
class UsageAndMeter:
    shared: Shared
    calibration: Calibration
    plans: Plans
    pins: Pins
    reflections: Reflections

    def report_usage(self, session: str, plan_id: str, usage: Usage) -> UsageReport:
        """The plan's estimate counts the images and documents of the messages it kept the
        provider's way (``core.media``, per message), uncalibrated: the factor is learned from the
        rest, the text, so a screenshot neither moves it nor is scaled by it."""
        shared = self.shared
        shared.require_memory()
        for label, value in (
            ("inputTokens", usage.input_tokens),
            ("outputTokens", usage.output_tokens),
            ("cachedInputTokens", usage.cached_input_tokens),
        ):
            if value < 0:
                raise UserError(f"{label} must be 0 or more, got {value}")
        outcome = self.plans.outcome(session, plan_id)
        model_name = outcome.inputs.model
        before, _ = self.calibration.model(model_name)
        estimate = outcome.result.plan.totals.tokens
        media = sum(c.item.media for c in outcome.result.chosen)
        raw = max(1, round((estimate - media) / outcome.inputs.estimator.calibration))
        shared.store.record_usage(
            plan_id,
            session,
            model_name,
            estimate,
            raw,
            usage.input_tokens,
            usage.cached_input_tokens,
            usage.output_tokens,
            media,
        )
        turn, asked, expired = shared.store.advance_turn(session)
        self.reflections.reflect(session, outcome.result.plan, turn - 1, expired)
        after, _ = self.calibration.model(model_name)
        return UsageReport(
            plan_id=plan_id,
            model=model_name,
            estimate=estimate,
            actual=usage,
            before=before.estimator,
            after=after.estimator,
            turn=turn,
            expired=expired,
            asked=[self.pins.state(p) for p in asked],
        )

    def meter(self, session: str) -> Meter:
        record = self.shared.open_session(session)
        plan_id = self.shared.store.latest_plan_id(session)
        model, stats = self.calibration.model(record.model, session)
        mode = record.mode or self.shared.engine.config.mode
        if plan_id is None:  # no plan yet: the budget a plan would have
            return Meter(
                session=record,
                mode=mode,
                model=model.spec.name,
                budget=self.shared.engine.budget(model),
                used=0,
                sections=(),
                estimator=self._estimator(model.estimator, stats),
                plan_id=None,
                usage=stats,
            )
        outcome = self.plans.outcome(session, plan_id)
        p = outcome.result.plan
        return Meter(
            session=record,
            mode=mode,
            model=p.model,
            budget=outcome.inputs.budget,
            used=p.totals.tokens,
            sections=p.sections,
            estimator=self._estimator(p.estimator, stats),
            plan_id=plan_id,
            usage=stats,
        )

    @staticmethod
    def _estimator(est: EstimatorInfo | PlanEstimator, stats: UsageStats) -> EstimatorInfo:
        """The estimator as a plan used it, with what is measured now: the spread and number of
        the model's usage reports."""
        return EstimatorInfo(
            encoding=est.encoding,
            exact=est.exact,
            calibration=est.calibration,
            spread=stats.spread,
            reports=stats.reports,
        )
