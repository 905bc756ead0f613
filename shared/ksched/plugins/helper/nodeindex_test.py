"""NodeIndex: columns follow node changes, row moves and snapshot resets."""

from __future__ import annotations

import gc
import weakref

from ksched.framework.testing import make_node, make_pod, make_snapshot
from ksched.plugins.helper.nodeindex import node_index


def test_label_columns_follow_node_updates_and_removals() -> None:
    snapshot = make_snapshot([make_node("a", labels={"zone": "x"}), make_node("b", labels={"zone": "y"})])
    codes, code_of = node_index(snapshot).label_codes("zone")
    assert [codes[0], codes[1]] == [code_of["x"], code_of["y"]]
    snapshot.upsert_node(make_node("b", labels={"zone": "x"}))
    codes, code_of = node_index(snapshot).label_codes("zone")
    assert codes.tolist() == [code_of["x"], code_of["x"]]
    snapshot.remove_node("a")
    codes, code_of = node_index(snapshot).label_codes("zone")
    assert codes.tolist() == [code_of["x"]]


def test_pod_changes_keep_the_columns() -> None:
    snapshot = make_snapshot([make_node("a", labels={"zone": "x"})])
    index = node_index(snapshot)
    version = index.version
    snapshot.add_pod(make_pod("p", node_name="a"))
    assert node_index(snapshot).version == version


def test_pod_changes_skip_the_node_comparison() -> None:
    """A cycle after an assume must not walk every node: only ``nodes_version`` is looked at."""
    snapshot = make_snapshot([make_node("a"), make_node("b")])
    index = node_index(snapshot)
    compared = index._nodes
    snapshot.add_pod(make_pod("p", node_name="a"))
    snapshot.remove_pod(snapshot.get("a").pods[0].uid)
    assert node_index(snapshot)._nodes is compared  # the node list was not rebuilt


def test_identical_node_object_keeps_the_columns_a_changed_one_drops_them() -> None:
    node = make_node("a", labels={"zone": "x"})
    snapshot = make_snapshot([node])
    index = node_index(snapshot)
    version = index.version
    snapshot.upsert_node(node)  # nodes_version moves, the object does not change
    assert node_index(snapshot).version == version
    snapshot.upsert_node(make_node("a", labels={"zone": "y"}))
    assert node_index(snapshot).version == version + 1
    codes, code_of = node_index(snapshot).label_codes("zone")
    assert codes.tolist() == [code_of["y"]]


def test_reset_snapshot_is_detected_even_at_an_equal_generation() -> None:
    snapshot = make_snapshot([make_node("a", labels={"zone": "x"})])
    index = node_index(snapshot)
    generation = snapshot.generation
    snapshot.reset()
    snapshot.upsert_node(make_node("other", labels={"zone": "y"}))
    snapshot.generation = generation  # the same number as before the reset
    codes, code_of = node_index(snapshot).label_codes("zone")
    assert index is node_index(snapshot)
    assert codes.tolist() == [code_of["y"]] and "x" not in code_of


def test_label_ints_follow_go_parse_int() -> None:
    values = ["10", "-3", "+4", "1_0", "0x1", "99999999999999999999", "007"]
    snapshot = make_snapshot(
        [make_node(f"n{i}", labels={"v": v}) for i, v in enumerate(values)] + [make_node("none")]
    )
    numbers, valid = node_index(snapshot).label_ints("v")
    assert valid.tolist() == [True, True, True, False, False, False, True, False]
    assert numbers[valid].tolist() == [10, -3, 4, 7]


def test_taint_classes_share_identical_taint_lists() -> None:
    taint = {"key": "k", "value": "v", "effect": "NoSchedule"}
    snapshot = make_snapshot([make_node("a"), make_node("b", taints=[taint]), make_node("c", taints=[taint])])
    classes = node_index(snapshot).taint_classes()
    assert classes.class_of_row.tolist() == [0, 1, 1]
    assert len(classes.taints) == 2 and classes.taints[0] == ()


def test_image_presence_column() -> None:
    snapshot = make_snapshot([make_node("a", images=[(["img:1"], 5)]), make_node("b")])
    assert node_index(snapshot).has_image("img:1").tolist() == [True, False]


def test_index_does_not_keep_its_snapshot_alive() -> None:
    snapshot = make_snapshot([make_node("a", labels={"zone": "x"})])
    node_index(snapshot).label_codes("zone")
    ref = weakref.ref(snapshot)
    del snapshot
    gc.collect()
    assert ref() is None
