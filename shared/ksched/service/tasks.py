"""Named, guarded long-running tasks (kopf style): a crash is logged with the task's name and
either restarts the task after a pause or stops the service, never vanishes silently."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine
from typing import Any

log = logging.getLogger(__name__)

TaskFactory = Callable[[], Coroutine[Any, Any, None]]


class TaskGroup:
    """Supervises the service's background tasks; ``failed`` is set when a fatal one dies."""

    def __init__(self) -> None:
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self.failed = asyncio.Event()
        self.failure: BaseException | None = None

    def spawn(self, name: str, factory: TaskFactory, *, restart: bool = False, pause: float = 1.0) -> None:
        """Run ``factory()`` as task ``name``; with ``restart`` a crash restarts it after ``pause``."""
        self._tasks[name] = asyncio.create_task(self._guard(name, factory, restart, pause), name=name)

    async def _guard(self, name: str, factory: TaskFactory, restart: bool, pause: float) -> None:
        while True:
            try:
                await factory()
                return
            except asyncio.CancelledError as exc:
                task = asyncio.current_task()
                if task is None or task.cancelling():
                    raise  # a real cancellation (shutdown)
                # A library raised CancelledError without anyone cancelling us: treat it as a crash.
                failure: Exception = RuntimeError(f"unexpected cancellation: {exc!r}")
                if not restart:
                    log.error("task %s was cancelled unexpectedly; stopping the service", name)
                    self.failure = failure
                    self.failed.set()
                    return
                log.error("task %s was cancelled unexpectedly; restarting in %.1fs", name, pause)
                await asyncio.sleep(pause)
            except Exception as exc:
                if not restart:
                    log.exception("task %s failed; stopping the service", name)
                    self.failure = exc
                    self.failed.set()
                    return
                log.exception("task %s failed; restarting in %.1fs", name, pause)
                await asyncio.sleep(pause)

    def names(self) -> list[str]:
        return [n for n, t in self._tasks.items() if not t.done()]

    async def cancel_all(self, timeout: float = 5.0) -> None:
        tasks = list(self._tasks.values())
        for t in tasks:
            t.cancel()
        if tasks:
            await asyncio.wait(tasks, timeout=timeout)
        self._tasks.clear()
