"""``ctx-lsp gateway``: the gateway on its own, over one workspace served by a
``hosting.WorkspaceHost`` — the index refreshed at start and kept current by the file watcher,
capsules, engine work on one worker thread."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import sys
from pathlib import Path

from ctx_lsp.engine import Engine
from ctx_lsp.gateway.options import GatewayOptions, address_of
from ctx_lsp.gateway.proxy import Gateway
from ctx_lsp.hosting import WorkspaceHost

log = logging.getLogger("ctx_lsp.gateway")


def serve_gateway(root: Path, options: GatewayOptions, engine: Engine | None = None) -> int:
    logging.basicConfig(stream=sys.stderr, level=logging.INFO, format="%(message)s")
    return asyncio.run(_main(root, options, engine))


def _tell(message: str) -> None:
    log.warning("ctx-lsp: %s", message)


async def _main(root: Path, options: GatewayOptions, engine: Engine | None) -> int:
    loop = asyncio.get_running_loop()
    host = WorkspaceHost()
    sessions = await host.open(lambda: engine or Engine(root))
    await host.start(_tell)
    gateway = Gateway(sessions, options, host.run)
    stop = asyncio.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(sig, stop.set)
    try:
        url = await gateway.start()
    except OSError as err:
        log.error("ctx-lsp: cannot listen on %s: %s", address_of(options.host, options.port), err.strerror or err)
        await host.close()
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
        await host.close()
    return 0
