"""One author of the budget: every budget — an editor's plan, the gateway's sized around a
client's own prompt — comes from ``Engine.budget``; no other module makes one or sizes shares."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from ctx_lsp.core.budget import ClientPrompt, client_shares
from ctx_lsp.core.items import BudgetSpec, Message, Shares
from ctx_lsp.engine import BudgetOverrides, Engine
from ctx_lsp.sessions.engine import SessionEngine
from ctx_lsp.sessions.exchanges import Exchange

PACKAGE = Path(__file__).resolve().parents[1] / "ctx_lsp"
# what only ``Engine.budget`` calls: a budget made, shares sized around a client's prompt
AUTHORS = {"BudgetSpec": {"engine.py"}, "client_shares": {"engine.py"}}


def _calls(tree: ast.AST) -> set[str]:
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            f = node.func
            names.add(f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else "")
    return names


def test_only_the_engine_makes_a_budget() -> None:
    found: dict[str, set[str]] = {name: set() for name in AUTHORS}
    for path in PACKAGE.rglob("*.py"):
        called = _calls(ast.parse(path.read_text(), str(path)))
        for name in AUTHORS:
            if name in called:
                found[name].add(str(path.relative_to(PACKAGE)))
    assert found == AUTHORS


def test_a_client_prompt_leaves_retrieval_what_the_conversation_does_not_need() -> None:
    shares = Shares()  # rag 0.30 of 10,000: 3,000; a turn's block: 5% of what the system prompt leaves
    searching = ClientPrompt(system=2_000, conversation=7_000, searches=True)
    sized, rag = client_shares(10_000, shares, searching, cap=8_000)
    assert (sized, rag) == (Shares(0.2, 0.8, 0.0), 400)
    full = ClientPrompt(system=2_000, conversation=7_800, searches=True)
    assert client_shares(10_000, shares, full, cap=8_000)[1] == 200
    assert client_shares(10_000, shares, full, cap=150)[1] == 150  # [gateway] context_budget
    kept = ClientPrompt(system=2_000, conversation=1_000, searches=False)  # the turn's block is carried
    assert client_shares(10_000, shares, kept, cap=8_000)[1] == 0
    over = ClientPrompt(system=12_000, conversation=1_000, searches=True)  # a client bigger than the window
    assert client_shares(10_000, shares, over, cap=8_000) == (Shares(1.0, 0.0, 0.0), 0)


def test_the_gateway_plans_under_the_budget_engine_budget_sizes(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # context paid whatever it costs: a new conversation has saved nothing, and would search nothing
    (ws / "ctx.toml").write_text('[gateway]\ncontext_cost = "always"\n')
    engine = Engine(ws)
    asked: list[tuple[BudgetOverrides | None, BudgetSpec]] = []
    one = engine.budget

    def budget(model, overrides=None):  # type: ignore[no-untyped-def]
        spec = one(model, overrides)
        asked.append((overrides, spec))
        return spec

    resolved: list[str | None] = []
    resolve = engine.resolve_model

    def resolve_model(name):  # type: ignore[no-untyped-def]
        resolved.append(name)
        return resolve(name)

    monkeypatch.setattr(engine, "budget", budget)
    sessions = SessionEngine(engine)
    monkeypatch.setattr(engine, "resolve_model", resolve_model)
    try:
        messages = [Message(id="", role="user", content="How is stock reserved in the inventory?")]
        ex = Exchange(session="sized", model="gpt-4o", system="You are an agent. " * 200, messages=messages)
        planned = sessions.plan_exchange(ex).outcome.inputs.budget
    finally:
        sessions.close()
    # the request's model, resolved once and handed to its plan (the conversation's stored counts
    # are the session's model's: a new session's is the configured one, None here)
    assert resolved.count("gpt-4o") == 1 and set(resolved) <= {"gpt-4o", None}
    clients = [(o, spec) for o, spec in asked if o is not None and o.client is not None]
    assert clients and clients[-1][1] == planned  # the plan's budget is the one Engine.budget sized
    client = clients[-1][0].client
    assert client is not None and client.searches and client.system > 0 and client.conversation > 0
    prompt = planned.prompt_budget
    configured = engine.budget(engine.resolve_model("gpt-4o"))
    assert planned.shares == Shares(client.system / prompt, 1 - client.system / prompt, 0.0)
    assert planned.shares != configured.shares
    cap = engine.config.gateway.context_budget
    assert planned.rag_budget == client_shares(prompt, configured.shares, client, cap)[1]
    assert 0 < planned.rag_budget < configured.shares.rag * prompt
