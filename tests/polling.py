"""Waiting in tests for a positive signal: :func:`until` polls a check until it holds."""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Callable
from typing import Any


async def until(
    check: Callable[[], Any], timeout: float = 10.0, interval: float = 0.02, what: str = "condition"
) -> Any:
    """Call ``check`` (awaiting its result when that is awaitable) every ``interval`` seconds until the
    result is truthy, and return it; AssertionError naming ``what`` and the last result after
    ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        result = check()
        if inspect.isawaitable(result):
            result = await result
        if result:
            return result
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} not reached in {timeout}s; last value: {result!r}")
        await asyncio.sleep(interval)
