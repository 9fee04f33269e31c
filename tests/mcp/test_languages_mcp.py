"""`ctx-lsp mcp` on a mixed repository: an agent asks for a Rust, TypeScript, Go or Java symbol by
name, for its callers and callees, and for code about a question, as it would in Python."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.mcp.client import call, data, mcp_session, text
from tests.workspaces import copy_poly


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    return copy_poly(tmp_path / "ws")


async def test_symbols_references_and_search_in_every_language(ws: Path):
    async with mcp_session(ws) as s:
        nxt = data(await call(s, "get_symbol", name="Chain::next"))
        assert nxt["qualname"] == "ledger_core::error::Chain::next" and nxt["kind"] == "method"
        assert nxt["path"] == "src/error.rs" and "self.next = current.source();" in nxt["code"]
        shown = text(await call(s, "get_symbol", name="Server.Handle"))
        assert "// server/handler.go:" in shown and "func (s *Server) Handle(" in shown
        ts = data(await call(s, "get_symbol", name="ApiClient.balance"))
        assert ts["qualname"] == "web/src/api/client.ApiClient.balance" and "formatCents(body.balance)" in ts["code"]
        java = data(await call(s, "get_symbol", name="com.shop.Inventory.reserve"))
        assert "throw new IllegalStateException" in java["code"]

        refs = data(await call(s, "references", name="ledger_core::account::Ledger::transfer"))
        callees = {c["qualname"] for c in refs["callees"]}
        assert {"ledger_core::account::Ledger::find", "ledger_core::account::Account::post"} <= callees
        post = data(await call(s, "references", name="Account::post"))
        assert "ledger_core::account::Ledger::transfer" in {c["qualname"] for c in post["callers"]}
        # a name defined in another file of the same language, resolved by name
        assert "ledger_core::error::LedgerError" in {c["qualname"] for c in post["callees"]}

        found = text(await call(s, "search_code", query="how does the api client retry failed requests?", budget=600))
        assert "await backoff(attempt)" in found
