"""A differential case: the objects of a small cluster, the pods to schedule in order, and the profile
they are scheduled with."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from ksched.differential.extender import extender_configs
from ksched.framework.resources import is_extended_resource
from ksched.plugins.noderesources.fit import DEVICE_CLASS_RESOURCE_PREFIX

Obj = dict[str, Any]
"""A Kubernetes object as plain data (what the API server accepts and returns as JSON)."""

DEFAULT_SCHEDULER = "default-scheduler"

NAMESPACES: dict[str, dict[str, str]] = {
    "default": {},
    "team-a": {"team": "a", "env": "prod"},
    "team-b": {"team": "b", "env": "dev"},
}
"""The namespaces every case may use (created once per batch, never deleted), with their labels."""

PRIORITY_CLASSES: dict[str, tuple[int, str]] = {
    "low": (100, "PreemptLowerPriority"),
    "mid": (1000, "PreemptLowerPriority"),
    "high": (100000, "PreemptLowerPriority"),
    "high-never": (100000, "Never"),
}
"""The PriorityClasses every case may name (value, preemptionPolicy), created once per batch."""

RUNTIME_CLASS = "with-overhead"
RUNTIME_CLASS_OBJECT: Obj = {
    "apiVersion": "node.k8s.io/v1",
    "kind": "RuntimeClass",
    "metadata": {"name": RUNTIME_CLASS},
    "handler": "runc",
    "overhead": {"podFixed": {"cpu": "250m", "memory": "120Mi"}},
}
"""A RuntimeClass with a pod overhead (created once per batch): admission copies it into the pods that
name it, where the scheduler counts it."""


@dataclass
class Case:
    """One generated case: ``objects`` are created in order (nodes, bound pods with ``nodeName``,
    what plugins read), then each of ``pending`` in turn, once the previous one is decided."""

    category: str
    seed: int
    index: int
    objects: list[Obj] = field(default_factory=list)
    pending: list[Obj] = field(default_factory=list)
    profile: Obj | None = None
    """A non-default profile (category ``configs``): its ``schedulerName`` is the pending pods'."""
    preplaced: list[Obj] = field(default_factory=list)
    """Pods the real scheduler places before the pending ones (not compared): what a bound pod cannot
    be made of by hand, such as the ResourceClaims its placement allocated (category ``dra``)."""
    groups: list[Obj] = field(default_factory=list)
    """PodGroups (category ``gangs``, played with the gang gates on), decided one after another: each
    group's members (the pending pods naming it, :func:`members`) are created at once and the group
    after them, so upstream's pod group cycle takes every member; the next group comes once this one
    is decided and its members left pending are deleted."""

    steps: list[Obj] = field(default_factory=list)
    """Timed events (category ``sequences``), played in order, each once the cluster is quiet after
    the one before: ``{"op": "create", "pod": KEY}`` (a pod of ``pending``), ``add-node`` (``node``: the
    Node), ``cordon`` (``node``: its name), ``label`` (``node``, ``labels``), ``delete`` (``pod``: a
    bound or created pod), ``ungate`` (``pod``: its scheduling gates removed). Empty: the pending pods
    are created in turn, each once the previous one is decided."""

    @property
    def name(self) -> str:
        return f"{self.category}-s{self.seed}-{self.index}"

    @property
    def gang(self) -> bool:
        """Whether the case needs the gang gates (``GenericWorkload``, ``GangScheduling``)."""
        return bool(self.groups)

    @property
    def scheduler_name(self) -> str:
        return str(self.profile["schedulerName"]) if self.profile else DEFAULT_SCHEDULER


def group_of(pod: Obj) -> str | None:
    """``ns/name`` of the PodGroup ``pod`` is a member of (its ``schedulingGroup``), None if none."""
    name = ((pod.get("spec") or {}).get("schedulingGroup") or {}).get("podGroupName")
    return f"{pod['metadata'].get('namespace')}/{name}" if name else None


def members(case: Case, group: Obj) -> list[Obj]:
    """The pending pods of ``case`` that are members of ``group``, in the case's order."""
    return [p for p in case.pending if group_of(p) == key(group)]


CREATE, ADD_NODE, CORDON, LABEL, DELETE, UNGATE = "create", "add-node", "cordon", "label", "delete", "ungate"
"""The operations of a ``Case.steps`` event."""
DECIDES = (CREATE, UNGATE)
"""The steps after which a pod is tried for the first time (a gated pod: once its gate is removed)."""


def key(obj: Obj) -> str:
    """``ns/name`` of a namespaced object, ``name`` of a cluster-scoped one."""
    meta = obj.get("metadata") or {}
    ns = meta.get("namespace")
    return f"{ns}/{meta['name']}" if ns else str(meta["name"])


EXTENDED_CLAIM = re.compile(r"^(.+-extended-resources-)[a-z0-9]{5}$")
"""The name of the claim a scheduler makes for a pod's extended resources backed by DRA
(``generateName``: the pod's name and ``-extended-resources-``, then five characters of its own)."""


def claim_alias(name: str) -> str:
    """``name`` (``ns/name`` of a ResourceClaim) as the comparison takes it: the claim a scheduler
    made for a pod's extended resources without the suffix each side draws (``...-extended-resources-``)."""
    made = EXTENDED_CLAIM.match(name)
    return made.group(1) if made else name


def extended_resources(pod: Obj) -> bool:
    """Whether a container of ``pod`` asks for a resource a DeviceClass may back: an extended one
    (``is_extended_resource``) or a class's own ``deviceclass.resource.kubernetes.io/<class>``."""
    spec = pod["spec"]
    for container in [*(spec.get("initContainers") or []), *(spec.get("containers") or [])]:
        resources = container.get("resources") or {}
        for name in {**(resources.get("limits") or {}), **(resources.get("requests") or {})}:
            if is_extended_resource(name) or name.startswith(DEVICE_CLASS_RESOURCE_PREFIX):
                return True
    return False


def identity(obj: Obj) -> tuple[str, str]:
    """(kind, key): what tells two objects of a cluster apart."""
    return str(obj.get("kind")), key(obj)


BACKOFF = 1
"""The batch's pod backoff, initial and maximal (seconds)."""


def start_time(n: int) -> str:
    """The start time the harness, as a kubelet would, gives the ``n``-th pod (from 1) the scheduler
    placed during a case: a second apart (the API's resolution), after every bound pod's (the
    generator's ``2026-01-01T00:MM:SS``)."""
    return f"2026-01-01T{1 + n // 3600:02d}:{n // 60 % 60:02d}:{n % 60:02d}Z"


def config_document(
    profiles: list[Obj], kubeconfig: str | None = None, extenders: bool = True, ignorable_binder: bool = False
) -> Obj:
    """A KubeSchedulerConfiguration with ``profiles`` (the default profile when empty), as the real
    scheduler of a batch runs it (``kubeconfig``) and as ``ksched simulate`` reads it; ``extenders``:
    with the harness's own (``ksched.differential.extender``, served by this process), their binder
    ignorable with ``ignorable_binder`` (``ksched simulate`` binds nothing: it need not know)."""
    connection: Obj = {"qps": 5000, "burst": 5000}
    if kubeconfig:
        connection = {"kubeconfig": kubeconfig, **connection}
    return {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "clientConnection": connection,
        "leaderElection": {"leaderElect": False},
        # a retry an event caused comes within a second (the default backoff grows to 10 s): a
        # sequence's steps wait for the cluster to be quiet, not for the backoff (first attempts,
        # all the other categories compare, do not depend on it)
        "podInitialBackoffSeconds": BACKOFF,
        "podMaxBackoffSeconds": BACKOFF,
        "profiles": profiles or [{"schedulerName": DEFAULT_SCHEDULER}],
        **({"extenders": extender_configs(ignorable_binder)} if extenders else {}),
    }
