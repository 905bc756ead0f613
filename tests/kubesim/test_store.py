"""The store: resourceVersions, history window, snapshots at older versions, continue tokens, encoding."""

from __future__ import annotations

import json

import pytest
from ksched_kubesim import KubeSim, KubeSimConfig, LifecycleSettings
from ksched_kubesim.errors import ApiError
from ksched_kubesim.registry import ListQuery, decode_continue, encode_continue
from ksched_kubesim.resources import BY_KEY
from ksched_kubesim.store import canonical_metadata, restamp

PODS = BY_KEY["pods"]


def _sim(history: int = 100) -> KubeSim:
    return KubeSim(KubeSimConfig(history_size=history, lifecycle=LifecycleSettings(enabled=False)))


def _pod(name: str, namespace: str = "default") -> dict[str, object]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"containers": [{"name": "c", "image": "x:1"}]},
    }


def test_one_global_increasing_resource_version() -> None:
    sim = _sim()
    before = sim.resource_version
    a = sim.create(_pod("a"))
    sim.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "other"}})
    b = sim.create(_pod("b", "other"))
    assert int(a["metadata"]["resourceVersion"]) == before + 1
    assert int(b["metadata"]["resourceVersion"]) == before + 3
    assert sim.resource_version == before + 3


def test_snapshot_undoes_later_changes() -> None:
    sim = _sim()
    sim.create(_pod("a"))
    rv = sim.resource_version
    sim.create(_pod("b"))
    sim.registry.patch(
        PODS, "default", "a", "application/merge-patch+json", b'{"metadata":{"labels":{"x":"1"}}}'
    )
    sim.delete("Pod", "a", "default")
    table = sim.registry.table(PODS)
    then = sim.store.snapshot(table, rv)
    assert [e.name for e in then] == ["a"]
    assert json.loads(then[0].body)["metadata"].get("labels") is None
    assert [e.name for e in sim.store.snapshot(table, sim.resource_version)] == ["b"]


def test_history_window_expires_old_resource_versions() -> None:
    sim = _sim(history=3)
    rv = sim.resource_version
    for i in range(5):
        sim.create(_pod(f"p{i}"))
    table = sim.registry.table(PODS)
    assert len(table.history) == 3
    assert not sim.store.can_replay_from(table, rv)
    assert sim.store.can_replay_from(table, table.window_start)
    with pytest.raises(ApiError) as info:
        sim.store.snapshot(table, rv)
    assert info.value.code == 410


def test_list_exact_and_continue_use_the_snapshot() -> None:
    sim = _sim()
    for name in ("a", "b", "c"):
        sim.create(_pod(name))
    first = sim.registry.list_entries(PODS, "default", ListQuery(limit=2))
    assert [e.name for e in first.items] == ["a", "b"] and first.remaining == 1
    sim.create(_pod("aa"))
    second = sim.registry.list_entries(
        PODS, "default", ListQuery(limit=2, continue_token=first.continue_token)
    )
    assert [e.name for e in second.items] == ["c"], "objects created after the first page are not listed"
    assert second.resource_version == first.resource_version


def test_list_order_is_the_etcd_key_order() -> None:
    sim = _sim()
    for ns in ("a-b", "a"):
        sim.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
        sim.create(_pod("x", ns))
    items = sim.registry.list_entries(PODS, None, ListQuery()).items
    assert [e.namespace for e in items] == ["a-b", "a"], "'/a-b/x' sorts before '/a/x' bytewise"


def test_continue_token_format() -> None:
    token = encode_continue(239, "/default/bind-me\x00")
    assert token == "eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6MjM5LCJzdGFydCI6Ii9kZWZhdWx0L2JpbmQtbWVcdTAwMDAifQ"
    assert decode_continue(token) == (239, "/default/bind-me\x00")
    with pytest.raises(ApiError) as info:
        decode_continue("not-a-token")
    assert info.value.code == 400


def test_restamp_and_metadata_order() -> None:
    meta = canonical_metadata(
        {"labels": {"b": "1", "a": "2"}, "resourceVersion": "5", "name": "x", "uid": "u"}
    )
    assert list(meta) == ["name", "uid", "resourceVersion", "labels"]
    assert list(meta["labels"]) == ["a", "b"]
    body = b'{"metadata":{"name":"x","resourceVersion":"5"},"spec":{"note":"resourceVersion"}}'
    assert (
        restamp(body, 5, 9)
        == b'{"metadata":{"name":"x","resourceVersion":"9"},"spec":{"note":"resourceVersion"}}'
    )


def test_bodies_are_compact_and_lists_omit_kind() -> None:
    sim = _sim()
    sim.create(_pod("a"))
    raw = sim.raw("Pod", "a", "default")
    assert raw.startswith(b'{"kind":"Pod","apiVersion":"v1","metadata":{"name":"a","namespace":"default"')
    assert b" " not in raw.split(b'"image"')[0]
    entry = sim.registry.get(PODS, "default", "a")
    assert sim.registry.render_item(PODS, entry).startswith(b'{"metadata":')


def test_bulk_helpers() -> None:
    sim = _sim()
    assert sim.create_all(_pod(f"c{i}") for i in range(3)) == 3
    assert sim.load_all([_pod("raw")]) == 1
    created, loaded = sim.get("Pod", "c0", "default"), sim.get("Pod", "raw", "default")
    assert created is not None and created["spec"]["schedulerName"] == "default-scheduler"
    assert loaded is not None and "schedulerName" not in loaded["spec"]
    assert [p["metadata"]["name"] for p in sim.list_objects("Pod")] == ["c0", "c1", "c2", "raw"]
