"""The sessions engine's one model resolver: a model from the registry with its estimator
calibrated by the usage clients reported."""

from __future__ import annotations

from dataclasses import dataclass

import msgspec

from ctx_lsp.engine import ResolvedModel
from ctx_lsp.memory.store import UsageStats
from ctx_lsp.sessions.shared import Shared

CALIBRATION_MIN_REPORTS = 3  # fewer measurements than this keep the registry's factor


@dataclass(slots=True)
class Calibration:
    shared: Shared

    def model(self, name: str | None, session: str | None = None) -> tuple[ResolvedModel, UsageStats]:
        """The model (the configured one when ``name`` is None) with its estimator calibrated by
        measured usage, once there is some: the median ratio of actual to raw-estimated input
        tokens over the latest reports, clamped (``core.calibration.factor``); an exact count
        keeps the registry's factor. The stats are the model's, with the last estimate and
        actual of ``session``."""
        model = self.shared.engine.resolve_model(name)
        stats = self.shared.store.usage_stats(model.spec.name, session)
        est = model.estimator
        if stats.reports >= CALIBRATION_MIN_REPORTS and stats.calibration is not None and not est.exact:
            est = msgspec.structs.replace(
                est, calibration=stats.calibration, spread=stats.spread, reports=stats.reports
            )
        elif stats.reports:
            est = msgspec.structs.replace(est, spread=stats.spread, reports=stats.reports)
        else:
            return model, stats
        return ResolvedModel(spec=model.spec, known=model.known, estimator=est, counter=model.counter), stats
