"""`ctx-lsp mcp` through the SDK's stdio client: the tools and their schemas, every tool called,
bad arguments answered with a tool error an agent can act on, and the server serving on."""

from __future__ import annotations

import asyncio
from pathlib import Path

from ctx_lsp.core.own_tools import CTX_TOOLS
from tests.mcp.client import TOOLS, call, data, error, mcp_session, text
from tests.workspaces import copy_poly


async def test_the_tools_and_their_schemas(ws: Path):
    async with mcp_session(ws) as s:
        listed = {t.name: t for t in (await s.list_tools()).tools}
        assert tuple(listed) == TOOLS
        assert set(listed) == CTX_TOOLS  # every tool of ours is counted as ours in the gateway's savings
        for tool in listed.values():
            assert tool.description and len(tool.description) > 60, tool.name
            assert tool.output_schema is not None and tool.output_schema["type"] == "object", tool.name
            assert tool.input_schema["type"] == "object"

        def props(name: str) -> dict:
            return listed[name].input_schema["properties"]

        assert listed["get_symbol"].input_schema["required"] == ["name"]
        assert listed["references"].input_schema["required"] == ["name"]
        assert "budget" not in listed["search_code"].input_schema["required"]
        assert props("pin")["kind"]["enum"] == ["sticky", "leased", "ephemeral"]
        assert props("pin")["policy"]["enum"] == ["automatic", "ask", "unlimited"]
        assert props("pin")["ttl"]["anyOf"][0] == {"minimum": 0, "maximum": 1_000_000_000, "type": "integer"}
        assert props("plan_context")["mode"]["anyOf"][0]["enum"] == ["off", "light", "heavy"]
        assert set(props("list_capsules")) == {"stale_only"}
        assert props("list_pins") == {} and props("show_budget") == {}
        out = listed["get_symbol"].output_schema["properties"]
        assert {"qualname", "kind", "path", "start_line", "end_line", "code", "tokens", "pin_id"} <= set(out)
        assert listed["get_symbol"].annotations is not None and listed["get_symbol"].annotations.read_only_hint
        assert listed["pin"].annotations is not None and not listed["pin"].annotations.read_only_hint


async def test_get_symbol_and_references(ws: Path):
    async with mcp_session(ws) as s:
        found = await call(s, "get_symbol", name="shop.inventory.Inventory.reserve")
        sym = data(found)
        assert sym["qualname"] == "shop.inventory.Inventory.reserve" and sym["kind"] == "method"
        assert (sym["path"], sym["start_line"], sym["end_line"]) == ("shop/inventory.py", 60, 66)
        assert sym["code"].lstrip().startswith("def reserve(self, sku: str, quantity: int)")
        assert sym["tokens"] > 20 and sym["pin_id"] is None
        assert "# shop/inventory.py:60-66 · method shop.inventory.Inventory.reserve" in text(found)
        assert sym["code"] in text(found)
        short = data(await call(s, "get_symbol", name="Inventory"))  # a unique short name
        assert short["qualname"] == "shop.inventory.Inventory" and "class Inventory:" in short["code"]
        module = data(await call(s, "get_symbol", name="shop.inventory"))
        assert module["kind"] == "module" and module["note"] and "Products and the stock" in module["code"]

        refs = data(await call(s, "references", name="calculate_invoice_total"))
        assert refs["qualname"] == "shop.billing.invoice.calculate_invoice_total"
        assert "shop.billing.invoice.Invoice.total" in {c["qualname"] for c in refs["callers"]}
        callees = {c["qualname"]: c for c in refs["callees"]}
        assert callees["shop.config.TAX_RATE"]["path"] == "shop/config.py" and callees["shop.config.TAX_RATE"]["weight"]
        shown = text(await call(s, "references", name="Inventory"))
        assert (
            "callers (code that names it):\n  shop.storage.StockRepository.load (method, shop/storage.py:20)" in shown
        )
        # none found is not "unused": the answer says how references are linked
        lonely = text(await call(s, "references", name="shop.storage.fetchRemoteStockLevels"))
        assert "callers (code that names it): none found by name (a call is linked to the nearest" in lonely


async def test_a_rust_workspace_speaks_of_structs_and_impl_blocks(tmp_path: Path):
    """The tools' answers name a definition the way its language does; the structured ``kind``
    stays the index's role (``class``), which clients may branch on."""
    async with mcp_session(copy_poly(tmp_path / "poly")) as s:
        found = await call(s, "get_symbol", name="ledger_core::error::LedgerError")
        assert data(found)["kind"] == "class"
        assert "· enum ledger_core::error::LedgerError ·" in text(found)
        shown = text(await call(s, "references", name="ledger_core::error::Chain"))
        assert shown.startswith("struct ledger_core::error::Chain (src/error.rs:")
        assert "(impl, src/error.rs:" in shown, shown


async def test_search_plan_and_budget(ws: Path):
    async with mcp_session(ws) as s:
        found = await call(s, "search_code", query="how is the invoice total calculated with tax", budget=400)
        result = data(found)
        assert result["items"] and result["used"] <= 400 and result["budget"] == 400
        assert result["used"] == sum(i["tokens"] for i in result["items"])
        for item in result["items"]:
            assert item["why"] and item["form"] in ("body", "card", "excerpt") and item["text"] in text(found)
        assert result["left_out"] > 0 and "raise budget" in text(found)
        default = data(await call(s, "search_code", query="tax_for"))
        assert default["budget"] == 4000 and default["items"][0]["symbol"] == "shop.billing.invoice.tax_for"

        planned = await call(s, "plan_context", query="how is the invoice total calculated with tax?", budget=500)
        plan = data(planned)
        rag = next(x for x in plan["sections"] if x["name"] == "rag")
        assert rag["budget"] == 500 and 0 < rag["used"] <= 500
        assert plan["tokens"] <= plan["prompt_budget"]
        reasons = {e["reason"] for e in plan["included"]}
        assert {"required", "scaffold", "relevant"} <= reasons
        assert plan["context"] in text(planned) and "# Workspace ws" in plan["context"]
        assert "You are an AI coding assistant" not in plan["context"]  # the plan's own system prompt stays out
        assert plan["excluded_total"] == sum(plan["excluded_by_reason"].values())
        off = data(await call(s, "plan_context", query="invoice total", mode="off"))
        assert off["mode"] == "off" and not [e for e in off["included"] if e["section"] == "rag"]

        meter = await call(s, "show_budget")
        budget = data(meter)
        assert budget["session"] == "default" and budget["plan_id"] == off["plan_id"]  # the latest plan
        assert budget["used"] == off["tokens"] and budget["text"] in text(meter)
        assert {x["name"] for x in budget["sections"]} == {"system", "conversation", "rag"}


async def test_pins(ws: Path):
    async with mcp_session(ws) as s:
        assert data(await call(s, "list_pins")) == {"session": "default", "pins": []}
        by_name = data(await call(s, "pin", name_or_path="Inventory.reserve"))
        assert by_name["id"] == "pin:shop.inventory.Inventory.reserve" and by_name["created_by"] == "agent"
        assert (by_name["kind"], by_name["policy"], by_name["ttl"], by_name["status"]) == (
            "sticky",
            "automatic",
            None,
            "active",
        )
        line = next(
            n
            for n, t in enumerate((ws / "shop/billing/invoice.py").read_text().splitlines(), 1)
            if "return calculate_invoice_total" in t
        )
        by_line = data(
            await call(s, "pin", name_or_path=f"shop/billing/invoice.py:{line}", kind="leased", ttl=3, policy="ask")
        )
        assert by_line["symbol"] == "shop.billing.invoice.Invoice.total"
        assert (by_line["kind"], by_line["ttl"], by_line["ttl_remaining"], by_line["policy"]) == ("leased", 3, 3, "ask")
        absolute = data(await call(s, "pin", name_or_path=f"{ws / 'shop/inventory.py'}:75"))
        assert absolute["symbol"] == "shop.inventory.Inventory.parse_sku"
        listed = await call(s, "list_pins")
        ids = [p["id"] for p in data(listed)["pins"]]
        assert ids == [by_name["id"], by_line["id"], absolute["id"]]
        assert "3 pins in session 'default'" in text(listed)
        pinned = data(await call(s, "get_symbol", name="shop.inventory.Inventory.reserve"))
        assert pinned["pin_id"] == by_name["id"]
        removed = data(await call(s, "unpin", pin_id=by_name["id"]))
        assert removed["status"] == "removed"
        assert [p["id"] for p in data(await call(s, "list_pins"))["pins"]] == [by_line["id"], absolute["id"]]
        plan = data(await call(s, "plan_context", query="parse a sku"))
        assert "pinned" in {e["reason"] for e in plan["included"]} and "def parse_sku" in plan["context"]


async def test_bad_arguments_get_a_tool_error_and_the_server_serves_on(ws: Path):
    async with mcp_session(ws) as s:
        ambiguous = await error(s, "get_symbol", name="apply")
        assert "'apply' is ambiguous: 2 symbols have that name" in ambiguous
        assert "shop.billing.discounts.DiscountRule.apply (method, shop/billing/discounts.py:" in ambiguous
        assert "shop.billing.discounts.PercentOff.apply" in ambiguous and "qualified name" in ambiguous
        unknown = await error(s, "get_symbol", name="Inventroy")
        assert "no symbol 'Inventroy'" in unknown and "did you mean shop.inventory.Inventory" in unknown
        assert "ambiguous" in await error(s, "references", name="__init__")
        assert "nor any similar name" in await error(s, "references", name="xyzzy")

        assert (
            "ttl" in (bad_ttl := await error(s, "pin", name_or_path="reserve", ttl=-1))
            and "greater than or equal to 0" in bad_ttl
        )
        bad_policy = await error(s, "pin", name_or_path="reserve", policy="sometimes")
        assert "policy" in bad_policy and "'automatic', 'ask' or 'unlimited'" in bad_policy
        assert "'sticky', 'leased' or 'ephemeral'" in await error(s, "pin", name_or_path="reserve", kind="forever")
        assert "give path:LINE" in await error(s, "pin", name_or_path="shop/inventory.py")
        assert "not a file in the workspace" in await error(s, "pin", name_or_path="/etc/passwd:1")
        assert "no symbol at shop/inventory.py:2:1" in await error(s, "pin", name_or_path="shop/inventory.py:2")
        assert "ambiguous" in await error(s, "pin", name_or_path="apply")
        unknown_pin = await error(s, "unpin", pin_id="pin:shop.nothing")
        assert "no pin 'pin:shop.nothing' in session 'default'" in unknown_pin and "list_pins" in unknown_pin
        assert "budget" in await error(s, "search_code", query="tax", budget=0)
        assert "query" in await error(s, "search_code", query="")
        assert "budget" in await error(s, "plan_context", query="tax", budget=-5)
        assert "name" in await error(s, "get_symbol")
        assert "Unknown tool" in await error(s, "no_such_tool")

        assert data(await call(s, "get_symbol", name="tax_for"))["qualname"] == "shop.billing.invoice.tax_for"
        assert data(await call(s, "list_pins"))["pins"] == []  # nothing half-made


async def test_capsules_go_stale_when_their_module_changes_on_disk(ws: Path):
    async with mcp_session(ws) as s:
        capsules: list = []
        for _ in range(100):  # made for the central modules right after the start-up indexing
            capsules = data(await call(s, "list_capsules"))["capsules"]
            if capsules:
                break
            await asyncio.sleep(0.1)
        assert "shop/inventory.py" in {c["path"] for c in capsules}
        assert all(not c["stale"] and c["text"] for c in capsules)
        assert data(await call(s, "list_capsules", stale_only=True))["capsules"] == []
        source = ws / "shop/inventory.py"
        source.write_text(source.read_text() + "\n\ndef audit() -> None:\n    pass\n")
        stale: list = []
        for _ in range(100):  # the file watcher re-indexes it and marks its capsule stale
            stale = data(await call(s, "list_capsules", stale_only=True))["capsules"]
            if stale:
                break
            await asyncio.sleep(0.1)
        assert [c["path"] for c in stale] == ["shop/inventory.py"]
        assert "STALE" in text(await call(s, "list_capsules", stale_only=True))
        assert data(await call(s, "get_symbol", name="audit"))["qualname"] == "shop.inventory.audit"


async def test_a_named_session(ws: Path):
    async with mcp_session(ws, "--session", "agent-1") as s:
        await call(s, "pin", name_or_path="tax_for")
        assert data(await call(s, "list_pins"))["session"] == "agent-1"
    async with mcp_session(ws) as s:  # the editor's default session has no such pin
        assert data(await call(s, "list_pins"))["pins"] == []


async def test_expand_returns_a_shortened_output_whole(ws: Path):
    from ctx_lsp.engine import Engine
    from ctx_lsp.sessions import SessionEngine

    log = "\n".join(f"line {n}: ok" for n in range(500)) + "\nE   AssertionError: the needle"
    engine = SessionEngine(Engine(ws))
    engine.store.ensure_session("claude-x")
    engine.store.put_original("claude-x", "g-0123abcd", "test_log", 4000, 300, log)
    engine.close()
    async with mcp_session(ws) as s:
        whole = data(await call(s, "expand", id="g-0123abcd"))
        assert whole["text"] == log and whole["kind"] == "test_log" and whole["tokens"] > 1000
        part = data(await call(s, "expand", id="g-0123abcd", start_line=501, max_lines=1))
        assert part["text"] == "E   AssertionError: the needle" and part["total_lines"] == 501
        found = data(await call(s, "expand", id="g-0123abcd", match="assertionerror", context=1))
        assert found["text"] == "500-line 499: ok\n501:E   AssertionError: the needle" and found["matches"] == 1
        none = data(await call(s, "expand", id="g-0123abcd", match="no such (words"))  # not a regex: literal
        assert none["matches"] == 0 and "no line of the 501 matches" in none["text"]
        assert "use the id from the marker" in await error(s, "expand", id="g-nope")
