"""The one reader of ``kubectl get -o yaml`` files (``ksched simulate --cluster``, kubesim's
``--scenario``): Lists as kubectl flattens them, documents numbered from 1, errors naming the file,
the document and the item."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ksched.api.core import Node, Pod
from ksched.api.files import load_objects, parse_raw_objects, read_raw_objects
from ksched.api.kinds import ObjectError, UnsupportedKind

NODE = "{apiVersion: v1, kind: Node, metadata: {name: n}}"
POD = "{apiVersion: v1, kind: Pod, metadata: {name: p, namespace: ns}}"


@pytest.mark.parametrize(
    ("text", "located"),
    [
        (f"{NODE}\n---\n{POD}\n", [("f document 1", "n"), ("f document 2", "p")]),
        (f"---\n{NODE}\n---\n---\n{POD}\n", [("f document 1", "n"), ("f document 3", "p")]),
        (
            f"kind: List\nitems: [{NODE}, {POD}]\n",
            [("f document 1 items[0]", "n"), ("f document 1 items[1]", "p")],
        ),
        (f"apiVersion: v1\nkind: NodeList\nitems: [{NODE}]\n", [("f document 1 items[0]", "n")]),
        (f"items: [{NODE}]\n", [("f document 1 items[0]", "n")]),  # kubectl: any object whose items is a list
        (
            f"kind: List\nitems:\n- kind: List\n  items: [{NODE}]\n- {POD}\n",
            [
                ("f document 1 items[0] items[0]", "n"),
                ("f document 1 items[1]", "p"),
            ],
        ),
        ("kind: List\nitems: null\n---\nkind: PodList\n", []),
        (f"kind: List\nitems: [null, {NODE}]\n", [("f document 1 items[1]", "n")]),
        ("---\n---\n", []),
        ('{"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n"}}', [("f document 1", "n")]),
    ],
    ids=[
        "stream",
        "empty-documents",
        "list",
        "api-list",
        "items-only",
        "nested",
        "empty-lists",
        "null-item",
        "nothing",
        "json",
    ],
)
def test_objects_are_located_by_document_and_item(text: str, located: list[tuple[str, str]]) -> None:
    assert [(where, obj["metadata"]["name"]) for where, obj in parse_raw_objects(text, "f")] == located


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("a: [unclosed\n", "f: not valid YAML: "),
        ("- just\n- a list\n", "f document 1: expected a Kubernetes object (a mapping), got list"),
        (f"{NODE}\n---\nkind: List\nitems: {{a: 1}}\n", "f document 2: items must be a list, got dict"),
        (
            f"kind: List\nitems: [{NODE}, 7]\n",
            "f document 1 items[1]: expected a Kubernetes object (a mapping), got int",
        ),
    ],
    ids=["yaml", "not-a-mapping", "items-not-a-list", "item-not-a-mapping"],
)
def test_a_malformed_file_names_the_document(text: str, message: str) -> None:
    with pytest.raises(ObjectError) as info:
        parse_raw_objects(text, "f")
    assert str(info.value).startswith(message), info.value


def test_a_file_that_cannot_be_read_is_named(tmp_path: Path) -> None:
    with pytest.raises(
        ObjectError, match="^" + re.escape(f"{tmp_path / 'none.yaml'}: cannot read: No such file")
    ):
        read_raw_objects(tmp_path / "none.yaml")


def test_objects_decode_in_file_order_and_unread_kinds_are_skipped_or_refused(tmp_path: Path) -> None:
    path = tmp_path / "cluster.yaml"
    path.write_text(
        f"kind: List\nitems:\n- {{apiVersion: v1, kind: ConfigMap, metadata: {{name: c}}}}\n- {POD}\n"
        f"---\n{NODE}\n"
    )
    skipped: list[str] = []
    objects = load_objects(path, skipped)
    assert [type(o) for o in objects] == [Pod, Node]
    assert skipped == [
        f"{path} document 1 items[0]: ConfigMap c: unsupported kind 'ConfigMap' (supported: "
        + skipped[0].split("(supported: ")[1]
    ]
    with pytest.raises(UnsupportedKind, match=re.escape("document 1 items[0]: ConfigMap c")):
        load_objects(path)


def test_an_object_without_a_name_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "cluster.yaml"
    path.write_text("apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: Node, status: {}}\n")
    with pytest.raises(
        ObjectError, match=re.escape("document 1 items[0]: Node <unnamed>: metadata.name: Required value")
    ):
        load_objects(path)
