"""Named, guarded tasks (kopf style): a crash is logged with the task's name and either restarts
the task after a pause or stops the service, never vanishes silently.

Two kinds: long-running loops (:meth:`TaskGroup.spawn`: the service's watch, flush, fetch ...
loops) and short background jobs (:meth:`TaskGroup.job`: one assume, one API write), which a
graceful stop lets finish (:meth:`TaskGroup.cancel_all` with ``drain``)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine
from typing import Any

from ksched.aio import RECANCEL_SECONDS

log = logging.getLogger(__name__)

TaskFactory = Callable[[], Coroutine[Any, Any, None]]


class TaskGroup:
    """Supervises the service's background tasks; ``failed`` is set when a fatal one dies."""

    def __init__(self) -> None:
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self._jobs: set[asyncio.Task[None]] = set()
        self.failed = asyncio.Event()
        self.failure: BaseException | None = None

    def spawn(self, name: str, factory: TaskFactory, *, restart: bool = False, pause: float = 1.0) -> None:
        """Run ``factory()`` as task ``name``; with ``restart`` a crash restarts it after ``pause``."""
        self._tasks[name] = asyncio.create_task(self._guard(name, factory, restart, pause), name=name)

    def job(self, name: str, coro: Coroutine[Any, Any, Any]) -> asyncio.Task[None]:
        """Run ``coro`` once in the background as task ``name``: tracked until it ends, and fatal when
        it raises (a job handles its expected failures itself; what escapes is a bug)."""
        task = asyncio.create_task(self._guard_job(name, coro), name=name)
        self._jobs.add(task)
        task.add_done_callback(self._jobs.discard)
        return task

    def _fail(self, name: str, failure: BaseException, what: str) -> None:
        log.error("task %s %s; stopping the service", name, what, exc_info=failure)
        if self.failure is None:
            self.failure = failure
        self.failed.set()

    async def _guard_job(self, name: str, coro: Coroutine[Any, Any, Any]) -> None:
        try:
            await coro
        except asyncio.CancelledError as exc:
            task = asyncio.current_task()
            if task is None or task.cancelling():
                raise
            self._fail(name, RuntimeError(f"unexpected cancellation: {exc!r}"), "was cancelled unexpectedly")
        except Exception as exc:
            self._fail(name, exc, "failed")

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
                    self._fail(name, failure, "was cancelled unexpectedly")
                    return
                log.error("task %s was cancelled unexpectedly; restarting in %.1fs", name, pause)
                await asyncio.sleep(pause)
            except Exception as exc:
                if not restart:
                    self._fail(name, exc, "failed")
                    return
                log.exception("task %s failed; restarting in %.1fs", name, pause)
                await asyncio.sleep(pause)

    def names(self) -> list[str]:
        return [n for n, t in self._tasks.items() if not t.done()]

    @property
    def jobs(self) -> int:
        """Background jobs still running."""
        return len(self._jobs)

    async def drain(self, timeout: float) -> None:
        """Wait up to ``timeout`` seconds for the background jobs under way (graceful stop)."""
        if self._jobs:
            await asyncio.wait(set(self._jobs), timeout=timeout)

    async def cancel_all(
        self, timeout: float = 5.0, recancel_every: float = RECANCEL_SECONDS, drain: float = 0.0
    ) -> None:
        """Cancel every loop, let the jobs under way finish for up to ``drain`` seconds, cancel
        what is left and wait up to ``timeout`` for it all to end.

        A task still running is cancelled again every ``recancel_every`` seconds: on Python 3.11 a
        library's ``asyncio.wait_for`` can swallow a cancellation that races with its result."""
        loops = {t for t in self._tasks.values() if not t.done()}
        if drain > 0 and self._jobs:
            for t in loops:
                t.cancel()
            await self.drain(drain)
        pending = loops | {t for t in self._jobs if not t.done()}
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
