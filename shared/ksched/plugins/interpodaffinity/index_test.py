"""The affinity index follows the snapshot through resets, node removals (rows move) and relabels,
and the arrays its tables keep follow their counts."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from ksched.framework.snapshot import Snapshot
from ksched.plugins.interpodaffinity.index import AffinityIndex, IndexedCounts
from ksched.plugins.interpodaffinity.testing import affinity, node, pod, snapshot_of, term

ANTI = affinity(anti=[term("zone", match_labels={"app": "web"})])


def anti_counts(index: AffinityIndex) -> dict[str, dict[str, int]]:
    return {t.topology_key: dict(v) for t, v in index.anti.items()}


def test_reset_snapshot_reaching_the_same_generation_is_reread() -> None:
    snap = snapshot_of([node("a", {"zone": "z1"})], [pod("p", labels={"app": "web"}, node="a", aff=ANTI)])
    index = AffinityIndex()
    index.sync(snap)
    assert anti_counts(index) == {"zone": {"z1": 1}}
    generation = snap.generation
    snap.reset()
    snap.upsert_node(node("a", {"zone": "z2"}))
    while snap.generation < generation:
        snap.add_pod(pod(f"q{snap.generation}", node="a"))
    assert snap.generation == generation
    assert not index.synced_with(snap)
    index.sync(snap)
    assert anti_counts(index) == {}
    assert sum(index.classes.values()) == len(snap.pod_locations)


def test_removed_node_moves_the_last_row_and_columns_follow() -> None:
    snap: Snapshot = snapshot_of(
        [node("a", {"zone": "z1"}), node("b", {"zone": "z2"}), node("c", {"zone": "z3"})],
        [pod("p", labels={"app": "web"}, node="a", aff=ANTI), pod("q", labels={"app": "web"}, node="c")],
    )
    index = AffinityIndex()
    index.sync(snap)
    column = index.column("zone")
    assert [column.codes[ni.index] for ni in snap.nodes] == [column.code_of[z] for z in ("z1", "z2", "z3")]
    snap.remove_node("a")  # c moves into row 0
    index.sync(snap)
    assert anti_counts(index) == {}
    assert [ni.name for ni in snap.nodes] == ["c", "b"]
    assert [column.codes[ni.index] for ni in snap.nodes] == [column.code_of[z] for z in ("z3", "z2")]
    web = next(iter(index.class_values("zone")))
    assert index.class_values("zone")[web] == {"z3": 1}


def test_relabelled_node_moves_its_pods_to_the_new_domain() -> None:
    snap = snapshot_of([node("a", {"zone": "z1"})], [pod("p", labels={"app": "web"}, node="a", aff=ANTI)])
    index = AffinityIndex()
    index.sync(snap)
    index.class_values("zone")
    snap.upsert_node(node("a", {"zone": "z9"}))
    index.sync(snap)
    assert anti_counts(index) == {"zone": {"z9": 1}}
    assert list(index.class_values("zone").values()) == [{"z9": 1}]
    assert index.column("zone").codes[0] == index.column("zone").code_of["z9"]


PREFERRED_ANTI = affinity(preferred_anti=[(3, term("zone", match_labels={"app": "web"}))])


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["add", "remove", "relabel_node", "add_node"]),
            st.integers(0, 7),
            st.sampled_from(["n0", "n1", "n2", "n3"]),
            st.sampled_from(["z1", "z2", "z3", "z4"]),
            st.booleans(),
        ),
        max_size=30,
    )
)
def test_kept_arrays_follow_every_change(operations: list[tuple[str, int, str, str, bool]]) -> None:
    """The arrays an index table's counts keep once read (what a cycle's Score reads) stay what a fresh
    conversion of the counts gives, however pods and nodes change between cycles."""
    snap = snapshot_of([node(f"n{i}", {"zone": f"z{i % 3 + 1}"}) for i in range(3)])
    index = AffinityIndex()
    for op, i, where, zone, with_affinity in operations:
        if op == "add":
            snap.add_pod(
                pod(f"p{i}", labels={"app": "web"}, node=where, aff=PREFERRED_ANTI if with_affinity else None)
            )
        elif op == "remove":
            snap.remove_pod(f"p{i}")
        elif op == "relabel_node":
            if where in snap.node_map:
                snap.upsert_node(node(where, {"zone": zone}))
        else:
            snap.upsert_node(node(where, {"zone": zone}))
        index.sync(snap)
        column = index.column("zone")
        tables = [*index.class_values("zone").values(), *index.preferred.values()]
        for counts in tables:
            assert isinstance(counts, IndexedCounts)
            kept = column.lookup(counts)  # built on first read, adjusted afterwards
            assert kept.tolist() == column._array(counts).tolist(), (op, i, where, zone)
            assert not kept.flags.writeable
