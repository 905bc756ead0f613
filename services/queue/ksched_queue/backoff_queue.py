"""The backoffQ: upstream's ``backoffQueue`` (``pkg/scheduler/backend/queue/backoff_queue.go``).
Pure and synchronous, time from an injected :class:`~ksched_queue.clock.Clock`.

A pod that failed an attempt waits ``initial * 2^(n-1)`` seconds (capped at ``max``; ``n`` is its
unschedulable attempts, or its consecutive errors after an error) from the end of that attempt.
With SchedulerPopFromBackoffQ the end is aligned down to the 1 s ordering window, and a backoff
ending within the current window still counts as running. Pods rejected by plugins and pods that
failed with an error (no rejecting plugin) wait in separate heaps, one pair per profile: the first
ordered by backoff end, then the activeQ order (it may be popped from when activeQ is empty), the
second by backoff end, then arrival."""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Iterable, Iterator

from .clock import Clock
from .heap import KeyedHeap
from .queued_pod import QueuedPod

DEFAULT_POD_INITIAL_BACKOFF = 1.0
DEFAULT_POD_MAX_BACKOFF = 10.0
BACKOFF_WINDOW = 1.0
"""Backoff ends are aligned to whole seconds (upstream ``backoffQOrderingWindowDuration``)."""

Less = Callable[[QueuedPod, QueuedPod], bool]


class BackoffQueue:
    """The pods of ``profiles`` waiting out a backoff; ``active_less`` is activeQ's order."""

    def __init__(
        self,
        profiles: Iterable[str],
        active_less: Less,
        *,
        clock: Clock,
        initial: float = DEFAULT_POD_INITIAL_BACKOFF,
        maximum: float = DEFAULT_POD_MAX_BACKOFF,
        pop_from_backoff: bool = True,
    ) -> None:
        if initial < 0 or maximum < 0:
            raise ValueError("pod backoff durations must not be negative")
        self.clock = clock
        self.initial = initial
        self.maximum = maximum
        self.pop_from_backoff = pop_from_backoff
        self._active_less = active_less
        self._rejected: dict[str, KeyedHeap[QueuedPod]] = {}
        self._errors: dict[str, KeyedHeap[QueuedPod]] = {}
        for name in profiles:
            self._rejected[name] = KeyedHeap(_uid, self.less)
            self._errors[name] = KeyedHeap(_uid, self._error_less)

    # --- backoff times ---------------------------------------------------------------------------
    def duration(self, count: int) -> float:
        """``initial * 2^(count-1)`` capped at ``max`` (upstream ``calculateBackoffDuration``)."""
        if count <= 0:
            return 0.0
        shift = count - 1
        if shift >= 64:
            return self.maximum
        return min(self.initial * (1 << shift), self.maximum)

    def align(self, t: float) -> float:
        """Upstream ``alignToWindow`` (only with SchedulerPopFromBackoffQ)."""
        return math.floor(t / BACKOFF_WINDOW) * BACKOFF_WINDOW if self.pop_from_backoff else t

    def backoff_time(self, entry: QueuedPod) -> float:
        """When ``entry``'s backoff ends (0 when it has none); cached until its next attempt ends."""
        if self.maximum == 0:
            return 0.0
        count = entry.info.consecutive_errors or entry.unschedulable_count
        if count == 0:
            return 0.0
        if entry.backoff_expiration is None:
            entry.backoff_expiration = self.align(entry.info.timestamp + self.duration(count))
        return entry.backoff_expiration

    def is_backing_off(self, entry: QueuedPod) -> bool:
        """Still in its backoff (a backoff ending within the current window counts as running)."""
        return not self.backoff_time(entry) < self.align(self.clock.now())

    # --- orderings -------------------------------------------------------------------------------
    def less(self, a: QueuedPod, b: QueuedPod) -> bool:
        """Upstream ``lessBackoffCompletedWithPriority``: backoff end, then activeQ's order."""
        ta, tb = self.backoff_time(a), self.backoff_time(b)
        if ta != tb:
            return ta < tb
        return self._active_less(a, b)

    def _error_less(self, a: QueuedPod, b: QueuedPod) -> bool:
        ta, tb = self.backoff_time(a), self.backoff_time(b)
        return ta < tb or (ta == tb and a.seq < b.seq)

    # --- contents --------------------------------------------------------------------------------
    def add(self, entry: QueuedPod) -> None:
        """Queue ``entry`` (or move it within its heap): rejected by plugins, or after an error."""
        heaps = self._rejected if entry.rejector_plugins else self._errors
        heaps[entry.scheduler_name].add_or_update(entry)

    def update(self, entry: QueuedPod) -> None:
        """``entry`` changed: reorder it in the heap that holds it."""
        heap = self._rejected[entry.scheduler_name]
        if entry.uid not in heap:
            heap = self._errors[entry.scheduler_name]
        heap.add_or_update(entry)

    def delete(self, entry: QueuedPod) -> bool:
        if self._rejected[entry.scheduler_name].delete(entry.uid) is not None:
            return True
        return self._errors[entry.scheduler_name].delete(entry.uid) is not None

    def get(self, uid: str) -> QueuedPod | None:
        for heaps in (self._rejected, self._errors):
            for heap in heaps.values():
                found = heap.get(uid)
                if found is not None:
                    return found
        return None

    def __contains__(self, uid: object) -> bool:
        return any(uid in h for heaps in (self._rejected, self._errors) for h in heaps.values())

    def __iter__(self) -> Iterator[QueuedPod]:
        for heaps in (self._rejected, self._errors):
            for heap in heaps.values():
                yield from heap

    def __len__(self) -> int:
        return sum(len(h) for heaps in (self._rejected, self._errors) for h in heaps.values())

    # --- popping ---------------------------------------------------------------------------------
    def has_poppable(self, profile: str) -> bool:
        """Whether a pod rejected by plugins waits for ``profile`` (popped when activeQ is empty)."""
        return self.pop_from_backoff and len(self._rejected[profile]) > 0

    def head(self, profiles: Collection[str]) -> QueuedPod | None:
        """The first pod rejected by plugins among ``profiles`` (upstream ``popBackoff``'s)."""
        best: QueuedPod | None = None
        for name in profiles:
            head = self._rejected[name].peek()
            if head is not None and (best is None or self.less(head, best)):
                best = head
        return best

    def pop_head(self, entry: QueuedPod) -> None:
        """Take ``entry``, the :meth:`head` found, out of its heap."""
        self._rejected[entry.scheduler_name].pop()

    def pop_all_completed(self) -> list[QueuedPod]:
        """Every pod whose backoff ended, taken out (upstream ``popAllBackoffCompleted``)."""
        done: list[QueuedPod] = []
        for heaps in (self._rejected, self._errors):
            for heap in heaps.values():
                while True:
                    head = heap.peek()
                    if head is None or self.is_backing_off(head):
                        break
                    heap.pop()
                    done.append(head)
        return done


def _uid(entry: QueuedPod) -> str:
    return entry.uid
