"""``ctx-lsp mcp``: the MCP server on stdio over one workspace — served at once, the index
refreshed in the background (tools wait for it) and then kept current by the file watcher,
engine work on one worker thread. stdout carries the protocol and nothing else; logs go to
stderr. The session is the editor's default one unless ``--session`` names another, so pins
are shared both ways."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import sys
import threading
from concurrent.futures import ThreadPoolExecutor

from ctx_lsp.engine import Engine
from ctx_lsp.mcp.server import Face, build_server
from ctx_lsp.mcp.stdio import serve_stdio
from ctx_lsp.sessions import SessionEngine
from ctx_lsp.workspace.watch import WorkspaceWatcher, drained

log = logging.getLogger("ctx_lsp.mcp")
EXIT_GRACE_SECONDS = 2.0  # a refresh still running at exit (a big tree) does not hold the process
CLOSE_TIMEOUT_SECONDS = 10.0


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
    worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ctx-engine")
    indexer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ctx-index")
    face = Face(session, worker)
    server = build_server(face)
    watchers: list[WorkspaceWatcher] = []
    opened = asyncio.create_task(_open(face, engine, indexer, watchers), name="ctx-open")
    try:
        await serve_stdio(server)
    finally:
        if not opened.done():  # the client left during start-up: stop it where it is
            opened.cancel()
        with contextlib.suppress(Exception, asyncio.CancelledError):
            await opened
        for watcher in watchers:
            await watcher.close()
        sessions = face.sessions
        loop = asyncio.get_running_loop()
        engine.index.stop()  # a refresh still running ends after its current file
        try:  # the stores close once no thread uses them (after the call in flight)
            await asyncio.wait_for(drained(indexer), CLOSE_TIMEOUT_SECONDS)
            close = sessions.close if sessions is not None else engine.close
            await asyncio.wait_for(loop.run_in_executor(worker, close), CLOSE_TIMEOUT_SECONDS)
        except TimeoutError:
            log.warning("the engine was still busy at exit; its store closes with the process")
        worker.shutdown(wait=False)
        indexer.shutdown(wait=False, cancel_futures=True)
    return 0


async def _open(face: Face, engine: Engine, indexer: ThreadPoolExecutor, watchers: list[WorkspaceWatcher]) -> None:
    """Open the memory store and the session, refresh the index, then watch the files; the
    tools wait for ``face.ready``. Capsules for the central modules are made afterwards."""
    loop = asyncio.get_running_loop()
    try:
        sessions = await loop.run_in_executor(face.worker, SessionEngine, engine)
        await loop.run_in_executor(face.worker, sessions.open_session, face.session)
    except Exception as err:
        log.exception("cannot open the workspace")
        face.failure = f"ctx-lsp cannot open the workspace {engine.root}: {err}"
        face.ready.set()
        return
    face.sessions = sessions
    for message in sessions.startup_messages():
        log.warning("%s", message)
    try:
        stats = await loop.run_in_executor(indexer, lambda: engine.refresh_index(apart=True))  # see build.refresh
        log.info(
            "serving %s (session %s): %d symbols in %d files (%.1f s)",
            engine.root,
            face.session,
            stats.symbols,
            stats.files_seen,
            stats.seconds,
        )
        recovered = engine.index.take_recovered()
        if recovered:
            log.warning("%s", recovered)
    except Exception:  # the tools answer from the index as it is
        log.exception("indexing failed")
    finally:
        face.ready.set()

    async def saved(rels: list[str]) -> None:
        for rel in rels:  # a capsule whose code changed is stale from now on
            await loop.run_in_executor(face.worker, sessions.file_saved, rel)

    watcher = WorkspaceWatcher(engine.root, engine.index, indexer, on_files=saved)
    watchers.append(watcher)
    watcher.start()
    await loop.run_in_executor(indexer, engine.prepare_search)
    try:
        await loop.run_in_executor(indexer, sessions.ensure_capsules)
    except Exception:
        log.exception("making capsules failed")
