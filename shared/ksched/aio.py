"""asyncio helpers that keep a caller's cancellation intact (Python 3.11 needs care here).

``task.cancel(); with suppress(CancelledError): await task`` also swallows a cancellation of the
*caller* that arrives while it waits, and hangs for good when the task drops the cancellation:
``asyncio.wait_for`` on 3.11 (which nats-py uses for every request) drops one that races with the
inner awaitable finishing, and nats-py's ``_flush_pending`` swallows one outright. Use
:func:`cancel_and_wait` for the first and ``async with asyncio.timeout(...)`` in our own code for the
second.
"""

from __future__ import annotations

import asyncio
from typing import Any

RECANCEL_SECONDS = 0.25
"""How often :func:`cancel_and_wait` cancels again a task that has not ended yet."""


async def cancel_and_wait(task: asyncio.Future[Any], *, recancel_every: float = RECANCEL_SECONDS) -> None:
    """Cancel ``task`` and wait until it has finished, cancelling it again every ``recancel_every``
    seconds while it runs on (a cancellation a library dropped).

    A cancellation of the caller while it waits propagates; an exception the task ended with
    (other than being cancelled) is raised, as ``await task`` would."""
    while not task.done():
        task.cancel()
        await asyncio.wait([task], timeout=recancel_every)
    if not task.cancelled():
        task.result()
