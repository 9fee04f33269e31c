"""Plans a session made: kept in the store with the inputs that rebuild them and the options
that ask the same question again, the latest ones also in memory; replayed; and their
exclusions, turn by turn (the dropped ledger)."""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

import msgspec

from ctx_lsp.core.items import PlanItem
from ctx_lsp.core.planner import PlanResult, replanned
from ctx_lsp.core.tokens import counter_for
from ctx_lsp.engine import PlanOutcome
from ctx_lsp.memory.store import SessionRecord
from ctx_lsp.sessions.records import LedgerTurn
from ctx_lsp.sessions.shared import NotFound, Shared, found
from ctx_lsp.sessions.values import PlanOptions

# Plans kept in memory: each reply reads its plan back (usage, reflection). Kept per session, the
# latest few of each: with one count for all, 30 conversations at once (sub-agents, parallel tool
# calls) found theirs gone, every reply rebuilding its plan from the store (~5 ms on the engine's
# one thread), while one long session kept 16 plans of its own, each with its conversation.
PLANS_PER_SESSION = 2
SESSIONS_KEPT = 64
PLANS_BYTES = 64 * 1024 * 1024  # the conversation texts they hold, at most (the latest plan stays)
LEDGER_TURNS = 5
LEDGER_PLANS = 200  # stored plans the ledger looks through
RESTORE_TURNS = 50  # turns of the ledger an item to restore is looked for in


class _Excluded(msgspec.Struct):
    excluded: list[PlanItem] = []


class Plans:
    def __init__(self, shared: Shared) -> None:
        self.shared = shared
        # session → its latest plans (id → the outcome and the conversation text it holds, in
        # bytes), the session used last at the end
        self._outcomes: OrderedDict[str, OrderedDict[str, tuple[PlanOutcome, int]]] = OrderedDict()
        self._bytes = 0

    def keep(
        self,
        record: SessionRecord,
        query: str,
        options: PlanOptions | None,
        outcome: PlanOutcome,
        stored: frozenset[str] = frozenset(),
        *,
        later: bool = False,
    ) -> None:
        """Store a plan the session made (and keep it in memory, for the requests that follow).
        ``stored``: the conversation messages the plan shows with their stored text. ``later``:
        written after the reply (see ``SessionPlanRequest.keep_later``)."""
        self._remember(record.id, outcome)
        self.shared.store.save_plan(
            record.id,
            record.branch,
            record.turn,
            query,
            outcome.inputs,
            outcome.result.plan,
            outcome.timings_ms,
            msgspec.to_builtins(options),
            stored,
            later=later,
        )

    def _remember(self, session: str, outcome: PlanOutcome) -> None:
        """Keep ``outcome`` as ``session``'s latest; the oldest go past PLANS_PER_SESSION a
        session, SESSIONS_KEPT sessions or PLANS_BYTES of conversation (30 long conversations at
        once hold a few MB each)."""
        plan_id = outcome.result.plan.plan_id
        kept = self._outcomes.pop(session, None) or OrderedDict()
        self._outcomes[session] = kept
        if plan_id not in kept:
            turns = outcome.inputs.conversation.turns
            weight = sum(len(m.content) for t in turns for a in t.atoms for m in a.messages)
            kept[plan_id] = (outcome, weight)
            self._bytes += weight
        kept.move_to_end(plan_id)
        while len(kept) > PLANS_PER_SESSION:
            self._bytes -= kept.popitem(last=False)[1][1]
        while len(self._outcomes) > SESSIONS_KEPT or (self._bytes > PLANS_BYTES and len(self._outcomes) > 1):
            self._bytes -= sum(weight for _, weight in self._outcomes.popitem(last=False)[1].values())

    def latest(self, session: str) -> tuple[str, PlanOptions] | None:
        """The query and options of the session's latest plan (None before its first)."""
        plan_id = self.shared.store.latest_plan_id(session)
        if plan_id is None:
            return None
        row = self.shared.store.plan_row(plan_id, session)
        return row["query"], PlanOptions.read(row["options"])

    def outcome(self, session: str, plan_id: str | None) -> PlanOutcome:
        """A stored plan (the session's latest when ``plan_id`` is None), rebuilt from its stored
        inputs when it is not in memory."""
        plan_id = plan_id or self.shared.store.latest_plan_id(session)
        if plan_id is None:
            raise NotFound(f"session {session!r} has no plan yet: call ctx/planContext first")
        cached = self._outcomes.get(session, {}).get(plan_id)
        if cached is not None:
            return cached[0]
        row = self._row(plan_id)
        inputs = self.shared.store.plan_inputs(row)
        counter = counter_for(inputs.estimator.encoding)
        outcome = PlanOutcome(result=replanned(inputs, plan_id), inputs=inputs, counter=counter, timings_ms={})
        self._remember(session, outcome)
        return outcome

    def replay(self, plan_id: str) -> tuple[bool, PlanResult]:
        """Rebuild a stored plan from its stored inputs: same id and same bytes?"""
        row = self._row(plan_id)
        result = replanned(self.shared.store.plan_inputs(row), plan_id)
        identical = result.plan.plan_id == plan_id and msgspec.json.encode(result.plan) == row["plan"]
        return identical, result

    def _row(self, plan_id: str) -> dict[str, Any]:
        with found():
            return self.shared.store.plan_row(plan_id)

    def ledger(self, session: str, plan_id: str | None, turns: int = LEDGER_TURNS) -> list[LedgerTurn]:
        """The dropped ledger: excluded items of the session's recent plans, the latest plan of
        each turn (or only ``plan_id``'s)."""
        store = self.shared.store
        self.shared.open_session(session)
        rows = store.plans(session, limit=LEDGER_PLANS)
        if plan_id is not None:
            rows = [r for r in rows if r["id"] == plan_id]
            if not rows:
                raise NotFound(f"no stored plan {plan_id!r} in session {session!r}")
        out: list[LedgerTurn] = []
        seen_turns: set[int] = set()
        for r in rows:
            if r["turn"] in seen_turns:
                continue
            seen_turns.add(r["turn"])
            excluded = msgspec.json.decode(r["plan"], type=_Excluded).excluded
            query = store.plan_row(r["id"], session)["query"]
            out.append(LedgerTurn(plan_id=r["id"], turn=r["turn"], query=query, excluded=excluded))
            if len(out) >= turns:
                break
        return out

    def excluded_item(self, session: str, item_id: str, plan_id: str | None) -> PlanItem:
        """Find an excluded item of the ledger, for restoring it by pinning."""
        for turn in self.ledger(session, plan_id, turns=RESTORE_TURNS):
            for item in turn.excluded:
                if item.id == item_id:
                    return item
        raise NotFound(f"item {item_id!r} is not in the dropped ledger of session {session!r}")
