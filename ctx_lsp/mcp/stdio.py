"""The MCP server's stdio transport (the SDK's), with every line it cannot take answered.

The SDK drops a line that is not a valid JSON-RPC message (not JSON, no method, ``params: 5``,
``jsonrpc: "1.0"``): a client that sent a request with an id would wait for an answer forever.
Lines are screened before the SDK reads them: one that is not valid is answered here — a parse
error (id null) when it is not JSON, an invalid request with its id otherwise — and never
reaches the SDK."""

from __future__ import annotations

import contextlib
import json
import sys
from typing import Any

import anyio
import mcp_types as types
from mcp.server import stdio as sdk_stdio
from mcp.server.mcpserver import MCPServer
from mcp.shared.message import SessionMessage


class ScreenedLines:
    """The lines of stdin, as the SDK's reader iterates them, without the invalid ones."""

    def __init__(self, lines: Any) -> None:
        self._lines = lines.__aiter__()  # one iterator: its lines are read once, in order
        self.answers: Any = None  # the SDK's write stream, once it is open
        self.ready = anyio.Event()

    def __aiter__(self) -> ScreenedLines:
        return self

    async def __anext__(self) -> str:
        while True:
            line = await self._lines.__anext__()  # StopAsyncIteration at the end of stdin
            if not line.strip():
                continue
            error = rejected(line)
            if error is None:
                return line
            await self.ready.wait()
            await self.answers.send(SessionMessage(error))


def rejected(line: str) -> types.JSONRPCError | None:
    """The answer to a line the SDK cannot take; None for a valid message."""
    try:
        types.jsonrpc_message_adapter.validate_json(line, by_name=False)
        return None
    except Exception:  # pydantic's, or a JSON error: told below in our own words
        pass
    try:
        data = json.loads(line)
    except ValueError:
        return _error(None, types.PARSE_ERROR, "Parse error: the line is not JSON")
    ident = data.get("id") if isinstance(data, dict) else None
    if isinstance(ident, bool) or not isinstance(ident, int | str):
        ident = None
    return _error(
        ident,
        types.INVALID_REQUEST,
        'Invalid request: a JSON-RPC 2.0 request has "jsonrpc": "2.0", an "id" (a number or a string), '
        'a "method" (a string) and, if any, "params" (an object)',
    )


def _error(ident: int | str | None, code: int, message: str) -> types.JSONRPCError:
    return types.JSONRPCError(jsonrpc="2.0", id=ident, error=types.ErrorData(code=code, message=message))


async def serve_stdio(server: MCPServer) -> None:
    """``server.run_stdio_async()``, with the lines screened."""
    buffer, release = _claimed_stdin()
    text = sdk_stdio._UnownedTextWrapper(buffer, encoding="utf-8", errors="replace")  # never closes stdin
    lines = ScreenedLines(anyio.wrap_file(text))
    try:
        async with sdk_stdio.stdio_server(stdin=lines) as (read_stream, write_stream):  # type: ignore[arg-type]
            lines.answers = write_stream
            lines.ready.set()
            low = server._lowlevel_server  # what run_stdio_async runs
            await low.run(read_stream, write_stream, low.create_initialization_options())
    finally:
        if release is not None:
            release()


def _claimed_stdin() -> tuple[Any, Any]:
    """stdin's buffer, fd 0 pointed at the null device meanwhile (as the SDK does when it opens
    stdin itself: a child process reads EOF, never the protocol)."""
    with contextlib.suppress(Exception):
        return sdk_stdio._claim_fd(0, sys.stdin, "rb", sdk_stdio._open_stdin_diversion)
    return sys.stdin.buffer, None
