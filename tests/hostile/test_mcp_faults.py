"""`ctx-lsp mcp` fed raw JSON-RPC over stdio as a careless or hostile agent would: integers past
2^63 are a clear error (not "internal error: OverflowError"), an error quotes at most a short
prefix of a huge argument, and every malformed request with an id gets a JSON-RPC error."""

from __future__ import annotations

import json
import subprocess
import threading
from pathlib import Path

from tests.mcp.client import server_params
from tests.mcp.test_stdio import _call, _message
from tests.workspaces import copy_sample

INIT = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "hostile", "version": "0"}}
HUGE = "x" * 2_000_000


def _exchange(ws: Path, lines: list[bytes], expected: set[int | None]) -> tuple[dict, str]:
    """Sends ``lines`` after the handshake; returns the replies by id once all ``expected`` came."""
    params = server_params(ws)
    proc = subprocess.Popen(
        [params.command, *params.args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=params.env,
        cwd=params.cwd,
    )
    killer = threading.Timer(90, proc.kill)
    killer.start()
    replies: dict = {}
    try:
        assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
        handshake = _message(0, "initialize", INIT) + _message(None, "notifications/initialized")
        proc.stdin.write(handshake + b"".join(lines))
        proc.stdin.flush()
        while not expected <= set(replies):
            line = proc.stdout.readline()
            assert line, f"stdout ended; replies {sorted(replies, key=str)}"
            message = json.loads(line)
            if "id" in message:
                replies[message["id"]] = message
        proc.stdin.close()
        err = proc.stderr.read().decode()
        assert proc.wait(15) == 0, err
    finally:
        killer.cancel()
        proc.kill()
    return replies, err


def _text(reply: dict) -> str:
    assert reply["result"]["isError"], reply
    return reply["result"]["content"][0]["text"]


def test_big_integers_and_huge_arguments_are_clear_short_errors(tmp_path: Path) -> None:
    ws = copy_sample(tmp_path / "ws")
    lines = [
        _call(1, "pin", name_or_path="shop.inventory.Inventory", ttl=2**63),
        _call(2, "search_code", query="invoice tax", budget=2**64),
        _call(3, "expand", id="g-1", start_line=2**70, max_lines=2**63),
        _call(4, "plan_context", query="tax", budget=2**63),
        _call(5, "get_symbol", name=HUGE),
        _call(6, "search_code", query="tax " + HUGE),
        _call(7, "unpin", pin_id=HUGE),
        _call(8, "get_symbol", name="y" * 1_500),  # allowed, and unknown: the engine's error quotes it
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
        _message(7, "tools/list"),  # and the server still serves
    ]
    replies, _ = _exchange(ws, lines, {None, 2, 3, 4, "five", 7})
    assert replies[None]["error"]["code"] in (-32700, -32600)
    for ident in (2, 3, 4, "five"):
        assert replies[ident]["error"]["code"] == -32600, replies[ident]
    assert replies[7]["result"]["tools"]
