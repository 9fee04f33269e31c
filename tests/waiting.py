"""One way to wait in a test: for a condition, polled, with a deadline — never a bare sleep that
hopes the work is done."""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable

STEP_SECONDS = 0.05


async def eventually(check: Callable[[], bool | Awaitable[bool]], timeout: float = 10.0, what: str = "") -> float:
    """Wait until ``check()`` (a function or a coroutine function) is true; the seconds it took.
    AssertionError after ``timeout`` seconds."""
    t0 = time.perf_counter()
    while True:
        result = check()
        if inspect.isawaitable(result):
            result = await result
        if result:
            return time.perf_counter() - t0
        if time.perf_counter() - t0 > timeout:
            raise AssertionError(f"not within {timeout} s{f': {what}' if what else ''}")
        await asyncio.sleep(STEP_SECONDS)


def until(check: Callable[[], bool], timeout: float = 10.0, what: str = "") -> float:
    """``eventually`` for code without an event loop."""
    t0 = time.perf_counter()
    while not check():
        if time.perf_counter() - t0 > timeout:
            raise AssertionError(f"not within {timeout} s{f': {what}' if what else ''}")
        time.sleep(STEP_SECONDS)
    return time.perf_counter() - t0
