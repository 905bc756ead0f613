"""Builders for DefaultPreemption tests and the benchmark: pods, nodes, PDBs and small frameworks
wired like upstream's test frameworks (``tf.RegisterPluginAsExtensions(...)``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import msgspec

from ksched.api.core import Node, Pod
from ksched.api.policy import PodDisruptionBudget
from ksched.framework.cycle_state import CycleState
from ksched.framework.nodeinfo import NodeInfo
from ksched.framework.nominator import Nominator
from ksched.framework.podinfo import PodInfo
from ksched.framework.results import PreFilterResult
from ksched.framework.runtime import Framework, PluginsByPoint
from ksched.framework.snapshot import Snapshot
from ksched.framework.status import Code, Status
from ksched.framework.testing import make_node, make_pod
from ksched.plugins.args.types import DefaultPreemptionArgs
from ksched.plugins.defaultpreemption.plugin import DefaultPreemption
from ksched.plugins.noderesources.fit import Fit

NEG, LOW, MID, HIGH, VERY_HIGH = -100, 0, 100, 1000, 10000
SMALL = {"cpu": "100m", "memory": "100"}
MEDIUM = {"cpu": "200m", "memory": "200"}
LARGE = {"cpu": "300m", "memory": "300"}
VERY_LARGE = {"cpu": "500m", "memory": "500"}
ONE_POD = {"pods": "1"}
LABEL_KEYS = ("hostname", "zone", "region")


def epoch(n: int) -> str:
    """``n`` seconds after the epoch (upstream's ``epochTimeN`` are nanoseconds; order is what counts)."""
    return f"1970-01-01T00:00:{n:02d}Z"


def pod(
    name: str,
    *,
    node: str = "",
    priority: int | None = None,
    requests: Mapping[str, str] | None = None,
    labels: Mapping[str, str] | None = None,
    namespace: str = "default",
    start: str | None = None,
    preemption_policy: str | None = None,
    nominated: str | None = None,
    terminating: bool = False,
    conditions: Sequence[Mapping[str, str]] = (),
    spec: Mapping[str, Any] | None = None,
) -> Pod:
    """A pod as ``st.MakePod().Name(name).UID(name)...``."""
    status: dict[str, Any] = {}
    if start:
        status["startTime"] = start
    if nominated:
        status["nominatedNodeName"] = nominated
    if conditions:
        status["conditions"] = [dict(c) for c in conditions]
    extra = dict(spec or {})
    if preemption_policy:
        extra["preemptionPolicy"] = preemption_policy
    p = make_pod(
        name,
        namespace,
        uid=name,
        node_name=node,
        priority=priority,
        requests=requests,
        labels=labels,
        spec=extra or None,
        status=status or None,
    )
    if terminating:
        meta = msgspec.structs.replace(p.metadata, deletion_timestamp="2026-01-01T00:00:00Z")
        p = msgspec.structs.replace(p, metadata=meta)
    return p


def node(spec_name: str, capacity: Mapping[str, str], labels: Mapping[str, str] | None = None) -> Node:
    """A node as ``st.MakeNode().Capacity(capacity)`` (32 pods unless given); ``a/zone1`` names node
    ``a`` labelled hostname=a, zone=zone1 (upstream's convention)."""
    capacity = {"pods": "32", **capacity}
    parts = spec_name.split("/")
    all_labels = {LABEL_KEYS[i]: v for i, v in enumerate(parts)}
    all_labels.update(labels or {})
    return make_node(parts[0], allocatable=capacity, labels=all_labels)


def pdb(
    name: str = "pdb",
    namespace: str = "default",
    *,
    match_labels: Mapping[str, str] | None = None,
    allowed: int = 0,
    disrupted: Sequence[str] = (),
    selector: Mapping[str, Any] | None = None,
) -> PodDisruptionBudget:
    sel: Any = selector if selector is not None else {"matchLabels": dict(match_labels or {})}
    raw = {
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"selector": sel},
        "status": {
            "disruptionsAllowed": allowed,
            "disruptedPods": {p: "2026-01-01T00:00:00Z" for p in disrupted},
        },
    }
    return msgspec.convert(raw, PodDisruptionBudget)


# --- test plugins (upstream tf.* fakes) ---------------------------------------------------------
class ErrorOnLabelPlugin:
    """Upstream's ``TestPlugin``: AddPod/RemovePod fail on nodes labelled ``error=true``."""

    name = "test-plugin"

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        return None, None

    def add_pod(self, state: CycleState, pod: PodInfo, to_add: PodInfo, node: NodeInfo) -> Status | None:
        if node.labels.get("error") == "true":
            return Status.as_error(RuntimeError(f"failed to add pod: {pod.name}"))
        return None

    def remove_pod(
        self, state: CycleState, pod: PodInfo, to_remove: PodInfo, node: NodeInfo
    ) -> Status | None:
        if node.labels.get("error") == "true":
            return Status.as_error(RuntimeError(f"failed to remove pod: {pod.name}"))
        return None


@dataclass
class FakeFilter:
    """Upstream's ``FakeFilterPlugin``: counts calls; nodes in ``codes`` fail with that code."""

    codes: dict[str, Code] = field(default_factory=dict)
    calls: int = 0
    name: str = "FakeFilter"

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        self.calls += 1
        code = self.codes.get(node.name, Code.SUCCESS)
        return None if code == Code.SUCCESS else Status(code, f"injecting failure for pod {pod.name}")


class FalseFilter:
    name = "FalseFilter"

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        return Status.unschedulable("injecting failure for pod " + pod.name)


class TrueFilter:
    name = "TrueFilter"

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        return None


class MatchFilter:
    """Fits only the node named like the pod."""

    name = "MatchFilter"

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        return None if node.name == pod.name else Status.unschedulable("node name does not match")


# --- frameworks ---------------------------------------------------------------------------------
def framework(
    nodes: Sequence[Node],
    pods: Sequence[Pod] = (),
    *,
    pre_filter: Sequence[object] = (),
    filter: Sequence[object] = (),
    pdbs: Sequence[PodDisruptionBudget] = (),
    nominator: Nominator | None = None,
) -> Framework:
    snapshot = Snapshot.build(list(nodes), list(pods))
    for p in pdbs:
        snapshot.objects.put(p)
    fw = Framework("default-scheduler", snapshot, nominator=nominator)
    fw.set_plugins(PluginsByPoint(pre_filter=list(pre_filter), filter=list(filter)))  # type: ignore[arg-type]
    return fw


def fit_framework(
    nodes: Sequence[Node],
    pods: Sequence[Pod] = (),
    *,
    extra_pre_filter: Sequence[object] = (),
    extra_filter: Sequence[object] = (),
    **kw: Any,
) -> Framework:
    """NodeResourcesFit as PreFilter and Filter, plus ``extra_*`` plugins (before Fit in Filter)."""
    fit = Fit()
    return framework(nodes, pods, pre_filter=[fit, *extra_pre_filter], filter=[*extra_filter, fit], **kw)


def plugin_for(fw: Framework, args: DefaultPreemptionArgs | None = None, seed: int = 0) -> DefaultPreemption:
    import random

    pl = DefaultPreemption(args or DefaultPreemptionArgs(), fw, rng=random.Random(seed))
    fw.plugins.post_filter = [pl]
    return pl


def prefiltered(fw: Framework, p: Pod) -> tuple[CycleState, PodInfo]:
    """A cycle state after PreFilter, as upstream's tests prepare it."""
    state = CycleState()
    pi = PodInfo(p)
    _, status, _ = fw.run_pre_filter_plugins(state, pi)
    assert status is None or status.code == Code.SUCCESS, status
    return state, pi
