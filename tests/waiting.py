"""One way to wait in a test: for a condition, polled, with a deadline — never a bare sleep that
hopes the work is done by then."""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

T = TypeVar("T")
STEP_SECONDS = 0.02
TIMEOUT_SECONDS = 15.0  # generous: a loaded machine is slow; how fast is a benchmark's to say


async def eventually(check: Callable[[], T | Awaitable[T]], timeout: float = TIMEOUT_SECONDS, what: str = "") -> T:
    """The first truthy value of ``check()`` (a function or a coroutine function), polled;
    AssertionError after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if inspect.isawaitable(value):
            value = await value
        if value:
            return value  # type: ignore[return-value]
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout} s{f': {what}' if what else ''}")
        await asyncio.sleep(STEP_SECONDS)


def until(check: Callable[[], T], timeout: float = TIMEOUT_SECONDS, what: str = "") -> T:
    """``eventually`` for a test without an event loop."""
    deadline = time.monotonic() + timeout
    while not (value := check()):
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout} s{f': {what}' if what else ''}")
        time.sleep(STEP_SECONDS)
    return value
