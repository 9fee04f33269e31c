"""The gateway in the test's event loop, over a copy of the sample workspace, in front of a fake
upstream: real HTTP on loopback both ways, the real engine and store, engine work on one worker
thread as in ``ctx-lsp gateway``."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ctx_lsp.engine import Engine
from ctx_lsp.gateway.options import GatewayOptions
from ctx_lsp.gateway.proxy import Gateway
from ctx_lsp.sessions.engine import SessionEngine
from tests.gateway.fake_upstream import FakeUpstream

KEY = "sk-test-SECRET-4f9a2c7e"  # a key no byte of the store or the log may contain

# the context is added whatever it costs (by default, light mode adds only what savings paid for)
PAID_CONTEXT = '[gateway]\ncontext_cost = "always"\n'

# a model with a small window, so a short test conversation overflows it
TINY_MODEL = """
[[models]]
name = "tiny-model"
context_length = 6000
max_output = 500
"""


@dataclass
class Running:
    url: str
    up: FakeUpstream
    gateway: Gateway
    sessions: SessionEngine
    workspace: Path

    @property
    def openai_url(self) -> str:
        return self.url + "/v1"

    async def call(self, fn: Any, *args: Any) -> Any:
        return await self.gateway.run(fn, *args)


@contextlib.asynccontextmanager
async def running_gateway(workspace: Path, mode: str | None = None, token: str | None = None) -> AsyncIterator[Running]:
    loop = asyncio.get_running_loop()
    worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="test-engine")

    def run(fn: Any, *args: Any) -> asyncio.Future:  # queued now, in call order
        return loop.run_in_executor(worker, lambda: fn(*args))

    def open_engine() -> SessionEngine:
        engine = Engine(workspace)
        engine.refresh_index()
        return SessionEngine(engine)

    sessions = await run(open_engine)
    async with FakeUpstream() as up:
        options = GatewayOptions(
            host="127.0.0.1",
            port=0,
            openai_upstream=up.openai_url,
            anthropic_upstream=up.anthropic_url,
            mode=mode,  # type: ignore[arg-type]
            token=token,
        )
        gateway = Gateway(sessions, options, run)
        url = await gateway.start()
        try:
            yield Running(url=url, up=up, gateway=gateway, sessions=sessions, workspace=workspace)
        finally:
            await gateway.close()
            await run(sessions.close)
            worker.shutdown(wait=True)
