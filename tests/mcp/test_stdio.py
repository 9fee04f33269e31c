"""stdout is the protocol: every byte `ctx-lsp mcp` writes there is a JSON-RPC message, whatever
the calls (errors and a malformed line included); logs go to stderr; closing stdin ends it."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path

from tests.mcp.client import TOOLS, server_params
from tests.workspaces import copy_sample


def _message(msg_id: int | None, method: str, params: dict | None = None) -> bytes:
    body: dict = {"jsonrpc": "2.0", "method": method}
    if msg_id is not None:
        body["id"] = msg_id
    if params is not None:
        body["params"] = params
    return json.dumps(body).encode() + b"\n"


def _call(msg_id: int, tool: str, **arguments) -> bytes:
    return _message(msg_id, "tools/call", {"name": tool, "arguments": arguments})


def test_stdout_carries_nothing_but_protocol(tmp_path: Path):
    ws = copy_sample(tmp_path / "ws")
    params = server_params(ws)
    init = {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "raw-test", "version": "0"},
    }
    stdin = b"".join(
        [
            _message(1, "initialize", init),
            _message(None, "notifications/initialized"),
            _message(2, "tools/list"),
            _call(3, "get_symbol", name="Inventory"),
            _call(4, "get_symbol", name="apply"),  # a tool error
            _call(5, "pin", name_or_path="reserve", ttl=-3),  # rejected arguments
            b"this is not json\n",
            _call(6, "search_code", query="invoice tax", budget=300),
            _call(7, "plan_context", query="invoice tax", budget=300),
            _call(8, "list_pins"),
        ]
    )
    proc = subprocess.Popen(
        [params.command, *params.args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=params.env,
        cwd=params.cwd,
    )
    killer = threading.Timer(60, proc.kill)
    killer.start()
    try:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(stdin)
        proc.stdin.flush()
        lines: list[bytes] = []
        replies: dict[int, dict] = {}
        while not set(range(1, 9)) <= set(replies):  # a client waits for its answers before it leaves
            line = proc.stdout.readline()
            assert line, f"stdout ended; replies {sorted(replies)}"
            lines.append(line)
            message = json.loads(line)  # each line is JSON ...
            assert message.get("jsonrpc") == "2.0"  # ... and JSON-RPC
            if "id" in message:
                replies[message["id"]] = message
        proc.stdin.close()  # the client leaves: the server ends, and writes nothing more
        rest, err = proc.stdout.read(), proc.stderr.read() if proc.stderr else b""
        assert proc.wait(15) == 0, err.decode()
    finally:
        killer.cancel()
        proc.kill()
    assert rest == b"", rest
    assert replies[1]["result"]["serverInfo"]["name"] == "ctx"
    assert len(replies[2]["result"]["tools"]) == len(TOOLS)
    assert replies[3]["result"]["structuredContent"]["qualname"] == "shop.inventory.Inventory"
    assert replies[4]["result"]["isError"] and "ambiguous" in replies[4]["result"]["content"][0]["text"]
    assert replies[5]["result"]["isError"]
    assert replies[6]["result"]["structuredContent"]["items"]
    assert replies[7]["result"]["structuredContent"]["plan_id"].startswith("plan-")
    assert replies[8]["result"]["structuredContent"]["pins"] == []
    stderr = err.decode()
    assert "serving" in stderr and "Traceback" not in stderr


def test_a_workspace_that_is_not_there_is_one_line_on_stderr(tmp_path: Path):
    proc = subprocess.run(
        [sys.executable, "-m", "ctx_lsp", "mcp", str(tmp_path / "missing")],
        input=b"",
        capture_output=True,
        timeout=60,
    )
    assert proc.returncode == 2 and proc.stdout == b""
    assert proc.stderr.decode().strip() == f"ctx-lsp: workspace {tmp_path / 'missing'} is not a directory"
