"""A real `ctx-lsp mcp` over stdio, driven with the MCP SDK's own client."""

from __future__ import annotations

import contextlib
import os
import sys
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
