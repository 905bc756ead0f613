"""The affinity index follows the snapshot through resets, node removals (rows move) and relabels."""

from __future__ import annotations

from ksched.framework.snapshot import Snapshot
from ksched.plugins.interpodaffinity.index import AffinityIndex
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
