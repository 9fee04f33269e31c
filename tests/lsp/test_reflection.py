"""Reflection over LSP: a scripted 30-turn session where the model keeps naming one function."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

from pytest_lsp import ClientServerConfig, LanguageClient

from tests.lsp.conftest import server_command, start
from tests.lsp.test_server import req
from tests.workspaces import copy_sample

TARGET = "shop.billing.invoice.calculate_invoice_total"


def script() -> list[tuple[str, str]]:
    """(user question, assistant reply) per turn: 20 turns on invoices, then 10 on storage."""
    turns = []
    for k in range(20):
        reply = f"Step {k}: calculate_invoice_total sums the lines, then applies the discount and the tax."
        if k == 5:
            reply += "\n```ctx-suggest\n- shop.config.TAX_RATE  # the rate every total uses\n- shop/storage.py\n```"
        turns.append((f"how is the invoice total computed with discounts and tax, step {k}?", reply))
    for k in range(10):
        turns.append(
            (
                f"where does the warehouse keep stock records on disk, part {k}?",
                f"Part {k}: StockRepository writes JSON files under the data directory.",
            ),
        )
    return turns


async def run_session(client: LanguageClient, session: str) -> list[dict]:
    seen = []
    for k, (question, reply) in enumerate(script()):
        await req(
            client,
            "ctx/appendMessages",
            {"session": session, "messages": [{"id": f"u{k}", "role": "user", "content": question}]},
        )
        plan = await req(client, "ctx/planContext", {"session": session, "query": question, "ragBudget": 400})
        await req(
            client,
            "ctx/appendMessages",
            {"session": session, "messages": [{"id": f"a{k}", "role": "assistant", "content": reply}]},
        )
        await req(
            client,
            "ctx/reportUsage",
            {"session": session, "planId": plan.planId, "inputTokens": plan.totals.tokens, "outputTokens": 40},
        )
        pins = await req(client, "ctx/listPins", {"session": session})
        target = next((i for i in plan.included if i.symbol == TARGET), None)
        seen.append(
            {
                "planId": plan.planId,
                "cluster": plan.clusterId,
                "detail": target.detail if target else None,
                "reason": target.reason if target else None,
                "pins": sorted((p.symbol, p.kind, p.createdBy, p.ttlRemaining) for p in pins),
            }
        )
    return seen


async def test_activation_promotion_renewal_task_expiry_suggestions_and_report(tmp_path: Path):
    root = tmp_path / "ws"
    copy_sample(root)
    client: LanguageClient = await ClientServerConfig(server_command=server_command()).start()
    await start(client, root, session="reflect")
    try:
        seen = await run_session(client, "reflect")
        # the query cluster changes once, when the conversation moves to storage
        clusters = [s["cluster"] for s in seen]
        assert clusters[0] == clusters[19] != clusters[20] == clusters[29]
        # activation rises and is explained in the item's detail
        assert "activation" in (seen[1]["detail"] or "")
        # promoted to a lease by turn 3, then renewed while used: the lease never runs out on invoices
        auto = [i for i, s in enumerate(seen) if (TARGET, "leased", "auto", 4) in s["pins"]]
        assert auto and auto[0] <= 3
        assert all(any(p[0] == TARGET for p in s["pins"]) for s in seen[auto[0] : 20])
        assert seen[10]["reason"] == "pinned"
        # after the move to another task the task-scoped lease is gone
        assert not any(p[0] == TARGET for p in seen[21]["pins"])
        reflections = await req(client, "ctx/listReflections", {"session": "reflect"})
        kinds = [(r.kind, r.item) for r in reflections]
        assert ("promote", TARGET) in kinds and ("renew", TARGET) in kinds and ("demote", TARGET) in kinds
        demote = next(r for r in reflections if r.kind == "demote" and r.item == TARGET)
        assert "moved from task" in demote.reason
        promote = next(r for r in reflections if r.kind == "promote")
        assert "activation" in promote.reason and "model mentions" in promote.reason
        # ctx-suggest: suggestions, not pins
        suggestions = await req(client, "ctx/listSuggestions", {"session": "reflect"})
        assert {s.item for s in suggestions} == {"shop.config.TAX_RATE", "shop.storage"}
        assert "shop.config.TAX_RATE" not in {p[0] for s in seen for p in s["pins"]}
        await asyncio.sleep(0.1)
        assert any(m == "ctx/reflected" for m, _ in client.notifications)
        # undo a promotion: the automatic pin goes
        undone = await req(client, "ctx/undoReflection", {"session": "reflect", "id": promote.id})
        assert undone.undone
    finally:
        await client.shutdown_session()
    # determinism: the same session replayed on a fresh copy gives the same plans and scores
    copy = tmp_path / "again" / "ws"  # the same name: the system prompt names the workspace
    copy_sample(copy)
    second: LanguageClient = await ClientServerConfig(server_command=server_command()).start()
    await start(second, copy, session="reflect")
    try:
        again = await run_session(second, "reflect")
    finally:
        await second.shutdown_session()
    assert [s["planId"] for s in again] == [s["planId"] for s in seen]
    assert [s["detail"] for s in again] == [s["detail"] for s in seen]
    report = subprocess.run(
        [sys.executable, "-m", "ctx_lsp", "report", str(root), "--session", "reflect"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert report.returncode == 0, report.stderr
    assert f"promote {TARGET}" in report.stdout and "moved from task" in report.stdout
    assert "turn 0" in report.stdout and "estimate" in report.stdout
