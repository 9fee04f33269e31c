"""The gateway on a thread of its own (its own event loop, and a ``hosting.WorkspaceHost`` with
its engine worker, watcher and capsules), for a process whose main thread has other work:
``ctx-lsp wrap`` runs the assistant there."""

from __future__ import annotations

import asyncio
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from ctx_lsp.engine import Engine
from ctx_lsp.gateway.options import GatewayOptions
from ctx_lsp.gateway.proxy import Gateway
from ctx_lsp.gateway.status import Status
from ctx_lsp.hosting import WorkspaceHost
from ctx_lsp.sessions import SessionEngine

T = TypeVar("T")


class GatewayThread:
    def __init__(self, root: Path, options: GatewayOptions, engine: Engine | None = None) -> None:
        self.root, self.options, self._engine = root, options, engine
        self.url: str | None = None
        self.status: Status | None = None
        self.error: BaseException | None = None
        self.host: WorkspaceHost | None = None  # while it serves
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

    def call(self, fn: Callable[[SessionEngine], T], timeout: float = 30) -> T:
        """``fn(sessions)`` on the engine's worker, from another thread, once started."""
        host, loop = self.host, self._loop
        if host is None or host.sessions is None or loop is None:
            raise RuntimeError("the gateway is not serving")
        sessions = host.sessions

        async def ask() -> T:
            return await host.run(fn, sessions)

        return asyncio.run_coroutine_threadsafe(ask(), loop).result(timeout)

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
        self._loop, self._stop = asyncio.get_running_loop(), asyncio.Event()
        self.host = host = WorkspaceHost()
        try:
            sessions = await host.open(lambda: self._engine or Engine(self.root))
            await host.start(_tell)
            gateway = Gateway(sessions, self.options, host.run)
            try:
                self.url = await gateway.start()
                self.status = gateway.status
                self._ready.set()
                await self._stop.wait()
            finally:
                await gateway.close()
        finally:
            await host.close()


def _tell(message: str) -> None:
    """Said before the assistant starts (the start-up is over when ``start`` returns)."""
    print(f"ctx-lsp: {message}", file=sys.stderr)
