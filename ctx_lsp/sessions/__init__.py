"""The sessions engine: the workspace engine plus memory, in rooms — ``pins``, ``conversation``,
``calibration`` (the one model resolver), ``planning`` and ``plans`` (the plan cache, replay,
the dropped ledger), ``compaction``, ``capsules``, ``reflection``, ``usage`` (and the meter),
``exchanges`` (the gateway's requests), ``ledger`` (the gateway's accounting: a typed record per
request, the one price lookup, totals, report, the conversation list), ``code`` (an agent's
questions: a symbol by name, its references, a search within a budget, the context a plan adds)
— composed by ``SessionEngine``.
Faces pass ``values`` in and get ``values``, ``records`` and ``events`` back, and turn them into
their own wire shapes.
"""

from ctx_lsp.sessions.engine import SessionEngine
from ctx_lsp.sessions.shared import DEFAULT_SESSION, NotFound
from ctx_lsp.sessions.values import PinIntent, SessionPlanRequest

__all__ = ["DEFAULT_SESSION", "NotFound", "PinIntent", "SessionEngine", "SessionPlanRequest"]
