"""A plan for a session: the engine's request filled in from memory — the conversation window,
the compaction summary, older history, pins (and what-if pins), capsules, activation and the
query's task — planned under one budget, and kept unless it is a what-if."""

from __future__ import annotations

import time
from dataclasses import dataclass, replace

import msgspec

from ctx_lsp.core.planner import plan
from ctx_lsp.engine import PlanOutcome, SessionContext
from ctx_lsp.sessions.calibration import Calibration
from ctx_lsp.sessions.capsules import Capsules
from ctx_lsp.sessions.compaction import Compactions
from ctx_lsp.sessions.conversation import Conversation
from ctx_lsp.sessions.pins import Pins
from ctx_lsp.sessions.plans import Plans
from ctx_lsp.sessions.reflection import Reflections
from ctx_lsp.sessions.shared import Shared
from ctx_lsp.sessions.values import PlanOptions, SessionPlanRequest


@dataclass(slots=True)
class Planning:
    shared: Shared
    calibration: Calibration
    conversation: Conversation
    compactions: Compactions
    pins: Pins
    capsules: Capsules
    reflections: Reflections
    plans: Plans

    def plan(self, req: SessionPlanRequest) -> PlanOutcome:
        shared, store, engine = self.shared, self.shared.store, self.shared.engine
        record = shared.open_session(req.session)
        ask = req.request
        model_name = ask.model or record.model
        model = req.model or self.calibration.model(model_name)[0]
        budget = engine.budget(model, ask.budget)
        cal = model.estimator.calibration
        notes: list[str] = []
        archived, active = store.path_parts(req.session, record.branch)
        sizes = self.conversation.sizes(req.session, active, model.counter)
        compacted = (
            not req.dry_run
            and not record.rolling
            and self.compactions.maybe_compact(
                record,
                model,
                budget,
                (archived, active),
                sizes,
                ask.query_in_conversation,
                force=req.compact,
                cache_ttl=req.cache_ttl,
                carried=req.carried_tokens,
            )
        )
        if compacted:
            archived, active = store.path_parts(req.session, record.branch)
        cluster_id = self.reflections.cluster_for(record, ask.query, persist=not req.dry_run)
        conversation, sizes, skipped = self.conversation.window(
            req.session, active, sizes, ask.query, model, budget, ask.query_in_conversation
        )
        if skipped:
            notes.append(
                f"{skipped} older messages are outside any window this budget allows: not read for this plan "
                "(they stay in the session: ctx/listMessages)"
            )
        summary = self.compactions.summary_for(req.session, archived)
        pins = self.pins.pinned_items(record, req.extra_pins, cal, notes)
        drop = set(req.drop_items)
        if drop:
            pins = [p for p in pins if p.item.id not in drop and p.pin.pin_id not in drop]
        filled = replace(ask, model=model_name, mode=ask.mode or record.mode)
        memory = SessionContext(
            extra_pins=pins,
            conversation=conversation,
            sizes=sizes,
            summary=summary["summary"] if summary else None,
            capsules=self.capsules.items(model),
            history=self.conversation.history(req.session, archived),
            activation={k: (a.score, a.detail()) for k, a in self.reflections.activation(req.session).items()},
            cluster_id=cluster_id,
        )
        inputs, counter, timings = engine.build_inputs(filled, memory, req.carried, model=model, budget=budget)
        if drop:
            inputs = msgspec.structs.replace(inputs, candidates=tuple(c for c in inputs.candidates if c.id not in drop))
        if notes:
            inputs = msgspec.structs.replace(inputs, notes=inputs.notes + tuple(notes))
        t0 = time.perf_counter()
        result = plan(inputs)
        timings["plan"] = (time.perf_counter() - t0) * 1000
        outcome = PlanOutcome(result=result, inputs=inputs, counter=counter, timings_ms=timings)
        if not req.dry_run:
            loaded = frozenset(i for i, size in sizes.items() if size.loaded)
            self.plans.keep(record, ask.query, PlanOptions.of(ask, budget), outcome, loaded, later=req.keep_later)
            if model_name and model_name != record.model:
                store.set_model(req.session, model_name)
        return outcome

    def replan_latest(self, session: str) -> PlanOutcome | None:
        """Ask the session's latest question again, the same way (after a pin, a mode change, new
        messages): the meter and the tree then show the new state."""
        latest = self.plans.latest(session)
        if latest is None:
            return None
        query, options = latest
        return self.plan(SessionPlanRequest(session=session, request=options.request(query)))
