"""Builders for the noderesources table tests, mirroring upstream's test helpers
(``newResourcePod``, ``makeNode``, ``st.MakePod().Req()``, ``st.MakeNode().Capacity()``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ksched.api.core import Node, Pod
from ksched.framework.cycle_state import CycleState
from ksched.framework.interfaces import Int64Array
from ksched.framework.nodeinfo import NodeInfo
from ksched.framework.podinfo import PodInfo
from ksched.framework.resources import Resource
from ksched.framework.snapshot import Snapshot
from ksched.framework.testing import container, make_node, make_pod
from ksched.plugins.args.types import NodeResourcesFitArgs, ResourceSpec, ScoringStrategy

EXTENDED_A = "example.com/aaa"
EXTENDED_B = "example.com/bbb"
KUBERNETES_IO_A = "kubernetes.io/something"
KUBERNETES_IO_B = "subdomain.kubernetes.io/something"
HUGEPAGES_A = "hugepages-2Mi"
EXTENDED_DRA = "extended.resource.dra.io/something"
EXTENDED_RES = "abc.com/xyz"

DEFAULT = [("cpu", 1), ("memory", 1)]
EXTENDED_SET = [("cpu", 1), ("memory", 1), (EXTENDED_RES, 1)]
REQ_1_2 = {"cpu": "1000", "memory": "2000"}
REQ_2_3 = {"cpu": "2000", "memory": "3000"}


def n(name: str, cpu: str, memory: str, ext: str | None = None) -> Node:
    """``st.MakeNode().Name(name).Capacity(cpu, memory[, extendedRes])``."""
    capacity = {"cpu": cpu, "memory": memory}
    if ext is not None:
        capacity[EXTENDED_RES] = ext
    return st_node(name, capacity)


def args_for(resources: list[tuple[str, int]] | None, kind: str) -> NodeResourcesFitArgs:
    args = NodeResourcesFitArgs(scoring_strategy=ScoringStrategy(type=kind))
    assert args.scoring_strategy is not None
    # Upstream's tables hand the internal config over undefaulted: restore the given list.
    args.scoring_strategy.resources = [ResourceSpec(name=r, weight=w) for r, w in resources or []]
    return args


def usage(
    milli_cpu: int = 0, memory: int = 0, ephemeral: int = 0, scalars: Mapping[str, int] | None = None
) -> dict[str, str]:
    """A container's requests as upstream's ``newResourcePod`` writes them (all four base resources)."""
    out = {"cpu": f"{milli_cpu}m", "memory": str(memory), "pods": "0", "ephemeral-storage": str(ephemeral)}
    out.update({name: str(q) for name, q in (scalars or {}).items()})
    return out


def resource_pod(*usages: Mapping[str, str], **kwargs: Any) -> Pod:
    """One container per usage (``newResourcePod``); extra keywords go to ``make_pod``."""
    containers = [container(name=f"c{i}", requests=dict(u)) for i, u in enumerate(usages)]
    return make_pod(containers=containers, **kwargs)


def with_init(
    pod_usages: Sequence[Mapping[str, str]], init_usages: Sequence[Mapping[str, str]], **kw: Any
) -> Pod:
    inits = [container(name=f"i{i}", requests=dict(u)) for i, u in enumerate(init_usages)]
    containers = [container(name=f"c{i}", requests=dict(u)) for i, u in enumerate(pod_usages)]
    return make_pod(containers=containers, init_containers=inits, **kw)


def st_pod(
    *requests: Mapping[str, str],
    name: str = "pod",
    node: str = "",
    uid: str | None = None,
    pod_level: Mapping[str, str] | None = None,
    sidecar: Mapping[str, str] | None = None,
) -> Pod:
    """``st.MakePod().Req(r1).Req(r2)...``: one container per request map (none: no container)."""
    containers = [container(name=f"con{i}", requests=dict(r)) for i, r in enumerate(requests)]
    spec: dict[str, Any] = {}
    if pod_level is not None:
        spec["resources"] = {"requests": dict(pod_level)}
    inits = [container(name="sidecar", requests=dict(sidecar), restart_policy="Always")] if sidecar else None
    return make_pod(name, node_name=node, uid=uid, containers=containers, init_containers=inits, spec=spec)


def st_node(name: str = "node", capacity: Mapping[str, str] | None = None) -> Node:
    """``st.MakeNode().Name(n).Capacity(c)``: capacity = allocatable, with 32 pods unless given."""
    if capacity is None:
        return make_node(name)
    res = {"pods": "32", **capacity}
    return make_node(name, capacity=res)


def make_resource_node(
    name: str, milli_cpu: int, memory: int, extended: Mapping[str, int] | None = None
) -> Node:
    """Upstream's ``makeNode`` helper: cpu, memory and extended resources, no pods."""
    res = {"cpu": f"{milli_cpu}m", "memory": str(memory)}
    res.update({k: str(v) for k, v in (extended or {}).items()})
    return make_node(name, capacity=res)


def snapshot_of(nodes: Sequence[Node], pods: Sequence[Pod] = ()) -> Snapshot:
    """``Snapshot.build`` with every scalar resource's column registered up front.

    Registering first keeps these tests independent of ``NodeColumns`` widening its matrices
    while a row is written (an IndexError in the framework as first committed).
    """
    snap = Snapshot()
    for node in nodes:
        for name in Resource.from_list(node.status.allocatable).scalar:
            snap.columns.column(name)
    for pod in pods:
        for name in PodInfo(pod).requests.scalar:
            snap.columns.column(name)
    for node in nodes:
        snap.upsert_node(node)
    for pod in pods:
        if pod.spec.node_name:
            snap.add_pod(pod)
    return snap


def node_info(node: Node, *pods: Pod) -> NodeInfo:
    ni = NodeInfo(node)
    for pod in pods:
        ni.add_pod(PodInfo(pod))
    return ni


def scores_both_ways(
    plugin: Any, state: CycleState, pod: PodInfo, snapshot: Snapshot
) -> tuple[list[int], Int64Array]:
    """Per-node scores and the batch scores over all rows, for equality checks."""
    per_node = [plugin.score(state, pod, ni) for ni in snapshot.nodes]
    rows = np.arange(len(snapshot.nodes), dtype=np.intp)
    return per_node, plugin.score_batch(state, pod, snapshot, rows)


def assert_scores(
    plugin: Any,
    pod: Pod,
    nodes: Sequence[Node],
    existing: Sequence[Pod],
    want: list[int],
    pre_score: bool = True,
) -> None:
    """``plugin`` scores ``pod`` ``want`` on ``nodes`` (``existing`` pods placed), per node and in one
    batch; ``pre_score``: PreScore runs first and passes."""
    snapshot = snapshot_of(nodes, existing)
    state, pi = CycleState(), PodInfo(pod)
    if pre_score:
        assert plugin.pre_score(state, pi, snapshot.nodes) is None
    per_node, batch = scores_both_ways(plugin, state, pi, snapshot)
    assert per_node == want
    assert batch.tolist() == want
