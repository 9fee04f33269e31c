"""``ctx-lsp mcp``: the MCP server on stdio over one workspace — served at once, the workspace's
host (``hosting.WorkspaceHost``) started in the background (tools wait for its refresh): the
index kept current by the file watcher, capsules, engine work on one worker thread. stdout
carries the protocol and nothing else; logs go to stderr. The session is the editor's default
one unless ``--session`` names another, so pins are shared both ways."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import sys
import threading

from ctx_lsp.engine import Engine
from ctx_lsp.hosting import WorkspaceHost
from ctx_lsp.mcp.server import Face, build_server
from ctx_lsp.mcp.stdio import serve_stdio

log = logging.getLogger("ctx_lsp.mcp")
EXIT_GRACE_SECONDS = 2.0  # a refresh still running at exit (a big tree) does not hold the process


def serve_mcp(engine: Engine, session: str) -> int:
    """Serve until the client closes stdin; the process's exit code."""
    logging.basicConfig(stream=sys.stderr, level=logging.INFO, format="ctx-lsp mcp: %(message)s")
    logging.getLogger("mcp").setLevel(logging.WARNING)  # a rejected argument is the agent's to read, not a log line
    code = asyncio.run(_main(engine, session))
    watchdog = threading.Timer(EXIT_GRACE_SECONDS, os._exit, (code,))
    watchdog.daemon = True
    watchdog.start()
    return code


async def _main(engine: Engine, session: str) -> int:
    host = WorkspaceHost()
    face = Face(session, host.worker)
    server = build_server(face)
    opened = asyncio.create_task(_open(face, host, engine), name="ctx-open")
    try:
        await serve_stdio(server)
    finally:
        if not opened.done():  # the client left during start-up: stop it where it is
            opened.cancel()
        with contextlib.suppress(Exception, asyncio.CancelledError):
            await opened
        await host.close()
    return 0


async def _open(face: Face, host: WorkspaceHost, engine: Engine) -> None:
    """Open the memory store and the session, then start the host; the tools wait for
    ``face.ready`` (the refresh done, or the workspace found unusable and said why)."""
    try:
        face.sessions = await host.open(lambda: engine, face.session)
    except Exception:
        log.exception("cannot open the workspace")
        face.failure = host.failure
        face.ready.set()
        return
    log.info("serving %s (session %s)", engine.root, face.session)
    try:
        await host.start(lambda message: log.warning("%s", message))
    finally:
        face.ready.set()
