"""The cache's recent changes by generation, for the assume check: which pods appeared on or left
which node, which nodes and which other objects changed. Bounded: the oldest changes are dropped,
and a question about a generation older than what is kept gets no answer (the caller then checks
everything). Besides all changes in order, it keeps the few kinds a pod without constraints of
its own needs (node and object changes, pods with required anti-affinity placed, the last pod
placed on each node), so the check of such a pod does not read the rest."""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Generic, TypeVar

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
    origin: str = ""
    """The session of the scheduler replica whose assume placed it, as that replica decided it
    ('' for anything else)."""
    before: PodInfo | None = None
    """For a pod that stayed on ``node`` with the same spec: its previous version (only labels or
    other metadata changed)."""
    changed_labels: frozenset[str] | None = None
    """With ``before``: the label keys whose value (or presence) differs between the two versions;
    None: not known. A selector that reads none of them matches both alike."""


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


def changed_label_keys(before: Mapping[str, str], after: Mapping[str, str]) -> frozenset[str]:
    """The keys whose value differs between two label sets (added and removed ones included)."""
    if before is after:
        return frozenset()
    return frozenset(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))


Change = PodChange | NodeChange | ObjectChange
C = TypeVar("C", bound=Change)


class _Run(Generic[C]):
    """Changes of one kind in generation order; those of generations up to a floor are dropped."""

    __slots__ = ("_changes", "_generations", "_start")

    def __init__(self) -> None:
        self._changes: list[C] = []
        self._generations: list[int] = []
        self._start = 0

    def __len__(self) -> int:
        return len(self._changes) - self._start

    def append(self, change: C) -> None:
        self._changes.append(change)
        self._generations.append(change.generation)

    def generation_at(self, index: int) -> int:
        """The generation of the ``index``-th oldest change kept (0: the oldest)."""
        return self._generations[self._start + index]

    def first_after(self, generation: int) -> int:
        return bisect_right(self._generations, generation, lo=self._start)

    def drop_through(self, generation: int) -> None:
        """Drop the changes of generations up to ``generation``; amortized O(1) per change."""
        self._start = self.first_after(generation)
        if self._start >= 1024 and self._start * 2 >= len(self._changes):
            del self._changes[: self._start]
            del self._generations[: self._start]
            self._start = 0

    def since(self, generation: int) -> list[C]:
        return self._changes[self.first_after(generation) :]

    def count_since(self, generation: int) -> int:
        return len(self._changes) - self.first_after(generation)


class ChangeLog:
    """At least the last ``capacity`` changes and at most ``slack`` more (a change carries the cache
    generation that includes it; one generation may have several, e.g. a pod's old and new version)."""

    def __init__(self, capacity: int = CAPACITY, slack: int | None = None) -> None:
        self.capacity = capacity
        #: changes past ``capacity`` before the oldest are dropped, all at once (a drop per change
        #: cost four searches of the runs)
        self.slack = capacity // 8 if slack is None else slack
        self._all: _Run[Change] = _Run()
        self._pods: _Run[PodChange] = _Run()
        self._nodes: _Run[NodeChange] = _Run()
        self._objects: _Run[ObjectChange] = _Run()
        self._anti: _Run[PodChange] = _Run()
        #: node name -> pods placed on it lately: (generation of the last, its origin, generation
        #: of the last placed before the run of placements of that origin)
        self._placed_at: dict[str, tuple[int, str, int]] = {}
        #: changes of generations up to this one may have been dropped
        self.floor = 0

    def __len__(self) -> int:
        return len(self._all)

    def record(self, change: Change) -> None:
        self._all.append(change)
        if isinstance(change, PodChange):
            self._pods.append(change)
            if change.placed:
                if change.before is None:  # requests and ports on the node changed
                    self._note_placed(change)
                if change.pod.has_required_anti_affinity:
                    self._anti.append(change)
        elif isinstance(change, NodeChange):
            self._nodes.append(change)
        else:
            self._objects.append(change)
        excess = len(self._all) - self.capacity
        if excess > self.slack:
            self.floor = self._all.generation_at(excess - 1)
            for run in (self._all, self._pods, self._nodes, self._objects, self._anti):
                run.drop_through(self.floor)

    def covers(self, generation: int) -> bool:
        """Whether every change after ``generation`` is kept."""
        return generation >= self.floor

    def since(self, generation: int) -> list[Change]:
        """Every change after ``generation`` (check :meth:`covers` first), oldest first."""
        return self._all.since(generation)

    def count_since(self, generation: int) -> int:
        return self._all.count_since(generation)

    def pods_since(self, generation: int) -> list[PodChange]:
        """The pod changes after ``generation``, oldest first."""
        return self._pods.since(generation)

    def nodes_since(self, generation: int) -> list[NodeChange]:
        return self._nodes.since(generation)

    def objects_since(self, generation: int) -> list[ObjectChange]:
        return self._objects.since(generation)

    def nodes_changed_since(self, generation: int) -> bool:
        return self._nodes.count_since(generation) > 0

    def objects_changed_since(self, generation: int) -> bool:
        return self._objects.count_since(generation) > 0

    def anti_affinity_placed(self, generation: int) -> bool:
        """Whether pods with required anti-affinity were placed after ``generation``."""
        return self._anti.count_since(generation) > 0

    def anti_affinity_placed_since(self, generation: int) -> list[PodChange]:
        """Pods with required anti-affinity placed after ``generation``."""
        return self._anti.since(generation)

    def _note_placed(self, change: PodChange) -> None:
        last = self._placed_at.get(change.node)
        if last is None:
            self._placed_at[change.node] = (change.generation, change.origin, 0)
        elif change.origin and change.origin == last[1]:
            self._placed_at[change.node] = (change.generation, last[1], last[2])
        else:
            self._placed_at[change.node] = (change.generation, change.origin, last[0])

    def placed_on_since(self, node: str, generation: int, origin: str = "") -> bool:
        """Whether a pod was placed on ``node`` after ``generation``, other than by ``origin``."""
        last = self._placed_at.get(node)
        if last is None or last[0] <= generation:
            return False
        if origin and last[1] == origin:
            return last[2] > generation  # placed by others before that origin's run
        return True
