"""The snapshot's lists of nodes with pods with (anti-)affinity (upstream's HavePodsWithAffinityList
and HavePodsWithRequiredAntiAffinityList) stay what a fresh walk of the nodes gives, in row order,
whatever pods and nodes come and go; they are rebuilt only when a node joins or leaves one. So do
the nodes' generations by row (``node_generations``), which per-node indexes read instead of the
nodes."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from ksched.framework.snapshot import Snapshot
from ksched.framework.testing import make_node, make_pod

NODES = [f"n{i}" for i in range(4)]
TERM = {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": "kubernetes.io/hostname"}
AFFINITIES: dict[str, dict[str, Any] | None] = {
    "none": None,
    "preferred": {
        "podAntiAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 1, "podAffinityTerm": TERM}]
        }
    },
    "required": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [TERM]}},
}


def pod(uid: str, kind: str, node: str, labels: dict[str, str] | None = None) -> Any:
    affinity = AFFINITIES[kind]
    return make_pod(
        uid, uid=uid, node_name=node, labels=labels, spec={"affinity": affinity} if affinity else None
    )


def walked(snap: Snapshot) -> tuple[list[str], list[str]]:
    return (
        [ni.name for ni in snap.nodes if ni.pods_with_affinity],
        [ni.name for ni in snap.nodes if ni.pods_with_required_anti_affinity],
    )


def listed(snap: Snapshot) -> tuple[list[str], list[str]]:
    return (
        [ni.name for ni in snap.have_pods_with_affinity()],
        [ni.name for ni in snap.have_pods_with_required_anti_affinity()],
    )


OPERATIONS = st.lists(
    st.tuples(
        st.sampled_from(["add", "remove", "relabel", "remove_node", "add_node"]),
        st.integers(0, 5),
        st.sampled_from(sorted(AFFINITIES)),
        st.sampled_from(NODES),
    ),
    max_size=40,
)


@settings(max_examples=200, deadline=None)
@given(OPERATIONS)
def test_lists_match_a_walk_of_the_nodes(operations: list[tuple[str, int, str, str]]) -> None:
    snap = Snapshot()
    for name in NODES:
        snap.upsert_node(make_node(name))
    kinds: dict[str, tuple[str, str]] = {}
    for op, i, kind, node in operations:
        uid = f"p{i}"
        if op == "add":
            snap.add_pod(pod(uid, kind, node))
            kinds[uid] = (kind, node)
        elif op == "remove":
            snap.remove_pod(uid)
            kinds.pop(uid, None)
        elif op == "relabel" and uid in kinds:
            was, where = kinds[uid]
            snap.add_pod(pod(uid, was, where, labels={"relabelled": str(i)}))
        elif op == "remove_node":
            snap.remove_node(node)
        elif op == "add_node":
            snap.upsert_node(make_node(node))
        assert listed(snap) == walked(snap), (op, uid, kind, node)
        assert snap.node_generations().tolist() == [ni.generation for ni in snap.nodes], (op, uid, node)


def test_a_node_joins_the_list_once() -> None:
    snap = Snapshot()
    for name in NODES:
        snap.upsert_node(make_node(name))
    snap.add_pod(pod("a", "preferred", "n1"))
    first = snap.have_pods_with_affinity()
    snap.add_pod(pod("b", "preferred", "n1"))
    assert snap.have_pods_with_affinity() is first, "rebuilt although n1 was in the list already"
    snap.add_pod(pod("c", "preferred", "n2"))
    assert [ni.name for ni in snap.have_pods_with_affinity()] == ["n1", "n2"]


def test_only_a_local_placement_nothing_replaced_is_undone() -> None:
    snap = Snapshot.build([make_node(n) for n in NODES], [])
    first = make_pod("p", uid="p", node_name="n0")
    snap.add_pod(first)
    before = snap.pod_locations[first.metadata.uid]
    snap.add_local(make_pod("p", uid="p", node_name="n1"), "n1")  # the replica's own assumption: n0 -> n1
    assert snap.local == {first.metadata.uid: "n1"}
    assert snap.undo_local(first.metadata.uid, "n1", before)
    assert snap.location(first.metadata.uid) == "n0" and not snap.local
    snap.add_local(make_pod("p", uid="p", node_name="n1"), "n1")
    snap.add_pod(make_pod("p", uid="p", node_name="n1"))  # a delta: the informer's word on the pod
    assert not snap.undo_local(first.metadata.uid, "n1", before)
    assert snap.location(first.metadata.uid) == "n1"
    snap.add_local(make_pod("q", uid="q", node_name="n2"), "n2")
    snap.remove_pod("q")  # removed by a delta: nothing left to undo
    assert not snap.undo_local("q", "n2", None) and not snap.local
