"""Conversation memory and capsules over LSP: compaction without deletion, previews, rolling
trim, older-history retrieval, and capsules that know when they are stale."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from pygls.exceptions import JsonRpcException
from pytest_lsp import ClientServerConfig, LanguageClient

from tests.lsp.conftest import capsules_stale, save, server_command, start
from tests.lsp.test_server import req

TASK = "Add VAT support to calculate_invoice_total and keep the discount rules working."
SMALL = {"contextLength": 12_000}  # a small window, so that conversation memory has work to do


def turn(k: int, result_tokens: int = 600) -> list[dict]:
    return [
        {
            "id": f"a{k}",
            "role": "assistant",
            "content": f"Step {k}: I'll run the tests.",
            "toolCalls": [{"id": f"call{k}", "name": "run_tests", "arguments": '{"path": "tests/test_invoice.py"}'}],
        },
        {
            "id": f"t{k}",
            "role": "tool",
            "toolCallId": f"call{k}",
            "content": f"run {k}: "
            + ("FAILED test_vat_rounding " if k % 3 == 0 else "ok ")
            + "log line " * result_tokens,
        },
        {"id": f"r{k}", "role": "assistant", "content": f"We decided to keep Invoice.total for step {k}."},
        {"id": f"u{k + 1}", "role": "user", "content": f"Next, part {k + 1}: check the discount rules for tax {k}."},
    ]


async def fresh(ws: Path, session: str, **options) -> LanguageClient:
    client = await ClientServerConfig(server_command=server_command()).start()
    await start(client, ws, session=session, **options)
    return client


@pytest.mark.slow  # ~90 s: `make test` and CI run it, `make test-fast` leaves it out
async def test_long_agent_session_compacts_without_losing_anything(ws: Path):
    """A synthetic 500-turn agent session with large tool outputs: no plan over budget,
    compactions happen, every archived message stays retrievable, the original task and a sticky
    pin's content are in every later prompt."""
    client = await fresh(ws, "long")
    turns = 500
    try:
        await req(client, "ctx/pinSymbol", {"symbol": "shop.inventory.Product"})
        await req(client, "ctx/appendMessages", {"messages": [{"id": "u0", "role": "user", "content": TASK}]})
        compactions = 0
        for k in range(turns):
            plan = await req(client, "ctx/planContext", {"query": f"part {k}: discount rules tax", **SMALL})
            assert plan.totals.tokens <= plan.promptBudget
            prompt = await req(client, "ctx/renderPrompt", {"planId": plan.planId, "format": "text"})
            assert TASK in prompt.text, f"turn {k}: the original task is in the prompt"
            assert "class Product" in prompt.text, f"turn {k}: the sticky pin's content is in the prompt"
            await req(client, "ctx/appendMessages", {"messages": turn(k)})
            await req(
                client,
                "ctx/reportUsage",
                {"planId": plan.planId, "inputTokens": plan.totals.tokens, "outputTokens": 50},
            )
            compactions = sum(1 for m, _ in client.notifications if m == "ctx/compacted")
        assert compactions >= 20
        listed = await req(client, "ctx/listMessages", {"includeArchived": True})
        assert len(listed.messages) == 1 + 4 * turns  # nothing was deleted
        archived = [m for m in listed.messages if m.archived]
        assert len(archived) > 3 * turns
        assert listed.messages[0].content == TASK and listed.messages[0].archived
        marker = next(p for m, p in client.notifications if m == "ctx/compacted")
        assert marker.marker.startswith("── compaction #")
    finally:
        await client.shutdown_session()


async def test_compact_preview_edit_and_apply(ws: Path):
    client = await fresh(ws, "preview")
    try:
        await req(client, "ctx/appendMessages", {"messages": [{"id": "u0", "role": "user", "content": TASK}]})
        for k in range(3):
            await req(client, "ctx/appendMessages", {"messages": turn(k, 50)})
        before = await req(client, "ctx/listMessages", {})
        proposal = await req(client, "ctx/compact", {"dryRun": True})
        assert not proposal.applied and proposal.archivedIds
        assert "Original task: " + TASK in proposal.summary
        assert "run_tests" in proposal.summary and "Failed approaches" in proposal.summary
        unchanged = await req(client, "ctx/listMessages", {})
        assert not any(m.archived for m in unchanged.messages)  # a preview changes nothing
        edited = proposal.summary + "\nNote from the user: prefer Decimal everywhere."
        applied = await req(client, "ctx/compact", {"summary": edited})
        assert applied.applied and applied.summarizer == "edited" and applied.archivedIds == proposal.archivedIds
        after = await req(client, "ctx/listMessages", {})
        assert len(after.messages) == len(before.messages)
        assert {m.id for m in after.messages if m.archived} == set(applied.archivedIds)
        plan = await req(client, "ctx/planContext", {"query": "what did we decide?"})
        summary = [i for i in plan.included if i.reason == "summary"]
        assert summary and summary[0].kind == "compaction_summary"
        prompt = await req(client, "ctx/renderPrompt", {"format": "text"})
        assert "prefer Decimal everywhere" in prompt.text
        # older history is retrievable: an archived turn that matches the query comes back as a chunk
        plan = await req(client, "ctx/planContext", {"query": "FAILED test_vat_rounding run_tests log"})
        assert any(i.kind == "history_chunk" for i in plan.included)
        await asyncio.sleep(0.1)
        assert any(m == "ctx/compacted" for m, _ in client.notifications)
        err = await error(client, "ctx/compact", {"strategy": "fold"})
        assert err.code == -32602
    finally:
        await client.shutdown_session()


async def error(client, method, params) -> JsonRpcException:
    with pytest.raises(JsonRpcException) as err:
        await client.protocol.send_request_async(method, params)
    return err.value


async def test_rolling_mode_trims_instead_of_summarising(ws: Path):
    client = await fresh(ws, "rolling")
    try:
        policy = await req(client, "ctx/setMemoryPolicy", {"rolling": True})
        assert policy.rolling
        await req(client, "ctx/appendMessages", {"messages": [{"id": "u0", "role": "user", "content": TASK}]})
        for k in range(30):
            await req(client, "ctx/appendMessages", {"messages": turn(k)})
        plan = await req(client, "ctx/planContext", {"query": "discount rules", **SMALL})
        assert plan.totals.tokens <= plan.promptBudget
        assert not any(m == "ctx/compacted" for m, _ in client.notifications)
        masked = [i for i in plan.included if i.detail and "masked" in i.detail]
        dropped = [i for i in plan.excluded if i.section == "conversation" and i.reason == "budget"]
        assert masked and dropped  # big old tool results are stubbed before whole turns go
        kept = [i for i in plan.included if i.section == "conversation" and i.kind == "tool_episode"]
        assert "masked" in (kept[0].detail or ""), "the oldest kept turns are the ones masked"
        listed = await req(client, "ctx/listMessages", {})
        assert len(listed.messages) == 1 + 4 * 30 and not any(m.archived for m in listed.messages)
        err = await error(client, "ctx/setMemoryPolicy", {"compactionThreshold": 3})
        assert err.code == -32602 and "between 0.1 and 1.0" in str(err)
    finally:
        await client.shutdown_session()


async def test_capsules_go_stale_on_a_code_change_not_on_whitespace(ws: Path):
    client = await fresh(ws, "capsules", settings={})
    rel = "shop/billing/invoice.py"
    path = ws / rel
    try:
        capsules = await req(client, "ctx/refreshCapsules", {"paths": [rel]})
        mine = next(c for c in capsules if c.path == rel)
        assert not mine.stale and mine.source == "extractive" and "calculate_invoice_total" in mine.text
        plan = await req(client, "ctx/planContext", {"query": "invoice"})
        assert any(i.kind == "capsule" and i.path == rel for i in plan.included)

        original = path.read_text()
        client.notifications.clear()
        await save(client, path, original.replace("\n\n", "\n\n\n", 3) + "\n# a comment only\n")
        assert not [p for m, p in client.notifications if m == "ctx/capsulesStale"]
        assert not next(c for c in await req(client, "ctx/listCapsules", {}) if c.path == rel).stale
        await save(client, path, original.replace("def tax_for(", "def tax_for_changed("))
        stale = await capsules_stale(client)
        assert stale and stale[0].files == [rel] and stale[0].capsules[0].path == rel
        plan = await req(client, "ctx/planContext", {"query": "invoice"})
        assert any(i.kind == "capsule" and i.path == rel and i.reason == "stale" for i in plan.excluded)
    finally:
        await client.shutdown_session()
    again = await fresh(ws, "capsules")
    try:  # stale state survives a restart
        assert next(c for c in await req(again, "ctx/listCapsules", {}) if c.path == rel).stale
        refreshed = await req(again, "ctx/refreshCapsules", {"paths": [rel]})
        assert not next(c for c in refreshed if c.path == rel).stale
        err = await error(again, "ctx/refreshCapsules", {"paths": ["nope/missing.py"]})
        assert err.code == -32002
    finally:
        await again.shutdown_session()
