"""A real `ctx-lsp mcp` over stdio, driven with the MCP SDK's own client."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import threading
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.types import CallToolResult

ROOT = Path(__file__).resolve().parents[2]
TOOLS = (
    "get_symbol",
    "search_code",
    "plan_context",
    "pin",
    "unpin",
    "list_pins",
    "show_budget",
    "list_capsules",
    "references",
    "expand",
)


def server_params(workspace: Path, *args: str, home: Path | None = None) -> StdioServerParameters:
    """``python -m ctx_lsp mcp WORKSPACE *args``; the stdio client passes the child only what it
    is given, so the environment is explicit."""
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home or workspace.parent),
        "PYTHONPATH": str(ROOT),
        "LANG": "C.UTF-8",
    }
    return StdioServerParameters(
        command=sys.executable, args=["-m", "ctx_lsp", "mcp", str(workspace), *args], env=env, cwd=str(workspace)
    )


@contextlib.asynccontextmanager
async def mcp_session(workspace: Path, *args: str) -> AsyncIterator[ClientSession]:
    async with (
        stdio_client(server_params(workspace, *args)) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


async def call(session: ClientSession, tool: str, **arguments: Any) -> CallToolResult:
    result = await session.call_tool(tool, arguments)
    assert not result.is_error, f"{tool}({arguments}): {text(result)}"
    return result


async def error(session: ClientSession, tool: str, **arguments: Any) -> str:
    """The message of a call that must fail as a tool error (not a protocol error)."""
    result = await session.call_tool(tool, arguments)
    assert result.is_error, f"{tool}({arguments}) did not fail: {text(result)}"
    assert result.structured_content is None
    return text(result)


def text(result: CallToolResult) -> str:
    return "\n".join(getattr(block, "text", "") for block in result.content)


def data(result: CallToolResult) -> dict[str, Any]:
    assert result.structured_content is not None
    return result.structured_content


def message(msg_id: int | None, method: str, params: dict | None = None) -> bytes:
    """One JSON-RPC line as a client writes it (no id: a notification)."""
    body: dict = {"jsonrpc": "2.0", "method": method}
    if msg_id is not None:
        body["id"] = msg_id
    if params is not None:
        body["params"] = params
    return json.dumps(body).encode() + b"\n"


def tool_line(msg_id: int, tool: str, **arguments: Any) -> bytes:
    return message(msg_id, "tools/call", {"name": tool, "arguments": arguments})


def raw_exchange(workspace: Path, stdin: bytes, expected: set, timeout: float = 90) -> tuple[dict, bytes, str]:
    """Write ``stdin`` to a real `ctx-lsp mcp`, read its stdout until every ``expected`` id has a
    reply (each line checked to be JSON-RPC), then close stdin as a leaving client does. Returns
    the replies by id, what stdout carried after stdin closed, and stderr."""
    params = server_params(workspace)
    proc = subprocess.Popen(
        [params.command, *params.args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=params.env,
        cwd=params.cwd,
    )
    killer = threading.Timer(timeout, proc.kill)
    killer.start()
    replies: dict = {}
    try:
        assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
        proc.stdin.write(stdin)
        proc.stdin.flush()
        while not expected <= set(replies):  # a client waits for its answers before it leaves
            line = proc.stdout.readline()
            assert line, f"stdout ended; replies {sorted(replies, key=str)}"
            reply = json.loads(line)  # each line is JSON ...
            assert reply.get("jsonrpc") == "2.0"  # ... and JSON-RPC
            if "id" in reply:
                replies[reply["id"]] = reply
        proc.stdin.close()  # the client leaves: the server ends, and writes nothing more
        rest, err = proc.stdout.read(), proc.stderr.read().decode()
        assert proc.wait(15) == 0, err
    finally:
        killer.cancel()
        proc.kill()
    return replies, rest, err
