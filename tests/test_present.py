"""Code already in the conversation (``core.present``) is not retrieved again: found by its lines
in the shapes the assistants put files in (Claude Code's numbered Read result, a shell's ``sed
-n``, aider's listing), left out by the planner as ``in_conversation``, and plan ids of plans
without it unchanged."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import msgspec

from ctx_lsp.core.items import SYMBOL_BODY, SYMBOL_CARD, Item, Message, PlanInput, Range
from ctx_lsp.core.own_tools import CTX_TOOLS, is_ctx_tool
from ctx_lsp.core.planner import PLANNER_VERSION, plan, plan_id_for
from ctx_lsp.core.present import in_conversation, present_ids, present_lines
from tests.planning import plan_input, sym

FIXTURES = Path(__file__).parent / "fixtures" / "harness"
RESERVE = '''def reserve(self, sku: str, quantity: int) -> Inventory.Reservation:
    """Hold units for an order; raises OutOfStockError when there are not enough."""
    available = self._stock.get(sku, 0)
    if available < quantity:
        raise OutOfStockError(f"{sku}: {available} in stock, {quantity} requested")
    self._stock[sku] = available - quantity
    return Inventory.Reservation(sku, quantity)'''


def _body(text: str, path: str = "shop/inventory.py", lines: tuple[int, int] = (60, 66), name: str = "reserve") -> Item:
    header = f"# {path}:{lines[0] + 1}-{lines[1] + 1} · shop.inventory.Inventory.{name}\n"
    return Item(
        id=f"body:{name}",
        section="rag",
        kind=SYMBOL_BODY,
        title=name,
        tokens=80,
        text=header + text,
        path=path,
        range=Range.lines(*lines),
        symbol=f"shop.inventory.Inventory.{name}",
    )


def test_a_claude_code_read_result_holds_the_files_symbols() -> None:
    """The Read result Claude Code 2.1.197 sent back (numbered lines: ``12\\t…``)."""
    body = json.loads((FIXTURES / "claude_code_2.1.197_read.json").read_text())
    (result,) = [
        b
        for m in body["messages"]
        if isinstance(m["content"], list)
        for b in m["content"]
        if b["type"] == "tool_result"
    ]
    text = result["content"] if isinstance(result["content"], str) else result["content"][0]["text"]
    assert text.startswith("1\t")
    present = present_lines([Message(id="r", role="tool", content=text)])
    error = '''class OutOfStockError(Exception):
    """Raised when a reservation asks for more units than are in stock."""'''
    assert in_conversation(_body(error, lines=(10, 11), name="OutOfStockError"), present)
    assert in_conversation(_body(RESERVE), present)
    other = RESERVE.replace("reserve(", "hold(").replace("available", "free")  # not in that file
    assert not in_conversation(_body(other, name="hold"), present)


def test_printed_listed_or_numbered_the_same_lines_count() -> None:
    indented = "\n".join("    " + line for line in RESERVE.splitlines())
    numbered = "\n".join(f"{n:6}\t{line}" for n, line in enumerate(indented.splitlines(), start=61))
    for shape in (indented, numbered, f"shop/inventory.py\n```\n{indented}\n```"):
        assert in_conversation(_body(RESERVE), present_lines([Message(id="m", role="user", content=shape)]))
    # changed since it was read: the new code is offered
    edited = RESERVE.replace("available - quantity", "available - quantity - held").replace("0)", "1)")
    present = present_lines([Message(id="m", role="tool", content=edited)])
    assert not in_conversation(_body(RESERVE), present)
    # a system prompt is not the conversation
    assert not in_conversation(_body(RESERVE), present_lines([Message(id="s", role="system", content=RESERVE)]))


def test_what_lies_inside_a_body_read_whole_is_in_it_too() -> None:
    body = _body(RESERVE)
    card = msgspec.structs.replace(body, id="card:reserve", kind=SYMBOL_CARD, text="def reserve(…)")
    elsewhere = msgspec.structs.replace(card, id="card:other", range=Range.lines(80, 90))
    present = present_lines([Message(id="m", role="user", content=RESERVE)])
    assert present_ids([body, card, elsewhere], present) == ("body:reserve", "card:reserve")


def test_the_planner_leaves_out_what_is_in_the_conversation_and_says_why() -> None:
    a, b = sym("pkg.mod.a", 50, score=5.0), sym("pkg.mod.b", 50, score=4.0, line=20)
    inp = msgspec.structs.replace(plan_input(candidates=(a, b)), in_conversation=(a.id,))
    result = plan(inp)
    reasons = {i.id: i.reason for i in (*result.plan.included, *result.plan.excluded) if i.section == "rag"}
    assert reasons == {a.id: "in_conversation", b.id: "relevant"}


def test_a_plan_without_it_keeps_the_id_it_had_before_the_field() -> None:
    """Plans kept before ``in_conversation`` existed replay with their ids: without it, a plan
    id is the digest of PlanInput as it was (the same struct, one field fewer)."""
    fields = [f for f in msgspec.structs.fields(PlanInput) if f.name != "in_conversation"]
    Before = msgspec.defstruct("PlanInput", [(f.name, f.type, f.default) for f in fields], frozen=True, kw_only=True)
    inp = plan_input(candidates=(sym("pkg.mod.a", 50, score=5.0),))
    named = tuple(msgspec.structs.replace(c, text="") for c in inp.candidates)  # version 2 names cards by id
    before = Before(**{f.name: getattr(inp, f.name) for f in fields if f.name != "candidates"}, candidates=named)
    old = "plan-" + hashlib.sha256(PLANNER_VERSION.encode() + msgspec.msgpack.encode(before)).hexdigest()[:20]
    assert plan_id_for(inp) == old
    assert plan_id_for(msgspec.structs.replace(inp, in_conversation=("x",))) != old


def test_ctx_tools_are_the_mcp_servers_tools() -> None:
    from ctx_lsp.mcp.server import ANNOTATIONS

    assert set(ANNOTATIONS) == CTX_TOOLS
    assert is_ctx_tool("mcp__ctx__get_symbol") and is_ctx_tool("mcp__ctx-lsp__expand")
    assert not is_ctx_tool("mcp__github__search_code") and not is_ctx_tool("get_symbol") and not is_ctx_tool("Read")
