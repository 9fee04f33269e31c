"""The real server on a workspace whose store files are damaged: a corrupt index cache is moved
aside and rebuilt; a corrupt memory store is left byte for byte as it was, named in a message,
and planning goes on without it."""

from __future__ import annotations

import asyncio
import hashlib
from pathlib import Path

import pytest
from pytest_lsp import ClientServerConfig, LanguageClient

from tests.lsp.conftest import server_command, start
from tests.workspaces import damage


async def _serve(root: Path) -> LanguageClient:
    client = await ClientServerConfig(server_command=server_command()).start()
    await start(client, root, session="robust")
    return client


async def _messages(client: LanguageClient, needle: str) -> list[str]:
    for _ in range(100):
        found = [m.message for m in client.messages if needle in m.message]
        if found:
            return found
        await asyncio.sleep(0.1)
    return []


async def test_corrupt_memory_store_is_named_and_planning_goes_on(ws: Path):
    first = await _serve(ws)
    await first.protocol.send_request_async("ctx/pinSymbol", {"symbol": "shop.inventory.Product"})
    await first.shutdown_session()
    memory = ws / ".ctx" / "memory.sqlite3"
    damage(memory, b"this is not SQLite " * 4096)
    before = hashlib.sha256(memory.read_bytes()).hexdigest()

    client = await _serve(ws)
    try:
        shown = await _messages(client, "memory.sqlite3")
        assert shown and "nothing in it was changed" in shown[0] and str(memory) in shown[0]
        plan = await client.protocol.send_request_async("ctx/planContext", {"query": "invoice total with tax"})
        assert plan.totals.tokens <= plan.promptBudget and plan.included
        with pytest.raises(Exception) as info:
            await client.protocol.send_request_async("ctx/pinSymbol", {"symbol": "shop.inventory.Product"})
        assert getattr(info.value, "code", None) == -32004
        assert str(memory) in str(info.value)
        assert await client.protocol.send_request_async("ctx/showBudget", {}) is not None  # still serving
    finally:
        await client.shutdown_session()
    assert hashlib.sha256(memory.read_bytes()).hexdigest() == before


async def test_corrupt_index_is_rebuilt_with_a_message(ws: Path):
    first = await _serve(ws)
    await first.protocol.send_request_async("ctx/planContext", {"query": "invoice"})
    await first.shutdown_session()
    index = ws / ".ctx" / "index.sqlite3"
    damage(index, b"\x13garbage" * 50_000)

    client = await _serve(ws)
    try:
        shown = await _messages(client, "index.sqlite3")
        assert shown and "moved it to index.sqlite3.corrupt-" in shown[0]
        plan = await client.protocol.send_request_async("ctx/planContext", {"query": "invoice total with tax"})
        assert any(i.symbol == "shop.billing.invoice.calculate_invoice_total" for i in plan.included)
    finally:
        await client.shutdown_session()
    assert list(index.parent.glob("index.sqlite3.corrupt-*"))
