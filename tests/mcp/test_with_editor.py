"""One workspace, one default session: a pin the agent makes over MCP is in the editor's list (and
its code lens), and a pin the editor makes is in the agent's — two processes, one store."""

from __future__ import annotations

from pathlib import Path

from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient

from ctx_lsp.server.protocol import to_builtin
from tests.lsp.conftest import server_command, start
from tests.mcp.client import call, data, mcp_session
from tests.workspaces import copy_sample


async def _editor(ws: Path) -> LanguageClient:
    client = await ClientServerConfig(server_command=server_command()).start()
    await start(client, ws, session=None)  # no session named: the editor's default one
    return client


async def _request(client: LanguageClient, method: str, params: dict):
    return to_builtin(await client.protocol.send_request_async(method, params))


async def test_pins_are_shared_with_the_editor(tmp_path: Path):
    ws = copy_sample(tmp_path / "ws")
    async with mcp_session(ws) as agent:
        made = data(await call(agent, "pin", name_or_path="shop.inventory.Inventory.reserve", ttl=4))
        editor = await _editor(ws)
        try:
            pins = await _request(editor, "ctx/listPins", {})
            (pin,) = [p for p in pins if p["id"] == made["id"]]
            assert pin["symbol"] == "shop.inventory.Inventory.reserve" and pin["createdBy"] == "agent"
            assert pin["ttl"] == 4 and pin["uri"] == (ws / "shop/inventory.py").as_uri()
            params = types.CodeLensParams(types.TextDocumentIdentifier(pin["uri"]))
            lenses = await editor.text_document_code_lens_async(params) or []
            (lens,) = [lens for lens in lenses if lens.data["symbol"] == "shop.inventory.Inventory.reserve"]
            resolved = await editor.code_lens_resolve_async(lens)
            assert resolved.command is not None and resolved.command.title.startswith("📌 Pinned")  # the agent's pin

            mine = await _request(editor, "ctx/pinSymbol", {"symbol": "shop.billing.invoice.tax_for"})
            listed = data(await call(agent, "list_pins"))["pins"]
            assert [p["id"] for p in listed] == [made["id"], mine["id"]]
            assert listed[1]["created_by"] == "user"
            await call(agent, "unpin", pin_id=mine["id"])  # the agent may remove the user's pin too
            assert [p["id"] for p in await _request(editor, "ctx/listPins", {})] == [made["id"]]
        finally:
            await editor.shutdown_session()
