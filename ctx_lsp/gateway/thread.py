"""The gateway on a thread of its own (its own event loop, engine worker and watcher), for a
process whose main thread has other work: ``ctx-lsp wrap`` runs the assistant there."""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from ctx_lsp.engine import Engine
from ctx_lsp.gateway.options import GatewayOptions
from ctx_lsp.gateway.proxy import Gateway
from ctx_lsp.gateway.status import Status
from ctx_lsp.sessions.engine import SessionEngine
from ctx_lsp.workspace.watch import WorkspaceWatcher


class GatewayThread:
    def __init__(self, root: Path, options: GatewayOptions, engine: Engine | None = None) -> None:
        self.root, self.options, self._engine = root, options, engine
        self.url: str | None = None
        self.status: Status | None = None
        self.error: BaseException | None = None
        self._ready = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._thread = threading.Thread(target=self._main, name="ctx-gateway", daemon=True)

    def start(self, timeout: float = 120) -> str:
        """Start, index, listen; returns the base URL. Raises what stopped it."""
        self._thread.start()
        if not self._ready.wait(timeout):
            raise TimeoutError("the gateway did not start in time")
        if self.error is not None:
            raise self.error
        assert self.url is not None
        return self.url

    def stop(self) -> None:
        if self._loop is not None and self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(30)

    def _main(self) -> None:
        try:
            asyncio.run(self._serve())
        except BaseException as err:  # told to the caller, which runs the assistant anyway
            self.error = err
            self._ready.set()

    async def _serve(self) -> None:
        loop = asyncio.get_running_loop()
        self._loop, self._stop = loop, asyncio.Event()
        worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ctx-engine")
        indexer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ctx-index")

        def run(fn: Any, *args: Any) -> asyncio.Future:
            return loop.run_in_executor(worker, lambda: fn(*args))

        engine = self._engine or await run(Engine, self.root)
        sessions = await run(SessionEngine, engine)
        await loop.run_in_executor(indexer, engine.refresh_index)
        watcher = WorkspaceWatcher(engine.root, engine.index, indexer)
        watcher.start()
        indexer.submit(engine.prepare_search)  # searches use FTS5 until it is done
        gateway = Gateway(sessions, self.options, run)
        try:
            self.url = await gateway.start()
            self.status = gateway.status
            self._ready.set()
            await self._stop.wait()
        finally:
            await gateway.close()
            await watcher.close()
            await run(sessions.close)
            worker.shutdown(wait=True)
            indexer.shutdown(wait=True)
