"""The one host every long-running face serves a workspace with (ctx_lsp/hosting.py): a save under
`ctx-lsp wrap`'s gateway makes its capsule stale, and closing while search is being prepared
never crashes, whenever it comes; what start-up built is set apart from the garbage collector; a
warm-up that fails costs only time."""

from __future__ import annotations

import asyncio
import gc
import logging
import random
from pathlib import Path

import pytest

from ctx_lsp.config import GatewayConfig
from ctx_lsp.engine import Engine
from ctx_lsp.gateway.options import resolve
from ctx_lsp.gateway.thread import GatewayThread
from ctx_lsp.hosting import WorkspaceHost
from tests.waiting import until
from tests.workspaces import copy_sample

NOWHERE = "http://127.0.0.1:9"  # no request is sent in these tests: the upstream is never reached


def test_a_save_under_wraps_gateway_makes_its_capsule_stale(tmp_path: Path) -> None:
    ws = copy_sample(tmp_path / "ws")
    options = resolve(
        GatewayConfig(), listen="127.0.0.1:0", openai_upstream=NOWHERE + "/v1", anthropic_upstream=NOWHERE
    )
    gateway = GatewayThread(ws, options)
    gateway.start()
    try:
        capsules = gateway.call(lambda s: s.capsules())
        assert capsules and not any(c.stale for c in capsules)  # made at start-up, like the editor's server
        path = capsules[0].path
        with (ws / path).open("a") as f:
            f.write("\n\ndef added_by_the_assistant():\n    return 42\n")

        def stale() -> bool:
            return any(c.stale for c in gateway.call(lambda s: s.capsules()) if c.path == path)

        until(stale, what=f"{path}'s capsule marked stale")
        assert [c.path for c in gateway.call(lambda s: s.capsules()) if c.stale] == [path]
    finally:
        gateway.stop()


async def test_closing_while_search_is_being_prepared_never_crashes(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    ws = copy_sample(tmp_path / "ws")
    told: list[str] = []
    during = 0  # closes that came while the preparation was still queued or running
    rng = random.Random(34)
    caplog.set_level(logging.WARNING, logger="ctx_lsp")
    for _ in range(300):
        host = WorkspaceHost()
        await host.open(lambda: Engine(ws))
        await host.start(told.append)
        prepared = host.search_prepared
        assert prepared is not None
        await asyncio.sleep(rng.choice((0, 0, 0.0005, 0.001, 0.002, 0.004)))
        during += not prepared.done()
        await host.close()
        assert prepared.done() and not host.serving
    assert during >= 30, during  # the race was run, not only its easy side
    assert told == []
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []


async def test_what_start_up_built_is_not_walked_by_each_full_collection(tmp_path: Path) -> None:
    """A full collection walked the engine's whole state each time (30-50 ms in a gateway on the
    sympy tree, every thread held): once start-up is over it is set apart, and given back on close."""
    host = WorkspaceHost()
    await host.open(lambda: Engine(copy_sample(tmp_path / "ws")))
    try:
        await host.start(lambda message: None)
        assert host.search_prepared is not None
        await host.search_prepared
        engine = host.engine
        assert engine is not None and gc.get_freeze_count() > 0
        # and what every first plan built (the scaffold: a gateway's first request waited 30-40 ms
        # for it on sympy) was built at start-up
        assert engine._scaffold_cache is not None
        assert not any(o is engine for o in gc.get_objects())  # not in any generation a collection walks
    finally:
        await host.close()
    assert gc.get_freeze_count() == 0 and any(o is engine for o in gc.get_objects())


async def test_a_warm_up_that_fails_costs_only_time(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # building what every first plan needs at start-up is an optimisation: when it fails, the
    # workspace is served as before, and nothing says its indexing failed
    def broken(self: Engine) -> None:
        raise RuntimeError("no scaffold today")

    monkeypatch.setattr(Engine, "warm", broken)
    told: list[str] = []
    host = WorkspaceHost()
    await host.open(lambda: Engine(copy_sample(tmp_path / "ws")))
    try:
        summary = await host.start(told.append)
        assert "symbols in" in summary and told == [] and host.ready.is_set()
        assert host.engine is not None and host.engine._scaffold_cache is None
    finally:
        await host.close()
