"""Values passed between extension points: PreFilter/PostFilter results, per-node statuses,
the queued pod as the queue sees it, and the Diagnosis of an unschedulable pod."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from ksched.framework.podinfo import PodInfo
from ksched.framework.status import Code, Status


@dataclass(slots=True)
class PreFilterResult:
    """Nodes a PreFilter plugin narrows the search to; ``None`` means every node."""

    node_names: frozenset[str] | None = None

    def all_nodes(self) -> bool:
        return self.node_names is None

    def merge(self, other: PreFilterResult | None) -> PreFilterResult | None:
        """Intersection of two results (None and all-nodes are the identity)."""
        mine = self.node_names
        theirs = other.node_names if other is not None else None
        if mine is None and theirs is None:
            return None
        if mine is None:
            return PreFilterResult(theirs)
        if theirs is None:
            return PreFilterResult(mine)
        return PreFilterResult(mine & theirs)


class NominatingMode:
    NOOP = 0
    OVERRIDE = 1


@dataclass(slots=True)
class PostFilterResult:
    """A PostFilter outcome: the node the pod is nominated to (preemption)."""

    nominated_node_name: str = ""
    mode: int = NominatingMode.OVERRIDE
    #: pods preemption would evict to make room (a ksched addition: simulate reports them)
    victims: list[PodInfo] = field(default_factory=list)


@dataclass(slots=True)
class NodeToStatus:
    """Statuses of nodes that failed; nodes not listed have ``absent`` (upstream ``NodeToStatus``)."""

    statuses: dict[str, Status] = field(default_factory=dict)
    absent: Status = field(default_factory=lambda: Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE))

    def get(self, node_name: str) -> Status:
        return self.statuses.get(node_name, self.absent)

    def set(self, node_name: str, status: Status) -> None:
        self.statuses[node_name] = status

    def __len__(self) -> int:
        return len(self.statuses)

    def __iter__(self) -> Iterator[tuple[str, Status]]:
        return iter(self.statuses.items())


@dataclass(slots=True)
class QueuedPodInfo:
    """A pod as the scheduling queue tracks it."""

    pod_info: PodInfo
    timestamp: float = 0.0
    attempts: int = 0
    initial_attempt_timestamp: float | None = None
    unschedulable_plugins: set[str] = field(default_factory=set)
    pending_plugins: set[str] = field(default_factory=set)
    gating_plugin: str = ""
    consecutive_errors: int = 0

    @property
    def pod(self) -> object:
        return self.pod_info.pod


@dataclass(slots=True)
class Diagnosis:
    """Why a pod did not fit: per-node statuses, plugins that rejected, and messages."""

    node_to_status: NodeToStatus = field(default_factory=NodeToStatus)
    unschedulable_plugins: set[str] = field(default_factory=set)
    pending_plugins: set[str] = field(default_factory=set)
    pre_filter_msg: str = ""
    post_filter_msg: str = ""
    #: node -> name of the extender that rejected it (its status names no plugin, as upstream's)
    extender_rejections: dict[str, str] = field(default_factory=dict)

    def add_plugin_status(self, status: Status) -> None:
        if not status.plugin:
            return
        if status.is_rejected():
            self.unschedulable_plugins.add(status.plugin)
        if status.code == Code.PENDING:
            self.pending_plugins.add(status.plugin)


NO_NODE_AVAILABLE_MSG = "0/{} nodes are available"


@dataclass(slots=True)
class FitError(Exception):
    """No node fits the pod; ``str()`` is upstream's FailedScheduling message."""

    pod: PodInfo
    num_all_nodes: int
    diagnosis: Diagnosis

    def __str__(self) -> str:
        return fit_error_message(self.num_all_nodes, self.diagnosis)


def fit_error_message(num_all_nodes: int, diagnosis: Diagnosis) -> str:
    """``0/N nodes are available: <PreFilter msg | sorted reason histogram>. <PostFilter msg>``."""
    msg = NO_NODE_AVAILABLE_MSG.format(num_all_nodes) + ":"
    if diagnosis.pre_filter_msg:
        msg += f" {diagnosis.pre_filter_msg}."
    else:
        counts: dict[str, int] = {}
        nts = diagnosis.node_to_status
        for _, status in nts:
            for reason in status.all_reasons():
                counts[reason] = counts.get(reason, 0) + 1
        missing = num_all_nodes - len(nts)
        if missing > 0:
            for reason in nts.absent.all_reasons():
                counts[reason] = counts.get(reason, 0) + missing
        histogram = sorted(f"{n} {reason}" for reason, n in counts.items())
        if histogram:
            msg += f" {', '.join(histogram)}."
    if diagnosis.post_filter_msg:
        msg += f" {diagnosis.post_filter_msg}"
    return msg


def chosen_node_failure(node_name: str, status: Status) -> str:
    """The message of a Reserve or Permit failure on ``node_name`` (the chosen node), as upstream
    words it: a rejection wrapped in a FitError of that one node (``0/1 nodes are available: 1
    <reason>.``), an error as it is."""
    if not status.is_rejected():
        return status.message
    diagnosis = Diagnosis()
    diagnosis.node_to_status.set(node_name, status)
    return fit_error_message(1, diagnosis)
