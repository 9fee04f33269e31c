"""``ctx-lsp gateway``: the gateway on its own, over one workspace — the index refreshed at
start and kept current by the file watcher, engine work on one worker thread."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from ctx_lsp.engine import Engine
from ctx_lsp.gateway.options import GatewayOptions
from ctx_lsp.gateway.proxy import Gateway
from ctx_lsp.sessions.engine import SessionEngine
from ctx_lsp.workspace.watch import WorkspaceWatcher

log = logging.getLogger("ctx_lsp.gateway")


def serve_gateway(root: Path, options: GatewayOptions, engine: Engine | None = None) -> int:
    logging.basicConfig(stream=sys.stderr, level=logging.INFO, format="%(message)s")
    return asyncio.run(_main(root, options, engine))


async def _main(root: Path, options: GatewayOptions, engine: Engine | None) -> int:
    loop = asyncio.get_running_loop()
    worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ctx-engine")
    indexer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ctx-index")

    def run(fn: Any, *args: Any) -> asyncio.Future:  # queued now, in call order
        return loop.run_in_executor(worker, lambda: fn(*args))

    engine = engine or await loop.run_in_executor(worker, Engine, root)
    sessions = await run(SessionEngine, engine)
    for message in sessions.startup_messages():
        log.warning("ctx-lsp: %s", message)
    stats = await loop.run_in_executor(indexer, lambda: engine.refresh_index(apart=True))  # see build.refresh
    log.info("ctx-lsp: index of %s: %d files, %d symbols", engine.root, stats.files_seen, stats.symbols)

    async def saved(rels: list[str]) -> None:
        for rel in rels:  # a capsule whose code changed is stale for the next request
            await run(sessions.file_saved, rel)

    watcher = WorkspaceWatcher(engine.root, engine.index, indexer, on_files=saved)
    watcher.start()
    indexer.submit(engine.prepare_search)  # searches use FTS5 until it is done
    gateway = Gateway(sessions, options, run)
    stop = asyncio.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(sig, stop.set)
    try:
        url = await gateway.start()
    except OSError as err:
        log.error("ctx-lsp: cannot listen on %s:%d: %s", options.host, options.port, err.strerror or err)
        await watcher.close()
        await run(sessions.close)
        return 2
    log.info(
        "ctx-lsp gateway listening on %s (OpenAI: %s/v1, Anthropic: %s) → %s, %s",
        url,
        url,
        url,
        options.openai_upstream,
        options.anthropic_upstream,
    )
    try:
        await stop.wait()
    finally:
        await gateway.close()
        await watcher.close()
        await run(sessions.close)
        worker.shutdown(wait=True)
        indexer.shutdown(wait=True)
    return 0
