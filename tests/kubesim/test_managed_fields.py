"""managedFields as the real kube-apiserver 1.36.2 writes them: the captures' entries, the watch
stream byte for byte (volatile values aside), and the field manager's ownership rules."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from ksched_kubesim import KubeSim, KubeSimConfig, LifecycleSettings
from ksched_kubesim.managed_fields import manager_name, record

CAPTURES = Path(__file__).parent / "captures"
MANAGED = json.loads((CAPTURES / "managed-fields.json").read_text())
MERGE = "application/merge-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"
PODS = "/api/v1/namespaces/default/pods"
#: values that differ between runs, replaced in raw watch lines before comparing them
VOLATILE = re.compile(
    rb'"(uid|resourceVersion|creationTimestamp|time|deletionTimestamp|lastTransitionTime)":"[^"]*"'
)


def capture(name: str) -> dict[str, Any]:
    [path] = CAPTURES.glob(f"{name}-*.json")
    data: dict[str, Any] = json.loads(path.read_text())
    return data


def untimed(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    for entry in entries:
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", entry["time"]), entry["time"]
    return [{**e, "time": "*"} for e in entries]


class Client:
    """Raw HTTP as the capture client sent it: no User-Agent, so the manager is ``unknown``."""

    def __init__(self, session: aiohttp.ClientSession, sim: KubeSim) -> None:
        self.session = session
        self.sim = sim

    async def call(
        self, method: str, path: str, body: Any = None, content_type: str = "application/json", **query: str
    ) -> Any:
        headers = {"Authorization": f"Bearer {self.sim.token}", "Content-Type": content_type}
        data = None if body is None else json.dumps(body)
        async with self.session.request(
            method, self.sim.url + path, data=data, headers=headers, params=query
        ) as resp:
            assert resp.status < 300, await resp.text()
            return await resp.json(content_type=None)

    async def watch_lines(self, path: str, **query: str) -> list[bytes]:
        headers = {"Authorization": f"Bearer {self.sim.token}"}
        params = {"watch": "1", **query}
        async with self.session.get(self.sim.url + path, headers=headers, params=params) as resp:
            return [line async for line in resp.content if line.strip()]


@pytest.fixture
async def client() -> AsyncIterator[Client]:
    config = KubeSimConfig(lifecycle=LifecycleSettings(enabled=False))
    async with (
        KubeSim(config) as sim,
        aiohttp.ClientSession(skip_auto_headers=("User-Agent",)) as session,
    ):
        yield Client(session, sim)


def _pod(name: str, labels: dict[str, str], requests: dict[str, str]) -> dict[str, Any]:
    container = {"name": "c", "image": "registry.k8s.io/pause:3.10", "resources": {"requests": requests}}
    return {"metadata": {"name": name, "labels": labels}, "spec": {"containers": [container]}}


async def _bind(c: Client, pod: str, node: str) -> None:
    binding = {"metadata": {"name": pod}, "target": {"kind": "Node", "name": node}}
    await c.call("POST", f"{PODS}/{pod}/binding", binding)


async def test_creates_binding_and_status_patches_record_what_the_captures_show(client: Client) -> None:
    c = client
    for name in ("03a", "02a", "03b", "05a"):
        request = capture(name)["request"]
        got = await c.call(request["method"], request["path"], request["body"])
        if name in MANAGED:
            assert untimed(got["metadata"]["managedFields"]) == untimed(MANAGED[name]), name
    await _bind(c, "bind-me", "node-a")
    bound = await c.call("GET", f"{PODS}/bind-me")
    assert untimed(bound["metadata"]["managedFields"]) == untimed(MANAGED["05c"])  # binding adds none
    for name, content_type in (("06a", MERGE), ("06b", STRATEGIC)):
        request = capture(name)["request"]
        pod = request["path"].split("/")[-2]
        await c.call("POST", PODS, _pod(pod, {"app": "x"}, {"cpu": "100m", "memory": "64Mi"}))
        got = await c.call("PATCH", request["path"], request["body"], content_type)
        assert untimed(got["metadata"]["managedFields"]) == untimed(MANAGED[name]), name


async def test_the_pod_watch_stream_is_the_real_one_byte_for_byte(client: Client) -> None:
    """08a: create, label patch, bind, graceful delete, forced delete, then a bookmark."""
    c = client
    node = capture("02a")["request"]
    await c.call("POST", node["path"], node["body"])
    rv = (await c.call("GET", PODS))["metadata"]["resourceVersion"]
    stream = asyncio.create_task(
        c.watch_lines(PODS, resourceVersion=rv, allowWatchBookmarks="true", timeoutSeconds="3")
    )
    await c.call("POST", PODS, _pod("w1", {"app": "watch"}, {"cpu": "100m"}))
    await c.call("PATCH", f"{PODS}/w1", {"metadata": {"labels": {"step": "patched"}}}, MERGE)
    await _bind(c, "w1", "node-a")
    await c.call("DELETE", f"{PODS}/w1")
    await c.call("DELETE", f"{PODS}/w1", gracePeriodSeconds="0")
    got = [VOLATILE.sub(rb'"\1":"*"', line) for line in await stream]
    real = (CAPTURES / "08a-watch-pods-stream.raw.txt").read_bytes().splitlines(keepends=True)
    assert got == [VOLATILE.sub(rb'"\1":"*"', line) for line in real]


def test_the_manager_is_the_field_manager_else_the_user_agent_prefix() -> None:
    assert manager_name("kube-scheduler", "kube-scheduler/v1.36.2 (linux/amd64)") == "kube-scheduler"
    assert (
        manager_name(None, "kubectl-client-side-apply/v1.36.2 (linux/amd64)") == "kubectl-client-side-apply"
    )
    assert manager_name(None, "OpenAPI-Generator/32.0.0/python") == "OpenAPI-Generator"
    assert manager_name(None, "") == "unknown"
    assert manager_name(None, "x" * 300) == "x" * 128


def _write(old: dict[str, Any] | None, new: dict[str, Any], manager: str, **kw: Any) -> dict[str, Any]:
    record(old, new, manager=manager, api_version="v1", kind="Pod", has_status=True, **kw)
    return new


def _fields(obj: dict[str, Any]) -> dict[str, Any]:
    return {
        e["manager"] + ("/" + e["subresource"] if "subresource" in e else ""): e["fieldsV1"]
        for e in obj["metadata"]["managedFields"]
    }


def test_a_write_takes_the_fields_it_changes_from_other_managers() -> None:
    created = _write(
        None, {"metadata": {"labels": {"a": "1", "b": "1"}}, "spec": {"containers": None}}, "alice"
    )
    assert _fields(created) == {"alice": {"f:metadata": {"f:labels": {".": {}, "f:a": {}, "f:b": {}}}}}
    updated = json.loads(json.dumps(created))
    updated["metadata"]["labels"] = {"a": "2", "c": "1"}  # a changed, b removed, c added
    _write(created, updated, "bob")
    assert _fields(updated) == {
        "alice": {"f:metadata": {"f:labels": {}}},  # still owns the map itself
        "bob": {"f:metadata": {"f:labels": {"f:a": {}, "f:c": {}}}},
    }


def test_a_write_that_changes_nothing_keeps_the_entries_and_their_time() -> None:
    created = _write(None, {"metadata": {"labels": {"a": "1"}}}, "alice")
    created["metadata"]["managedFields"][0]["time"] = "2020-01-01T00:00:00Z"
    same = json.loads(json.dumps(created))
    _write(created, same, "alice")
    assert same["metadata"]["managedFields"] == created["metadata"]["managedFields"]
    _write(created, same := json.loads(json.dumps(created)), "bob")
    assert [e["manager"] for e in same["metadata"]["managedFields"]] == ["alice"]


def test_main_writes_own_no_status_and_status_writes_own_only_status() -> None:
    old = {"metadata": {}, "spec": {"nodeName": ""}, "status": {"phase": "Pending"}}
    new = {"metadata": {}, "spec": {"nodeName": "n1"}, "status": {"phase": "Running"}}
    _write(old, main := json.loads(json.dumps(new)), "alice")
    assert _fields(main) == {"alice": {"f:spec": {"f:nodeName": {}}}}
    _write(old, status := json.loads(json.dumps(new)), "kubelet", subresource="status")
    assert _fields(status) == {"kubelet/status": {"f:status": {"f:phase": {}}}}


def test_an_empty_managed_fields_list_in_an_update_resets_them() -> None:
    created = _write(None, {"metadata": {"labels": {"a": "1"}}}, "alice")
    reset = {"metadata": {"labels": {"a": "1", "b": "2"}, "managedFields": []}}
    _write(created, reset, "bob")
    assert _fields(reset) == {"bob": {"f:metadata": {"f:labels": {"f:b": {}}}}}


def test_entries_are_sorted_by_operation_time_manager_and_subresource() -> None:
    obj: dict[str, Any] = {"metadata": {"labels": {"z": "1"}}}
    _write(None, obj, "zed")
    obj["metadata"]["managedFields"][0]["time"] = "2020-01-01T00:00:00Z"
    newer = {"metadata": {"labels": {"z": "1", "a": "1"}, "managedFields": obj["metadata"]["managedFields"]}}
    _write(obj, newer, "able")
    assert [e["manager"] for e in newer["metadata"]["managedFields"]] == ["zed", "able"]


def test_keyed_and_set_lists_are_tracked_per_item() -> None:
    pod = {
        "metadata": {"finalizers": ["x/y"]},
        "spec": {
            "containers": [{"name": "c", "ports": [{"containerPort": 80, "protocol": "TCP"}]}],
            "tolerations": [{"key": "k"}],
        },
    }
    _write(None, pod, "alice")
    assert _fields(pod)["alice"] == {
        "f:metadata": {"f:finalizers": {".": {}, 'v:"x/y"': {}}},
        "f:spec": {
            "f:containers": {
                'k:{"name":"c"}': {
                    ".": {},
                    "f:name": {},
                    "f:ports": {
                        ".": {},
                        'k:{"containerPort":80,"protocol":"TCP"}': {
                            ".": {},
                            "f:containerPort": {},
                            "f:protocol": {},
                        },
                    },
                }
            },
            "f:tolerations": {},
        },
    }


async def test_the_kubelet_records_its_status_write_when_a_pod_starts() -> None:
    config = KubeSimConfig(nodes=1, lifecycle=LifecycleSettings(pod_start_delay=0.01))
    async with KubeSim(config) as sim:
        sim.create({"apiVersion": "v1", "kind": "Pod", **_pod("p", {}, {"cpu": "1"})})
        sim.bind("default", "p", "node-0000")
        for _ in range(200):
            pod = sim.get("Pod", "p", "default")
            assert pod is not None
            if pod["status"]["phase"] == "Running":
                break
            await asyncio.sleep(0.01)
        assert pod is not None
        entries = {e["manager"]: e for e in pod["metadata"]["managedFields"]}
        assert entries["kubelet"]["subresource"] == "status"
        assert {"f:phase", "f:podIP", "f:conditions", "f:containerStatuses"} <= set(
            entries["kubelet"]["fieldsV1"]["f:status"]
        )


def test_an_entry_with_an_empty_field_set_is_dropped_not_read_as_owning_the_object() -> None:
    created = _write(None, {"metadata": {"labels": {"a": "1"}}}, "alice")
    given = {
        "manager": "ghost",
        "operation": "Update",
        "apiVersion": "v1",
        "fieldsType": "FieldsV1",
        "fieldsV1": {},
    }
    update = {
        "metadata": {
            "labels": {"a": "1", "b": "2"},
            "managedFields": [given, *created["metadata"]["managedFields"]],
        }
    }
    _write(created, update, "bob")
    assert set(_fields(update)) == {"alice", "bob"}
