"""Running a service until SIGINT/SIGTERM or a fatal task failure, then stopping it gracefully."""

from __future__ import annotations

import asyncio
import contextlib
import signal
from typing import Protocol

from ksched.service.tasks import TaskGroup


class Service(Protocol):
    tasks: TaskGroup

    async def start(self) -> None: ...

    async def stop(self) -> None: ...


async def serve(service: Service, stop: asyncio.Event) -> None:
    """``start()``, wait for ``stop`` (set by SIGINT/SIGTERM too) or a fatal task failure, ``stop()``."""
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(sig, stop.set)
    await service.start()
    try:
        waiters = {asyncio.create_task(stop.wait()), asyncio.create_task(service.tasks.failed.wait())}
        await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
        for waiter in waiters:
            waiter.cancel()
    finally:
        await service.stop()
