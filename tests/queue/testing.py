"""Builders for queue tests: pending pods from ``make_pod``, a queue on a fake clock, the activeQ in
pop order, and the informer's side of the bus (bootstrap answers and feed messages) for the NATS tests."""

from __future__ import annotations

import functools
import itertools
from collections.abc import Mapping
from typing import Any

import msgspec
from ksched_queue.core import QueueCore
from ksched_queue.priority_queue import SchedulingQueue
from ksched_queue.queued_pod import QueuedPod
from ksched_queue.settings import QueueSettings, build_core

from ksched.api.core import Node, Pod
from ksched.bus.messages import (
    ClusterEventMsg,
    DoneOutcome,
    DoneRequest,
    LeasedPod,
    PendingPod,
    PendingPodAction,
    PendingPodEvent,
)
from ksched.config import parse_config
from ksched.framework.events import ActionType, ClusterEvent, EventResource
from ksched.framework.testing import make_node, make_pod

START = 1_700_000_000.0
_rv = itertools.count(1)


class FakeClock:
    """A queue clock (``ksched_queue.clock.Clock``) that moves only when told to."""

    def __init__(self, start: float = START) -> None:
        self.t = start

    def now(self) -> float:
        return self.t

    def advance(self, seconds: float) -> float:
        self.t += seconds
        return self.t

    def set(self, t: float) -> None:
        self.t = t


def active_order(q: SchedulingQueue, scheduler_name: str) -> list[str]:
    """Uids of one profile's activeQ in pop order."""
    less = q._active_less

    def compare(a: QueuedPod, b: QueuedPod) -> int:
        return -1 if less(a, b) else (1 if less(b, a) else 0)

    return [e.uid for e in sorted(q._active[scheduler_name], key=functools.cmp_to_key(compare))]


def pending_of(pod: Pod) -> PendingPod:
    """The PendingPod the informer would publish for ``pod`` (a fresh resourceVersion each time)."""
    pod.metadata.resource_version = str(next(_rv))
    return PendingPod(
        uid=pod.metadata.uid,
        namespace=pod.metadata.namespace,
        name=pod.metadata.name,
        scheduler_name=pod.spec.scheduler_name,
        priority=pod.spec.priority or 0,
        creation_timestamp=pod.metadata.creation_timestamp or "",
        scheduling_gates=[g.name for g in pod.spec.scheduling_gates],
        resource_version=pod.metadata.resource_version,
        nominated_node_name=pod.status.nominated_node_name or "",
        pod=msgspec.json.encode(pod),
    )


def pod(name: str, *, priority: int | None = None, gates: list[str] | None = None, **kw: Any) -> Pod:
    spec = dict(kw.pop("spec", None) or {})
    if gates:
        spec["schedulingGates"] = [{"name": g} for g in gates]
    return make_pod(name, uid=f"uid-{name}", priority=priority, spec=spec, **kw)


TWO_PROFILES = """
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
podInitialBackoffSeconds: 1
podMaxBackoffSeconds: 10
profiles:
- schedulerName: default-scheduler
- schedulerName: other-scheduler
"""


def settings(config_text: str = TWO_PROFILES, **kw: Any) -> QueueSettings:
    return QueueSettings(scheduler_config=parse_config(config_text), **kw)


_CACHED: dict[str, QueueSettings] = {}


def new_core(
    clock: FakeClock | None = None, *, config_text: str = TWO_PROFILES, lease_seconds: float = 30.0
) -> tuple[QueueCore, FakeClock]:
    clock = clock or FakeClock(START)
    base = _CACHED.get(config_text)
    if base is None:
        base = _CACHED[config_text] = settings(config_text)
    s = QueueSettings(scheduler_config=base.scheduler_config, lease_seconds=lease_seconds)
    return build_core(s, clock, on_incoming=None), clock


def node(name: str, cpu: str = "4", memory: str = "8Gi", **kw: Any) -> Node:
    return make_node(name, allocatable={"cpu": cpu, "memory": memory, "pods": "110"}, **kw)


def event_msg(
    resource: str,
    action: ActionType | int,
    old: Any = None,
    new: Any = None,
    *,
    epoch: str = "e1",
    generation: int = 0,
) -> ClusterEventMsg:
    obj = new if new is not None else old
    key = getattr(getattr(obj, "metadata", None), "name", "") if obj is not None else ""
    return ClusterEventMsg(
        resource=resource,
        action=int(action),
        key=key,
        old=msgspec.json.encode(old) if old is not None else None,
        new=msgspec.json.encode(new) if new is not None else None,
        epoch=epoch,
        generation=generation,
    )


def done_request(lp: LeasedPod, outcome: DoneOutcome, replica: str = "r1", **kw: Any) -> DoneRequest:
    """The end of ``lp``'s lease by ``replica`` (``kw``: the other DoneRequest fields)."""
    return DoneRequest(
        lease_id=lp.lease_id,
        scheduler_id=replica,
        pod_uid=lp.pod.uid,
        namespace=lp.pod.namespace,
        name=lp.pod.name,
        outcome=outcome,
        **kw,
    )


def pending_event(
    action: PendingPodAction, p: Pod | PendingPod, *, epoch: str = "e1", generation: int = 0, reason: str = ""
) -> PendingPodEvent:
    pending = p if isinstance(p, PendingPod) else pending_of(p)
    return PendingPodEvent(action=action, pod=pending, reason=reason, epoch=epoch, generation=generation)


def cluster_event(resource: str, action: ActionType) -> ClusterEvent:
    return ClusterEvent(resource, int(action))


NODE_ADD = cluster_event(EventResource.NODE, ActionType.ADD)


def counts(core: QueueCore) -> Mapping[str, int]:
    return {str(k): v for k, v in core.queue.counts().items()}
