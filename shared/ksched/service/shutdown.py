"""A service's stop as named steps, each bounded: a stop always ends.

A step that does not end within its time (a library waiting on a peer that never answers, a
cancellation swallowed on the way) is logged by name, cancelled and left behind, and the next step
runs; a step that fails is logged and the next runs too. The process can then exit, and its
successor (or the test's next fixture) is not held up by one stuck connection.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Protocol

log = logging.getLogger(__name__)

STEP_TIMEOUT = 20.0
"""Seconds a step may take by default (a bus close drains for up to 5 s and flushes for up to 10 s)."""
GRACE = 1.0
"""Seconds a timed-out step is given to end once cancelled before it is left behind."""

Step = tuple[str, Callable[[], Awaitable[object]] | None]
"""A step's name and what it awaits; None: nothing to do (a part that never started)."""


async def stop_steps(service: str, steps: Sequence[Step], timeout: float = STEP_TIMEOUT) -> list[str]:
    """Run ``steps`` in order, each within ``timeout`` seconds; returns the names of those that did
    not end in time (empty when all did)."""
    late: list[str] = []
    for name, step in steps:
        if step is None:
            continue
        task = asyncio.ensure_future(step())
        done, _ = await asyncio.wait([task], timeout=timeout)
        if not done:
            late.append(name)
            log.warning("%s: stopping: %s did not end within %.0f s; left behind", service, name, timeout)
            task.cancel()
            await asyncio.wait([task], timeout=GRACE)
            continue
        if not task.cancelled() and task.exception() is not None:
            log.warning("%s: stopping: %s failed: %r", service, name, task.exception())
    return late


class _Closes(Protocol):
    def close(self) -> Awaitable[object]: ...


class _Drains(Protocol):
    def drain(self) -> Awaitable[object]: ...


class _Stops(Protocol):
    def stop(self) -> Awaitable[object]: ...


class _Tasks(Protocol):
    def cancel_all(self, *, drain: float = ...) -> Awaitable[None]: ...


class ReplicaParts(Protocol):
    """What a scheduler or binder replica holds that its stop must end."""

    @property
    def tasks(self) -> _Tasks: ...
    @property
    def results(self) -> _Drains | None: ...
    @property
    def tracer(self) -> _Closes: ...
    @property
    def bus(self) -> _Closes | None: ...
    @property
    def api(self) -> _Closes | None: ...
    @property
    def extenders(self) -> _Closes: ...
    @property
    def health(self) -> _Stops: ...


async def stop_replica(service: str, parts: ReplicaParts) -> list[str]:
    """A replica's stop: its jobs under way finish (up to 5 s: assumes, reports), then its results
    writer, tracer, NATS, API client, extenders and HTTP server, in that order."""
    results, bus, api = parts.results, parts.bus, parts.api
    return await stop_steps(
        service,
        [
            ("tasks", lambda: parts.tasks.cancel_all(drain=5.0)),
            ("results", results.drain if results is not None else None),
            ("tracer", parts.tracer.close),
            ("bus", bus.close if bus is not None else None),
            ("api", api.close if api is not None else None),
            ("extenders", parts.extenders.close),
            ("health", parts.health.stop),
        ],
    )
