"""The cache's recent changes by generation, for the assume check: which pods appeared on or left
which node, which nodes and which other objects changed. Bounded: the oldest changes are dropped,
and a question about a generation older than what is kept gets no answer (the caller then checks
everything)."""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass

from ksched.framework.podinfo import PodInfo

CAPACITY = 8192
"""Changes kept: several seconds of a busy cluster (each pod is one or two changes when assumed
and none when its binding is seen, unless it changed)."""


@dataclass(frozen=True, slots=True)
class PodChange:
    """``pod`` (this version) appeared on ``node`` (``placed``) or left it."""

    generation: int
    pod: PodInfo
    node: str
    placed: bool


@dataclass(frozen=True, slots=True)
class NodeChange:
    """The node object ``node`` was added, changed or removed."""

    generation: int
    node: str


@dataclass(frozen=True, slots=True)
class ObjectChange:
    """Another object the plugins read (``framework.objects.TABLES``) was added, changed or removed."""

    generation: int
    kind: str
    key: str


Change = PodChange | NodeChange | ObjectChange


class ChangeLog:
    """Changes in generation order, the last ``capacity`` of them (a change carries the cache
    generation that includes it; one generation may have several, e.g. a pod's old and new version)."""

    def __init__(self, capacity: int = CAPACITY) -> None:
        self.capacity = capacity
        self._changes: list[Change] = []
        self._generations: list[int] = []
        self._start = 0
        #: changes of generations up to this one may have been dropped
        self.floor = 0

    def __len__(self) -> int:
        return len(self._changes) - self._start

    def record(self, change: Change) -> None:
        self._changes.append(change)
        self._generations.append(change.generation)
        if len(self._changes) - self._start > self.capacity:
            self.floor = self._generations[self._start]
            self._start += 1
            if self._start >= self.capacity:  # compact now and then: amortized O(1) per change
                del self._changes[: self._start]
                del self._generations[: self._start]
                self._start = 0

    def since(self, generation: int, limit: int) -> list[Change] | None:
        """The changes after ``generation``, oldest first; None when some of them are no longer
        kept or there are more than ``limit``."""
        if generation < self.floor:
            return None
        first = bisect_right(self._generations, generation, lo=self._start)
        if len(self._changes) - first > limit:
            return None
        return self._changes[first:]
