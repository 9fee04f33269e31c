"""stdout is the protocol: every byte `ctx-lsp mcp` writes there is a JSON-RPC message, whatever
the calls (errors and a malformed line included); logs go to stderr; closing stdin ends it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.mcp.client import TOOLS, message, raw_exchange, tool_line
from tests.workspaces import copy_sample


def test_stdout_carries_nothing_but_protocol(tmp_path: Path):
    ws = copy_sample(tmp_path / "ws")
    init = {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "raw-test", "version": "0"},
    }
    stdin = b"".join(
        [
            message(1, "initialize", init),
            message(None, "notifications/initialized"),
            message(2, "tools/list"),
            tool_line(3, "get_symbol", name="Inventory"),
            tool_line(4, "get_symbol", name="apply"),  # a tool error
            tool_line(5, "pin", name_or_path="reserve", ttl=-3),  # rejected arguments
            b"this is not json\n",
            tool_line(6, "search_code", query="invoice tax", budget=300),
            tool_line(7, "plan_context", query="invoice tax", budget=300),
            tool_line(8, "list_pins"),
        ]
    )
    replies, rest, err = raw_exchange(ws, stdin, set(range(1, 9)), timeout=60)
    assert rest == b"", rest
    assert replies[1]["result"]["serverInfo"]["name"] == "ctx"
    assert len(replies[2]["result"]["tools"]) == len(TOOLS)
    assert replies[3]["result"]["structuredContent"]["qualname"] == "shop.inventory.Inventory"
    assert replies[4]["result"]["isError"] and "ambiguous" in replies[4]["result"]["content"][0]["text"]
    assert replies[5]["result"]["isError"]
    assert replies[6]["result"]["structuredContent"]["items"]
    assert replies[7]["result"]["structuredContent"]["plan_id"].startswith("plan-")
    assert replies[8]["result"]["structuredContent"]["pins"] == []
    assert "serving" in err and "Traceback" not in err


def test_a_workspace_that_is_not_there_is_one_line_on_stderr(tmp_path: Path):
    proc = subprocess.run(
        [sys.executable, "-m", "ctx_lsp", "mcp", str(tmp_path / "missing")],
        input=b"",
        capture_output=True,
        timeout=60,
    )
    assert proc.returncode == 2 and proc.stdout == b""
    assert proc.stderr.decode().strip() == f"ctx-lsp: workspace {tmp_path / 'missing'} is not a directory"
