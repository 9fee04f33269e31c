"""The gateway inside the language server: with ``gateway.listen`` in the configuration, the
editor's own ``ctx-lsp serve`` runs it — same process, same engine and worker, same event loop —
so the meter and the Context tree follow every request an assistant sends
(``ctx/gatewayRequest``, then the session's ``ctx/budgetChanged``)."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from ctx_lsp.engine import UserError
from ctx_lsp.gateway.options import resolve
from ctx_lsp.gateway.proxy import Gateway
from ctx_lsp.gateway.status import GatewayRecord
from ctx_lsp.server import convert
from ctx_lsp.server.ctx_server import CtxServer

log = logging.getLogger("ctx_lsp.server")


async def start(ls: CtxServer) -> None:
    config = ls.sessions.engine.config.gateway
    if not config.listen or ls.gateway is not None:
        return
    try:
        options = resolve(config)
    except UserError as err:
        ls.warn(f"gateway not started: {err}")
        return
    loop = asyncio.get_running_loop()

    def run(fn: Any, *args: Any) -> asyncio.Future:  # queued on the server's engine worker, in call order
        return loop.run_in_executor(ls.worker, lambda: fn(*args))

    def on_record(record: GatewayRecord) -> None:
        ls.notify("ctx/gatewayRequest", convert.gateway_request(record))
        if record.session is not None and record.plan_id is not None:
            ls.spawn(_meter(ls, record.session))

    gateway = Gateway(ls.sessions, options, run, on_record)
    try:
        url = await gateway.start()
    except OSError as err:
        ls.warn(f"gateway not started: cannot listen on {config.listen}: {err.strerror or err}")
        await gateway.close()
        return
    ls.gateway = gateway
    log.info("gateway listening on %s", url)


async def _meter(ls: CtxServer, session: str) -> None:
    try:
        ls.notify("ctx/budgetChanged", convert.meter(await ls.run(ls.sessions.meter, session)))
    except Exception:
        log.exception("gateway: meter update failed")


async def stop(ls: CtxServer) -> None:
    gateway, ls.gateway = ls.gateway, None
    if gateway is not None:
        await gateway.close()
