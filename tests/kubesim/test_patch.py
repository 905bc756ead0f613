"""Merge patch, JSON patch and strategic merge patch semantics."""

from __future__ import annotations

from typing import Any

import pytest
from ksched_kubesim.errors import ApiError
from ksched_kubesim.patch import json_patch, merge_patch, schema_for, strategic_merge

POD = schema_for("Pod")


def test_merge_patch_is_rfc7386() -> None:
    target = {"a": "b", "c": {"d": "e", "f": "g"}, "list": [1, 2]}
    patch = {"a": "z", "c": {"f": None}, "list": [3], "new": {"x": None, "y": 1}}
    assert merge_patch(target, patch) == {"a": "z", "c": {"d": "e"}, "list": [3], "new": {"y": 1}}
    assert target["c"] == {"d": "e", "f": "g"}, "the target is not modified"


def test_json_patch_operations() -> None:
    doc: dict[str, Any] = {"metadata": {"labels": {"a": "1"}}, "spec": {"items": [1, 2]}}
    ops = [
        {"op": "add", "path": "/metadata/labels/b", "value": "2"},
        {"op": "replace", "path": "/metadata/labels/a", "value": "0"},
        {"op": "add", "path": "/spec/items/-", "value": 3},
        {"op": "remove", "path": "/spec/items/0"},
        {"op": "copy", "from": "/metadata/labels/b", "path": "/metadata/labels/c"},
        {"op": "move", "from": "/metadata/labels/c", "path": "/metadata/labels/d"},
        {"op": "test", "path": "/spec/items", "value": [2, 3]},
    ]
    assert json_patch(doc, ops) == {
        "metadata": {"labels": {"a": "0", "b": "2", "d": "2"}},
        "spec": {"items": [2, 3]},
    }
    assert doc["spec"]["items"] == [1, 2]


@pytest.mark.parametrize(
    "ops",
    [
        [{"op": "remove", "path": "/missing"}],
        [{"op": "test", "path": "/metadata", "value": 1}],
        [{"op": "replace", "path": "/a/b", "value": 1}],
    ],
)
def test_json_patch_errors_are_422(ops: list[Any]) -> None:
    with pytest.raises(ApiError) as info:
        json_patch({"metadata": {}}, ops)
    assert info.value.code == 422


def test_strategic_merge_of_conditions_puts_new_ones_first() -> None:
    original = {"status": {"conditions": [{"type": "PodScheduled", "status": "False"}]}}
    patch = {"status": {"conditions": [{"type": "Ready", "status": "False"}]}}
    merged = strategic_merge(original, patch, POD)
    assert [c["type"] for c in merged["status"]["conditions"]] == ["Ready", "PodScheduled"]


def test_strategic_merge_updates_matching_elements_in_place() -> None:
    original = {
        "status": {"conditions": [{"type": "A", "status": "False"}, {"type": "B", "status": "False"}]}
    }
    patch = {"status": {"conditions": [{"type": "B", "status": "True", "reason": "R"}]}}
    merged = strategic_merge(original, patch, POD)
    assert merged["status"]["conditions"] == [
        {"type": "A", "status": "False"},
        {"type": "B", "status": "True", "reason": "R"},
    ]


def test_strategic_merge_containers_by_name_and_replaces_other_lists() -> None:
    original = {
        "spec": {
            "containers": [{"name": "a", "image": "x:1"}, {"name": "b", "image": "y:1"}],
            "tolerations": [{"key": "t1"}],
        }
    }
    patch = {"spec": {"containers": [{"name": "b", "image": "y:2"}], "tolerations": [{"key": "t2"}]}}
    merged = strategic_merge(original, patch, POD)
    assert merged["spec"]["containers"] == [{"name": "a", "image": "x:1"}, {"name": "b", "image": "y:2"}]
    assert merged["spec"]["tolerations"] == [{"key": "t2"}]


def test_strategic_merge_directives() -> None:
    original = {
        "metadata": {"finalizers": ["a", "b"], "labels": {"x": "1", "y": "2"}},
        "spec": {"containers": [{"name": "a"}, {"name": "b"}]},
    }
    patch = {
        "metadata": {"$deleteFromPrimitiveList/finalizers": ["a"], "labels": {"$patch": "replace", "z": "3"}},
        "spec": {"containers": [{"name": "a", "$patch": "delete"}]},
    }
    merged = strategic_merge(original, patch, POD)
    assert merged["metadata"] == {"finalizers": ["b"], "labels": {"z": "3"}}
    assert merged["spec"]["containers"] == [{"name": "b"}]
    replaced = strategic_merge(
        original, {"spec": {"containers": [{"$patch": "replace"}, {"name": "c"}]}}, POD
    )
    assert replaced["spec"]["containers"] == [{"name": "c"}]


def test_strategic_merge_null_deletes_and_set_element_order() -> None:
    original = {"status": {"nominatedNodeName": "n", "conditions": [{"type": "A"}, {"type": "B"}]}}
    patch = {
        "status": {"nominatedNodeName": None, "$setElementOrder/conditions": [{"type": "B"}, {"type": "A"}]}
    }
    merged = strategic_merge(original, patch, POD)
    assert "nominatedNodeName" not in merged["status"]
    assert [c["type"] for c in merged["status"]["conditions"]] == ["B", "A"]


def test_primitive_merge_list_deduplicates() -> None:
    merged = strategic_merge(
        {"metadata": {"finalizers": ["a"]}}, {"metadata": {"finalizers": ["b", "a"]}}, POD
    )
    assert sorted(merged["metadata"]["finalizers"]) == ["a", "b"]


@pytest.mark.parametrize("field", ["path", "from"])
def test_json_patch_pointers_must_be_strings(field: str) -> None:
    """Found by tests/fuzz/test_kubesim_http.py: a ``from`` that was not a string crashed (500). The
    API server refuses it as it decodes the patch: 400 naming the field."""
    op = {"op": "move", "path": "/b", "from": "/a", field: ["/a"]}
    with pytest.raises(ApiError) as info:
        json_patch({"a": 1}, [op])
    assert info.value.code == 400
    assert str(info.value) == (
        "error decoding patch: json: cannot unmarshal array into Go struct field "
        f"jsonPatchOp.{field} of type string"
    )
