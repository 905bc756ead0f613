"""Snapshot.add_pod of a placement it already holds builds no PodInfo (a relabel shares the derived
data); PodInfo.placed_on shares the derived data of the unbound pod."""

from __future__ import annotations

import msgspec
import pytest

from ksched.framework import snapshot as snapshot_module
from ksched.framework.nodeinfo import NodeInfo
from ksched.framework.podinfo import PodInfo
from ksched.framework.snapshot import Snapshot, with_node_name
from ksched.framework.testing import container, make_node, make_pod


def _counting_podinfo(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    built: list[str] = []

    class Counting(PodInfo):
        __slots__ = ()

        def __init__(self, pod: object) -> None:
            built.append(pod.metadata.uid)  # type: ignore[attr-defined]
            super().__init__(pod)  # type: ignore[arg-type]

    monkeypatch.setattr(snapshot_module, "PodInfo", Counting)
    return built


def test_the_same_placement_again_keeps_the_pod_info(monkeypatch: pytest.MonkeyPatch) -> None:
    snap = Snapshot()
    snap.upsert_node(make_node("n1", capacity={"cpu": "4", "memory": "8Gi", "pods": "110"}))
    built = _counting_podinfo(monkeypatch)
    pod = make_pod("p", uid="u1", labels={"app": "a"}, requests={"cpu": "500m"}, node_name="n1")
    first = snap.add_pod(pod)
    assert built == ["u1"]
    status_update = msgspec.structs.replace(
        pod, metadata=msgspec.structs.replace(pod.metadata, resource_version="2")
    )
    again = snap.add_pod(status_update)
    assert again is first and again.pod is status_update  # new object kept, nothing rebuilt
    assert built == ["u1"]
    assert snap.get("n1").requested.milli_cpu == 500
    relabelled = msgspec.structs.replace(
        pod, metadata=msgspec.structs.replace(pod.metadata, labels={"app": "b"})
    )
    changed = snap.add_pod(relabelled)  # the topology labels a binding adds: the spec is the same
    assert changed is not first and changed.labels == {"app": "b"} and changed.pod is relabelled
    assert built == ["u1"] and changed.requests is first.requests  # derived data shared, not rebuilt
    assert snap.get("n1").requested.milli_cpu == 500 and len(snap.get("n1").pods) == 1
    assert [p.labels for p in snap.get("n1").pods] == [{"app": "b"}]
    respecced = msgspec.structs.replace(relabelled, spec=msgspec.structs.replace(relabelled.spec, priority=7))
    assert snap.add_pod(respecced).priority == 7 and built == ["u1", "u1"]  # a new spec: rebuilt


def test_placed_on_matches_a_pod_info_of_the_bound_pod() -> None:
    pod = make_pod("p", uid="u1", requests={"cpu": "250m", "memory": "1Gi"})
    pi = PodInfo(pod)
    pi.cache["memo"] = 1
    placed = pi.placed_on("n7")
    fresh = PodInfo(with_node_name(pod, "n7"))
    assert placed.pod == fresh.pod and placed.pod.spec.node_name == "n7"
    assert pi.pod.spec.node_name == ""  # the original is untouched
    for slot in PodInfo.__slots__:
        if slot not in ("pod", "cache"):
            assert getattr(placed, slot) == getattr(fresh, slot), slot
    assert placed.cache == {}


def _state(snap: Snapshot) -> object:
    ni = snap.get("n1")
    return (
        [p.uid for p in ni.pods],
        [p.uid for p in ni.pods_with_affinity],
        [p.labels for p in ni.pods],
        (ni.requested.milli_cpu, ni.requested.memory, ni.non_zero_requested.milli_cpu, len(ni.used_ports)),
        snap.columns.req[ni.index].tolist(),
        snap.columns.nonzero[ni.index].tolist(),
        list(snap.pod_locations),
        snap.generation,
        [n.name for n in snap.have_pods_with_affinity()],
    )


def test_a_relabel_leaves_the_snapshot_as_a_removal_and_a_placement_do(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The relabel path (no requests counted out and in) ends in the state remove_pod + add_pod
    leave: pod order on the node, affinity lists, requests, ports, the node's generation moved, pod
    order in pod_locations, the snapshot generation. (The lists' cache version may differ: the
    relabel keeps the node in its lists, so it does not invalidate them as a removal does.)"""
    anti = {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"app": "x"}}, "topologyKey": "kubernetes.io/hostname"}
            ]
        }
    }
    pods = [
        make_pod(
            "a",
            uid="ua",
            labels={"app": "x"},
            requests={"cpu": "100m"},
            node_name="n1",
            spec={"affinity": anti},
        ),
        make_pod(
            "b",
            uid="ub",
            node_name="n1",
            containers=[container(requests={"cpu": "200m", "memory": "1Gi"}, host_ports=[(8080, "TCP", "")])],
        ),
        make_pod("c", uid="uc", requests={"cpu": "300m"}, node_name="n1"),
    ]
    snaps = []
    for _ in range(2):
        snap = Snapshot()
        snap.upsert_node(make_node("n1", capacity={"cpu": "4", "memory": "8Gi", "pods": "110"}))
        for pod in pods:
            snap.add_pod(pod)
        snap.have_pods_with_affinity()
        snaps.append(snap)
    fast, slow = snaps
    counted: list[int] = []
    account = NodeInfo._account

    def counting(ni: NodeInfo, pi: PodInfo, sign: int) -> None:
        counted.append(sign)
        account(ni, pi, sign)

    monkeypatch.setattr(NodeInfo, "_account", counting)
    for pod in pods[:2]:
        meta = msgspec.structs.replace(pod.metadata, labels={**pod.metadata.labels, "zone": "z1"})
        relabelled = msgspec.structs.replace(pod, metadata=meta)
        generation = fast.get("n1").generation
        fast.add_pod(relabelled)
        assert fast.get("n1").generation > generation and counted == []  # requests not counted again
        slow.remove_pod(pod.metadata.uid)
        slow.add_pod(PodInfo(relabelled))
        counted.clear()
        assert _state(fast) == _state(slow)
    assert [p.uid for p in fast.get("n1").pods] == ["uc", "ua", "ub"]
    assert fast.get("n1").requested.milli_cpu == 600
