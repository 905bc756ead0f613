"""Pod groups (gate GenericWorkload): a pod's group, and the runtime state of a group that plugins
read (upstream ``backend/cache/podgroupstate.go``, ``plugins/helper/podgroup.go``).

A group is known by ``(namespace, podGroupName)``. Its state counts the pods the scheduler knows:
all of them (PreEnqueue's quorum of pods), the unscheduled ones, and the scheduled ones (assumed or
bound: Permit's quorum). Where a state comes from differs per process (docs/gang.md): the queue
counts what the informer reports, a scheduler replica what its snapshot holds.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

from ksched.api.core import Pod

GroupKey = tuple[str, str]
"""``(namespace, podGroupName)``."""


def group_key(pod: Pod) -> GroupKey | None:
    """The group ``pod`` belongs to, None when it names none."""
    group = pod.spec.scheduling_group
    if group is None or not group.pod_group_name:
        return None
    return pod.metadata.namespace, group.pod_group_name


def matching_scheduling_group(a: Pod, b: Pod) -> bool:
    """Whether two pods belong to the same group (upstream ``MatchingSchedulingGroup``)."""
    ka = group_key(a)
    return ka is not None and ka == group_key(b)


class PodGroupState(Protocol):
    """What plugins read of one group (upstream ``fwk.PodGroupState``)."""

    def all_pods_count(self) -> int: ...

    def scheduled_pods_count(self) -> int:
        """Pods assumed or bound."""
        ...

    def assumed_pods(self) -> set[str]:
        """Uids of the pods assumed (past Reserve) and not yet bound."""
        ...

    def unscheduled_pods(self) -> dict[str, Pod]:
        """Pod name -> pod, for the pods neither assumed nor bound."""
        ...


class PodGroupStates(Protocol):
    """Upstream ``fwk.PodGroupStateLister``: None where upstream returns "not found"."""

    def get(self, namespace: str, name: str) -> PodGroupState | None: ...


def not_found(namespace: str, name: str) -> str:
    """Upstream's error text for a group the lister does not know."""
    return f"pod group state not found for pod group {namespace}/{name}"


class PodGroupStateData:
    """Upstream's ``podGroupStateData``: every known pod of a group, by how far it got."""

    __slots__ = ("_all", "_assigned", "_assumed", "_unscheduled")

    def __init__(self) -> None:
        self._all: dict[str, Pod] = {}
        self._unscheduled: set[str] = set()
        self._assumed: dict[str, Pod] = {}
        self._assigned: set[str] = set()

    def add_pod(self, pod: Pod) -> None:
        uid = pod.metadata.uid
        self._all[uid] = pod
        if pod.spec.node_name:
            self._assigned.add(uid)
            self._unscheduled.discard(uid)
        else:
            self._unscheduled.add(uid)

    def delete_pod(self, uid: str) -> None:
        self._all.pop(uid, None)
        self._unscheduled.discard(uid)
        self._assumed.pop(uid, None)
        self._assigned.discard(uid)

    def assume_pod(self, pod: Pod) -> None:
        uid = pod.metadata.uid
        stored = self._all.get(uid)
        if stored is None:
            return
        if stored.spec.node_name:
            self._assigned.add(uid)
        else:
            self._assumed[uid] = pod
        self._unscheduled.discard(uid)

    def place_pod(self, pod: Pod) -> None:
        """A pod a snapshot holds on a node: scheduled, assumed or bound (a snapshot cannot tell which;
        counted as assumed, so Permit's Allow reaches it if it waits)."""
        uid = pod.metadata.uid
        self._all[uid] = pod
        self._unscheduled.discard(uid)
        self._assigned.discard(uid)
        self._assumed[uid] = pod

    def forget_pod(self, uid: str) -> None:
        pod = self._all.get(uid)
        if pod is None:
            return
        self._assumed.pop(uid, None)
        if pod.spec.node_name:
            self._assigned.add(uid)
        else:
            self._unscheduled.add(uid)

    def empty(self) -> bool:
        return not self._all

    # --- PodGroupState ----------------------------------------------------------------------------
    def all_pods_count(self) -> int:
        return len(self._all)

    def scheduled_pods_count(self) -> int:
        return len(self._assumed) + len(self._assigned)

    def assumed_pods(self) -> set[str]:
        return set(self._assumed)

    def unscheduled_pods(self) -> dict[str, Pod]:
        return {self._all[uid].metadata.name: self._all[uid] for uid in self._unscheduled}


class PodGroupTable:
    """Group states by key for a set of pods (upstream's cache map); a PodGroupStates."""

    def __init__(self, pods: Iterable[Pod] = ()) -> None:
        self.groups: dict[GroupKey, PodGroupStateData] = {}
        for pod in pods:
            self.add_pod(pod)

    def get(self, namespace: str, name: str) -> PodGroupStateData | None:
        return self.groups.get((namespace, name))

    def add_pod(self, pod: Pod) -> None:
        key = group_key(pod)
        if key is not None:
            self.groups.setdefault(key, PodGroupStateData()).add_pod(pod)

    def place_pod(self, pod: Pod) -> None:
        key = group_key(pod)
        if key is not None:
            self.groups.setdefault(key, PodGroupStateData()).place_pod(pod)

    def remove_pod(self, pod: Pod) -> None:
        key = group_key(pod)
        state = self.groups.get(key) if key is not None else None
        if key is None or state is None:
            return
        state.delete_pod(pod.metadata.uid)
        if state.empty():
            del self.groups[key]

    def assume_pod(self, pod: Pod) -> None:
        key = group_key(pod)
        if key is None:
            return
        state = self.groups.get(key)
        if state is None:  # upstream creates the group holding just this pod
            state = self.groups[key] = PodGroupStateData()
            state.add_pod(pod)
        state.assume_pod(pod)

    def forget_pod(self, pod: Pod) -> None:
        key = group_key(pod)
        state = self.groups.get(key) if key is not None else None
        if state is not None:
            state.forget_pod(pod.metadata.uid)


class CountedState:
    """A group state known only by its counts (the queue: the informer reports how many pods it knows)."""

    __slots__ = ("all_pods", "scheduled")

    def __init__(self, all_pods: int, scheduled: int = 0) -> None:
        self.all_pods = all_pods
        self.scheduled = scheduled

    def all_pods_count(self) -> int:
        return self.all_pods

    def scheduled_pods_count(self) -> int:
        return self.scheduled

    def assumed_pods(self) -> set[str]:
        return set()

    def unscheduled_pods(self) -> dict[str, Pod]:
        return {}


class CountedStates:
    """PodGroupStates over per-group counts."""

    def __init__(self, counts: Mapping[GroupKey, CountedState] | None = None) -> None:
        self.counts: dict[GroupKey, CountedState] = dict(counts or {})

    def get(self, namespace: str, name: str) -> CountedState | None:
        return self.counts.get((namespace, name))


# --- placements (TopologyAwareWorkloadScheduling) ----------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ProposedAssignment:
    """One member of a group placed on a node by a candidate placement (upstream ``ProposedAssignment``)."""

    pod: Pod
    node_name: str


@dataclass(slots=True)
class PodGroupAssignments:
    """What scheduling a group into one candidate placement proposed (upstream ``PodGroupAssignments``)."""

    placement: str = ""
    proposed: list[ProposedAssignment] = field(default_factory=list)


@dataclass(slots=True)
class PlacementScore:
    """A candidate placement's score; NormalizePlacementScore rewrites ``score`` in place."""

    placement: str = ""
    score: int = 0
