"""One bus request for what the scheduler sends in one turn of its event loop: the assumes of the
pods of one pop (each decided, then handed over without waiting) and their lease ends go to the
informer and the queue as one :class:`~ksched.bus.messages.AssumeBatchRequest` or
:class:`~ksched.bus.messages.DoneBatchRequest`. Nothing waits for a batch to fill: an item is sent
with whatever else was submitted before the loop turned, so a lone pod goes out at once."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Generic, TypeVar

T = TypeVar("T")
R = TypeVar("R")

log = logging.getLogger(__name__)


class Batcher(Generic[T, R]):
    """Gathers the items submitted in one loop turn and sends them with ``send`` (one reply per
    item, in order). An item's future gets its reply, or ``send``'s exception."""

    def __init__(self, name: str, send: Callable[[list[T]], Awaitable[list[R]]], limit: int = 256) -> None:
        self.name = name
        self._send = send
        self._limit = limit
        self._items: list[tuple[T, asyncio.Future[R]]] = []
        self._scheduled = False
        self._tasks: set[asyncio.Task[None]] = set()

    def submit(self, item: T) -> asyncio.Future[R]:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[R] = loop.create_future()
        self._items.append((item, future))
        if not self._scheduled:
            self._scheduled = True
            loop.call_soon(self._start)
        return future

    def _start(self) -> None:
        self._scheduled = False
        items, self._items = self._items, []
        for start in range(0, len(items), self._limit):
            task = asyncio.create_task(self._run(items[start : start + self._limit]), name=self.name)
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _run(self, items: list[tuple[T, asyncio.Future[R]]]) -> None:
        try:
            replies = await self._send([item for item, _ in items])
            if len(replies) != len(items):
                raise ValueError(f"{self.name}: {len(replies)} replies to {len(items)} items")
        except asyncio.CancelledError:
            for _, future in items:
                future.cancel()
            raise
        except Exception as exc:
            for _, future in items:
                if not future.done():
                    future.set_exception(exc)
            return
        for (_, future), reply in zip(items, replies, strict=True):
            if not future.done():
                future.set_result(reply)
