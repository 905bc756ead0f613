"""Running a service until SIGINT/SIGTERM or a fatal task failure, then stopping it gracefully."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
from typing import Protocol

from ksched.service.tasks import TaskGroup

log = logging.getLogger(__name__)

FAILED_EXIT_CODE = 1
"""Exit status of a service stopped by the crash of one of its tasks."""


class Service(Protocol):
    tasks: TaskGroup

    async def start(self) -> None: ...

    async def stop(self) -> None: ...


async def serve(service: Service, stop: asyncio.Event | None = None) -> int:
    """``start()``, wait for ``stop`` (set by SIGINT/SIGTERM too) or a fatal task failure, ``stop()``.

    Returns the exit status: 0 after a requested stop, :data:`FAILED_EXIT_CODE` when a task crashed
    (it was logged with its name by the TaskGroup)."""
    stop = stop or asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop.set)
    try:
        await service.start()
        try:
            waiters = {asyncio.create_task(stop.wait()), asyncio.create_task(service.tasks.failed.wait())}
            await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
            for waiter in waiters:
                waiter.cancel()
        finally:
            await service.stop()
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.remove_signal_handler(sig)
    if service.tasks.failed.is_set():
        log.error("stopped after the failure of a task: %r", service.tasks.failure)
        return FAILED_EXIT_CODE
    return 0
