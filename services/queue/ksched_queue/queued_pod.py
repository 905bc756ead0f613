"""One pod as the queue tracks it: the informer's PendingPod, the decoded Pod, and upstream's
``QueuedPodInfo`` bookkeeping (timestamps, attempts, counters, rejecting plugins, gate)."""

from __future__ import annotations

import msgspec

from ksched.api.base import DECODE_ERRORS
from ksched.api.core import Pod, PodSchedulingGate, PodSpec, PodStatus
from ksched.api.lifecycle import PodLifecycle
from ksched.api.meta import ObjectMeta
from ksched.bus.messages import PendingPod
from ksched.framework.events import ClusterEvent
from ksched.framework.podinfo import PodInfo
from ksched.framework.results import QueuedPodInfo

_pod_decoder = msgspec.json.Decoder(Pod)


class PodDecodeError(ValueError):
    """A PendingPod whose pod JSON does not decode (the message names the pod)."""


def decode_pending_pod(pending: PendingPod) -> Pod:
    """The API pod of ``pending``; built from its compact fields when it carries no JSON."""
    if pending.pod:
        try:
            pod = _pod_decoder.decode(pending.pod)
        except DECODE_ERRORS as exc:
            raise PodDecodeError(
                f"pending pod {pending.namespace}/{pending.name} (uid {pending.uid}): bad pod JSON: {exc}"
            ) from None
        if not pod.metadata.uid:
            pod.metadata.uid = pending.uid
        return pod
    return Pod(
        metadata=ObjectMeta(
            name=pending.name,
            namespace=pending.namespace,
            uid=pending.uid,
            resource_version=pending.resource_version,
            creation_timestamp=pending.creation_timestamp or None,
        ),
        spec=PodSpec(
            scheduler_name=pending.scheduler_name,
            priority=pending.priority,
            scheduling_gates=[PodSchedulingGate(name=g) for g in pending.scheduling_gates],
        ),
        status=PodStatus(nominated_node_name=pending.nominated_node_name or None),
    )


class QueuedPod:
    """A pod in the queue (or in flight). ``info`` is what QueueSort and plugins see."""

    __slots__ = (
        "backoff_expiration",
        "cache_assumed",
        "counted_profile",
        "counted_rejectors",
        "gating_events",
        "generation",
        "in_flight_seq",
        "info",
        "message",
        "pending",
        "pod",
        "requeue_after_done",
        "retried",
        "seq",
        "state",
        "trace_id",
        "unschedulable_count",
        "was_flushed",
    )

    def __init__(
        self, pending: PendingPod, pod: Pod, timestamp: float, seq: int, generation: int = 0
    ) -> None:
        self.pending = pending
        self.pod = pod
        self.info = QueuedPodInfo(PodInfo(pod), timestamp=timestamp)
        self.unschedulable_count = 0
        self.backoff_expiration: float | None = None
        """Cached backoff end (upstream ``BackoffExpiration``); reset when the pod returns from a cycle."""
        self.gating_events: list[ClusterEvent] = []
        self.generation = generation
        """Cache generation that includes the newest event about this pod (LeasedPod.min_generation)."""
        self.in_flight_seq = 0
        """In-flight event sequence number when the pod was popped."""
        self.retried = False
        """The last attempt ended with a rejected assume (the next rejection backs off)."""
        self.requeue_after_done: tuple[bool, tuple[str, ...]] | None = None
        self.cache_assumed = False
        """In flight, and the cache already accepted its placement (the feed said so)."""
        """A binder requeue (backoff, plugins) that arrived before the attempt's ``scheduled``."""
        self.seq = seq
        """Insertion order: breaks QueueSort ties first-in first-out."""
        self.state: PodLifecycle | None = None
        self.was_flushed = False
        self.trace_id = ""
        self.message = ""
        """The last attempt's message (a FailedScheduling message, an assume conflict's reason)."""
        """The current attempt's trace id (set by the queue's tracing; the pop's lease carries it)."""
        self.counted_rejectors: frozenset[str] = frozenset()
        self.counted_profile = ""
        """The plugins (and profile) this pod counts for in scheduler_unschedulable_pods now."""

    @property
    def uid(self) -> str:
        return self.pending.uid

    @property
    def key(self) -> str:
        return f"{self.pending.namespace}/{self.pending.name}"

    @property
    def scheduler_name(self) -> str:
        return self.pending.scheduler_name

    @property
    def gated(self) -> bool:
        return bool(self.info.gating_plugin)

    @property
    def rejector_plugins(self) -> set[str]:
        return self.info.unschedulable_plugins | self.info.pending_plugins

    def set_pod(self, pending: PendingPod, pod: Pod) -> None:
        """Replace the pod with a newer version (upstream ``QueuedPodInfo.Update``)."""
        self.pending = pending
        self.pod = pod
        self.info.pod_info = PodInfo(pod)

    def clear_rejectors(self) -> None:
        """Upstream ``ClearRejectorPlugins``."""
        self.info.unschedulable_plugins = set()
        self.info.pending_plugins = set()
        self.info.gating_plugin = ""
        self.gating_events = []

    def __repr__(self) -> str:
        return f"QueuedPod({self.key}, {self.state})"
