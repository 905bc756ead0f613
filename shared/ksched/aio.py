"""asyncio helpers that keep a caller's cancellation intact (Python 3.11 needs care here).

``task.cancel(); with suppress(CancelledError): await task`` also swallows a cancellation of the
*caller* that arrives while it waits, and ``asyncio.wait_for`` on 3.11 drops a cancellation that
races with the inner awaitable finishing: either leaves a task that was told to stop running on.
Use :func:`cancel_and_wait` for the first and ``async with asyncio.timeout(...)`` for the second.
"""

from __future__ import annotations

import asyncio
from typing import Any


async def cancel_and_wait(task: asyncio.Future[Any]) -> None:
    """Cancel ``task`` and wait until it has finished.

    A cancellation of the caller while it waits propagates; an exception the task ended with
    (other than being cancelled) is raised, as ``await task`` would."""
    task.cancel()
    await asyncio.wait([task])
    if not task.cancelled():
        task.result()
