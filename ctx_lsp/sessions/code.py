"""What an agent asks of the code (the MCP face): a symbol by name — or what an ambiguous or
unknown name could mean —, its neighbours in the reference graph, a search within a token
budget, and the context a plan would add to its own prompt. An agent's tool result is read into
its prompt: budgets default small."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ctx_lsp.core.items import Mode
from ctx_lsp.core.render import SEPARATOR, place
from ctx_lsp.engine import BudgetOverrides, CodeSearch, PlanRequest, UserError
from ctx_lsp.sessions.calibration import Calibration
from ctx_lsp.sessions.planning import Planning
from ctx_lsp.sessions.shared import NotFound, Shared
from ctx_lsp.sessions.values import AgentContext, Reference, References, SessionPlanRequest

if TYPE_CHECKING:
    from ctx_lsp.workspace.index import IndexedSymbol

SEARCH_BUDGET = 4_000  # tokens of code a search returns unless asked for more
CONTEXT_BUDGET = 6_000  # tokens of retrieved code in an agent's plan (pins and layout come on top)
REFERENCES = 30  # neighbours listed each way


@dataclass(slots=True)
class Code:
    shared: Shared
    calibration: Calibration
    planning: Planning

    def symbol(self, name: str) -> IndexedSymbol:
        """The symbol a qualified or short name gives — for a C++ header's declaration, its code
        (the name a card gives it: ``juce::BigInteger::BigInteger(uint32)``); NotFound says what
        an ambiguous name could mean (the candidates) or what an unknown one is close to."""
        index = self.shared.engine.index
        found = index.lookup(name)
        if found.symbol is None:
            raise NotFound(found.problem() or f"no symbol {name!r}")
        return index.code_of(found.symbol) or found.symbol

    def pinned(self, session: str, qualname: str) -> str | None:
        """The id of the session's active pin on ``qualname``, if any."""
        record = self.shared.open_session(session)
        return next((p.id for p in self.shared.store.pins(session, record.branch) if p.symbol == qualname), None)

    def references(self, name: str, limit: int = REFERENCES) -> References:
        """The definitions whose code names the symbol (callers) and those its code names
        (callees), heaviest first: the reference graph's edges, by name, not proven calls."""
        sym = self.symbol(name)
        index = self.shared.engine.index
        edges = index.neighbours([sym.qualname], per_seed=limit)
        found = index.get_many({other for _, other, _, _ in edges})
        callers = [Reference(found[o], w) for _, o, rel, w in edges if rel == "called by" and o in found]
        callees = [Reference(found[o], w) for _, o, rel, w in edges if rel == "calls" and o in found]
        return References(symbol=sym, callers=callers, callees=callees)

    def search(self, session: str, query: str, budget: int | None = None) -> CodeSearch:
        """Retrieval for ``query`` within ``budget`` tokens (default SEARCH_BUDGET), ranked with
        the session's pins as graph seeds and counted with its model."""
        record = self.shared.open_session(session)
        model, _ = self.calibration.model(record.model, session)
        seeds = [p.symbol for p in self.shared.store.pins(session, record.branch) if p.symbol]
        budget = SEARCH_BUDGET if budget is None else budget
        return self.shared.engine.search_code(query, budget, model=model, seeds=seeds)

    def context(self, session: str, query: str, budget: int | None = None, mode: Mode | None = None) -> AgentContext:
        """The session's plan for ``query`` with ``budget`` tokens of retrieved code (default
        CONTEXT_BUDGET), kept like an editor's plan, and the context it adds to an agent's own
        prompt: what a plan keeps (pins, the layout, capsules), then what it found for this
        question. The plan's system prompt and conversation are the agent's own business."""
        if budget is not None and budget < 0:
            raise UserError(f"budget must be 0 or more tokens, got {budget}")
        if not query.strip():
            raise UserError("give a query: the question to plan the context for")
        request = PlanRequest(
            query=query,
            mode=mode,
            budget=BudgetOverrides(rag_budget=CONTEXT_BUDGET if budget is None else budget),
        )
        outcome = self.planning.plan(SessionPlanRequest(session=session, request=request))
        placed = place(outcome.result)
        text = SEPARATOR.join(part for part in (placed.stable, placed.per_turn) if part)
        return AgentContext(outcome=outcome, text=text)
