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

    async def cancel_all(self, timeout: float = 5.0, recancel_every: float = 0.25) -> None:
        """Cancel every task and wait up to ``timeout`` for them to end.

        A task still running is cancelled again every ``recancel_every`` seconds: on Python 3.11 a
        library's ``asyncio.wait_for`` can swallow a cancellation that races with its result."""
        pending = {t for t in self._tasks.values() if not t.done()}
        deadline = asyncio.get_running_loop().time() + timeout
        while pending:
            for t in pending:
                t.cancel()
            remaining = deadline - asyncio.get_running_loop().time()
            if remaining <= 0:
                log.warning("tasks still running after %.1fs of cancelling: %s", timeout, _names(pending))
                break
            _, pending = await asyncio.wait(pending, timeout=min(recancel_every, remaining))
        self._tasks.clear()


def _names(tasks: set[asyncio.Task[None]]) -> str:
    return ", ".join(sorted(t.get_name() for t in tasks))
