"""`ctx-lsp mcp` fed raw JSON-RPC over stdio as a careless or hostile agent would: integers past
2^63 are a clear error (not "internal error: OverflowError"), an error quotes at most a short
prefix of a huge argument, and every malformed request with an id gets a JSON-RPC error."""

from __future__ import annotations

from pathlib import Path

from tests.mcp.client import message, raw_exchange, tool_line
from tests.workspaces import copy_sample

INIT = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "hostile", "version": "0"}}
HUGE = "x" * 2_000_000


def _exchange(ws: Path, lines: list[bytes], expected: set[int | None]) -> tuple[dict, str]:
    """Sends ``lines`` after the handshake; returns the replies by id once all ``expected`` came."""
    handshake = message(0, "initialize", INIT) + message(None, "notifications/initialized")
    replies, _, err = raw_exchange(ws, handshake + b"".join(lines), expected)
    return replies, err


def _text(reply: dict) -> str:
    assert reply["result"]["isError"], reply
    return reply["result"]["content"][0]["text"]


def test_big_integers_and_huge_arguments_are_clear_short_errors(tmp_path: Path) -> None:
    ws = copy_sample(tmp_path / "ws")
    lines = [
        tool_line(1, "pin", name_or_path="shop.inventory.Inventory", ttl=2**63),
        tool_line(2, "search_code", query="invoice tax", budget=2**64),
        tool_line(3, "expand", id="g-1", start_line=2**70, max_lines=2**63),
        tool_line(4, "plan_context", query="tax", budget=2**63),
        tool_line(5, "get_symbol", name=HUGE),
        tool_line(6, "search_code", query="tax " + HUGE),
        tool_line(7, "unpin", pin_id=HUGE),
        tool_line(8, "get_symbol", name="y" * 1_500),  # allowed, and unknown: the engine's error quotes it
    ]
    replies, err = _exchange(ws, lines, set(range(1, 9)))
    for n in range(1, 9):
        text = _text(replies[n])
        assert "internal error" not in text and "OverflowError" not in text, text
        assert len(text) < 2_000, (n, len(text))
    assert "less than or equal" in _text(replies[1])
    assert "y" * 121 not in _text(replies[8])
    assert "Traceback" not in err


def test_every_malformed_request_with_an_id_is_answered(tmp_path: Path) -> None:
    ws = copy_sample(tmp_path / "ws")
    lines = [
        b"{not json\n",
        b'{"jsonrpc": "2.0", "id": 2}\n',  # no method
        b'{"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": 5}\n',
        b'{"jsonrpc": "1.0", "id": 4, "method": "tools/list"}\n',
        b'{"id": "five", "method": "tools/list"}\n',
        b'[{"jsonrpc": "2.0", "id": 6, "method": "tools/list"}]\n',  # a batch: not in this protocol
        message(7, "tools/list"),  # and the server still serves
    ]
    replies, _ = _exchange(ws, lines, {None, 2, 3, 4, "five", 7})
    assert replies[None]["error"]["code"] in (-32700, -32600)
    for ident in (2, 3, 4, "five"):
        assert replies[ident]["error"]["code"] == -32600, replies[ident]
    assert replies[7]["result"]["tools"]
