"""Turning a file of Kubernetes objects into a snapshot and the queue of pending pods."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field

from ksched.api.base import K8s
from ksched.api.core import Node, Pod
from ksched.api.coscheduling import CoschedulingPodGroup, as_pod_group, with_label_group
from ksched.api.kinds import ObjectError
from ksched.framework.podinfo import PodInfo
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


def build_cluster(
    objects: Iterable[K8s], scheduler_names: Sequence[str], coscheduling: bool = False
) -> Cluster:
    """The cluster of ``objects``; :class:`ObjectError` names an object the snapshot cannot hold
    (a quantity that does not parse, for instance). ``coscheduling``: scheduler-plugins' PodGroups
    and pod-group labels read through the adapter (a v1alpha2 PodGroup of the same name wins;
    docs/gang.md)."""
    snapshot = Snapshot()
    pending: list[Pod] = []
    placed: list[Pod] = []
    adapted: list[CoschedulingPodGroup] = []
    for obj in objects:
        with _naming(obj):
            if isinstance(obj, Node):
                snapshot.upsert_node(obj)
            elif isinstance(obj, CoschedulingPodGroup):
                adapted.append(obj)
            elif isinstance(obj, Pod):
                if coscheduling:
                    obj = with_label_group(obj)
                if not is_visible(obj):
                    continue
                if obj.spec.node_name:
                    placed.append(obj)
                elif obj.spec.scheduler_name in scheduler_names:
                    PodInfo(obj)  # its requests parse (a quantity error names the pod, here)
                    pending.append(obj)
            else:
                snapshot.objects.put(obj)
    for pod in placed:
        with _naming(pod):
            snapshot.add_pod(pod)
    for group in adapted if coscheduling else ():
        key = f"{group.metadata.namespace}/{group.metadata.name}"
        snapshot.objects.pod_groups.setdefault(key, as_pod_group(group))
    return Cluster(snapshot, pending)


@contextmanager
def _naming(obj: K8s) -> Iterator[None]:
    try:
        yield
    except ValueError as exc:
        meta = getattr(obj, "metadata", None)
        name = getattr(meta, "name", "") or "<unnamed>"
        namespace = getattr(meta, "namespace", "")
        key = f"{namespace}/{name}" if namespace else name
        raise ObjectError(f"{type(obj).__name__} {key}: {exc}") from None
