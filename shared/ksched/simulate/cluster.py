"""Turning a file of Kubernetes objects into a snapshot and the queue of pending pods."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from ksched.api.base import K8s
from ksched.api.core import Node, Pod
from ksched.framework.snapshot import Snapshot

TERMINAL_PHASES = ("Succeeded", "Failed")


@dataclass
class Cluster:
    """A snapshot of nodes and placed pods, plus the pods waiting to be scheduled, in file order."""

    snapshot: Snapshot
    pending: list[Pod] = field(default_factory=list)


def is_visible(pod: Pod) -> bool:
    """The scheduler's informer drops pods that finished (phase Succeeded or Failed)."""
    return pod.status.phase not in TERMINAL_PHASES


def build_cluster(objects: Iterable[K8s], scheduler_names: Sequence[str]) -> Cluster:
    snapshot = Snapshot()
    pending: list[Pod] = []
    placed: list[Pod] = []
    for obj in objects:
        if isinstance(obj, Node):
            snapshot.upsert_node(obj)
        elif isinstance(obj, Pod):
            if not is_visible(obj):
                continue
            if obj.spec.node_name:
                placed.append(obj)
            elif obj.spec.scheduler_name in scheduler_names:
                pending.append(obj)
        else:
            snapshot.objects.put(obj)
    for pod in placed:
        snapshot.add_pod(pod)
    return Cluster(snapshot, pending)
