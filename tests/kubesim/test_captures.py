"""Fixture comparison: replay the requests of the real kube-apiserver 1.36.2 captures against kubesim
and compare status codes, content types and bodies (uids, timestamps and resourceVersions aside).

The replay follows the capture session's order so that every object the captures show exists in the
same state; objects the captures show but did not capture the creation of are created the same way.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from ksched_kubesim import KubeSim, KubeSimConfig, LifecycleSettings

from tests.fixtures.kubesim import strip_volatile

CAPTURES = Path(__file__).parent / "captures"
MERGE = "application/merge-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"


def capture(name: str) -> dict[str, Any]:
    [path] = CAPTURES.glob(f"{name}-*.json")
    data: dict[str, Any] = json.loads(path.read_text())
    return data


def normalize(value: Any) -> Any:
    """Volatile values replaced by "*" (disruptedPods maps pod names to eviction times)."""
    value = strip_volatile(value)
    if (
        isinstance(value, dict)
        and isinstance(value.get("status"), dict)
        and "disruptedPods" in value["status"]
    ):
        value["status"]["disruptedPods"] = dict.fromkeys(value["status"]["disruptedPods"], "*")
    return value


class Replay:
    def __init__(self, session: aiohttp.ClientSession, sim: KubeSim) -> None:
        self.session = session
        self.sim = sim
        self.headers = {"Authorization": f"Bearer {sim.token}", "Accept": "application/json"}

    async def call(
        self,
        method: str,
        path: str,
        query: dict[str, str] | None = None,
        body: Any = None,
        content_type: str = "application/json",
    ) -> tuple[int, dict[str, str], Any]:
        data = None if body is None else json.dumps(body)
        headers = {**self.headers, "Content-Type": content_type}
        async with self.session.request(
            method, self.sim.url + path, params=query or {}, data=data, headers=headers
        ) as resp:
            raw = await resp.read()
            assert raw.endswith(b"\n") and b"\n" not in raw[:-1], (
                "compact single-line JSON ending in a newline"
            )
            return resp.status, dict(resp.headers), json.loads(raw)

    async def check(
        self,
        name: str,
        body: Any = None,
        content_type: str | None = None,
        query: dict[str, str] | None = None,
    ) -> Any:
        cap = capture(name)
        req = cap["request"]
        if content_type is None:
            note = cap.get("note", "")
            content_type = (
                STRATEGIC
                if "strategic-merge-patch" in note
                else MERGE
                if req["method"] == "PATCH"
                else ("application/json")
            )
        status, headers, got = await self.call(
            req["method"],
            req["path"],
            req["query"] if query is None else query,
            req["body"] if body is None else body,
            content_type,
        )
        assert status == cap["status"], (name, got.get("message"), got)
        assert headers["Content-Type"] == cap["headers"]["Content-Type"], name
        assert normalize(got) == normalize(cap["body"]), name
        return got

    async def watch(self, path: str, query: dict[str, str]) -> list[Any]:
        events = []
        async with self.session.get(
            self.sim.url + path, params={"watch": "1", **query}, headers=self.headers
        ) as resp:
            assert resp.status == 200
            async for line in resp.content:
                events.append(json.loads(line))
        return events


@pytest.fixture
async def replay() -> AsyncIterator[Replay]:
    config = KubeSimConfig(lifecycle=LifecycleSettings(enabled=False), too_large_wait=0.2)
    async with KubeSim(config) as sim, aiohttp.ClientSession() as session:
        yield Replay(session, sim)


def _simple_pod(name: str, labels: dict[str, str], cpu_only: bool = False, **spec: Any) -> dict[str, Any]:
    requests = {"cpu": "100m"} if cpu_only else {"cpu": "100m", "memory": "64Mi"}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": labels},
        "spec": {
            "containers": [
                {"name": "c", "image": "registry.k8s.io/pause:3.10", "resources": {"requests": requests}}
            ],
            **spec,
        },
    }


async def _bind(r: Replay, pod: str, node: str) -> None:
    status, _, _ = await r.call(
        "POST",
        f"/api/v1/namespaces/default/pods/{pod}/binding",
        body={
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {"name": pod},
            "target": {"kind": "Node", "name": node},
        },
    )
    assert status == 201


async def test_discovery_and_errors_match_the_captures(replay: Replay) -> None:
    r = replay
    for name in ("01a", "01b", "01d", "01f", "04g"):
        cap = capture(name)
        status, _, got = await r.call("GET", cap["request"]["path"])
        assert status == 200
        if name == "01b":
            got["serverAddressByClientCIDRs"][0]["serverAddress"] = "127.0.0.1:16443"
        if name == "01d":
            got["groups"] = [
                g for g in got["groups"] if g["name"] in {x["name"] for x in cap["body"]["groups"]}
            ]
            order = [g["name"] for g in cap["body"]["groups"]]
            got["groups"].sort(key=lambda g: order.index(g["name"]))
        assert got == cap["body"], name
    for name, path in (("01c", "/api/v1"), ("01e", "/apis/apps/v1")):
        listed = (await r.call("GET", path))[2]
        assert {k: v for k, v in listed.items() if k != "resources"} == {
            k: v for k, v in capture(name)["body"].items() if k != "resources"
        }
        served = {x["name"]: x for x in listed["resources"]}
        for entry in capture(name)["body"]["resources"]:
            if entry["name"] in served:
                assert served[entry["name"]] == entry
    served_core = {x["name"] for x in (await r.call("GET", "/api/v1"))[2]["resources"]}
    assert {
        "pods",
        "pods/binding",
        "pods/eviction",
        "pods/status",
        "nodes",
        "nodes/status",
        "events",
        "bindings",
        "namespaces",
        "namespaces/status",
        "namespaces/finalize",
    } <= served_core
    async with r.session.get(
        r.sim.url + "/api",
        headers={
            **r.headers,
            "Accept": "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json",
        },
    ) as resp:
        assert resp.headers["Content-Type"] == capture("01g")["headers"]["Content-Type"]
        agg = await resp.json(content_type=None)
    real = {x["resource"]: x for x in capture("01g")["body"]["items"][0]["versions"][0]["resources"]}
    for item in agg["items"][0]["versions"][0]["resources"]:
        want = dict(real[item["resource"]])
        served_subs = {sub["subresource"] for sub in item.get("subresources", [])}
        if "subresources" in want:
            want["subresources"] = [sub for sub in want["subresources"] if sub["subresource"] in served_subs]
        assert item == want, item["resource"]
    for name in ("04b", "04h", "04i"):
        await r.check(name)


async def test_nodes_pods_binding_and_patches_match_the_captures(replay: Replay) -> None:
    r = replay
    await r.check("02a")
    await r.check("02b")
    await r.check("02c")
    node_b = capture("02a")["request"]["body"]
    node_b = json.loads(json.dumps(node_b).replace("node-a", "node-b").replace("zone-1", "zone-2"))
    del node_b["spec"]["taints"]
    del node_b["metadata"]["labels"]["disktype"]
    assert (await r.call("POST", "/api/v1/nodes", body=node_b))[0] == 201
    await r.check("03a")
    full = await r.check("03b")
    await r.check("04a")
    await r.check("04d")
    await r.check("05a")
    await r.check("05b")
    await r.check("05c")
    await r.check("05d")
    await r.check("05e")
    await r.check("05f")
    await r.check("05h")
    await r.call(
        "POST", "/api/v1/namespaces/default/pods", body=_simple_pod("bind-ghost-node", {"app": "demo"})
    )
    await r.check("05g")
    stale = capture("04c")["request"]["body"]
    stale["metadata"]["resourceVersion"] = full["metadata"]["resourceVersion"]
    await r.call(
        "PATCH",
        "/api/v1/namespaces/default/pods/full",
        body={"metadata": {"labels": {"bump": "1"}}},
        content_type=MERGE,
    )
    await r.check("04c", body=stale)
    for name in ("unsched-mp", "unsched-smp"):
        await r.call("POST", "/api/v1/namespaces/default/pods", body=_simple_pod(name, {"app": "db"}))
    for name in ("06a", "06b", "06c", "06d", "06e", "06f"):
        await r.check(name)
    await r.call(
        "POST", "/api/v1/namespaces/default/pods", body=_simple_pod("db-1", {"app": "db", "tier": "be"})
    )
    await r.call(
        "POST", "/api/v1/namespaces/default/pods", body=_simple_pod("on-b", {"app": "web", "tier": "fe"})
    )
    await _bind(r, "on-b", "node-b")
    await r.call(
        "PATCH",
        "/api/v1/namespaces/default/pods/on-b/status",
        body={"status": {"phase": "Succeeded", "conditions": None}},
        content_type=MERGE,
    )
    for name in ("07c", "07d", "07e", "07f", "07g", "07h", "07i", "07j"):
        await r.check(name)
    first = await r.check("07a")
    await r.check("07b", query={"limit": "2", "continue": first["metadata"]["continue"]})
    await r.check("05i")


async def test_watch_streams_match_the_captures(replay: Replay) -> None:
    r = replay
    await r.check("02a")
    list_rv = (await r.call("GET", "/api/v1/namespaces/default/pods"))[2]["metadata"]["resourceVersion"]
    query = {"resourceVersion": list_rv, "allowWatchBookmarks": "true", "timeoutSeconds": "3"}
    stream = asyncio.create_task(r.watch("/api/v1/namespaces/default/pods", query))
    pod = _simple_pod("w1", {"app": "watch"})
    pod["spec"]["containers"][0]["resources"]["requests"] = {"cpu": "100m"}
    await r.call("POST", "/api/v1/namespaces/default/pods", body=pod)
    await r.call(
        "PATCH",
        "/api/v1/namespaces/default/pods/w1",
        body={"metadata": {"labels": {"step": "patched"}}},
        content_type=MERGE,
    )
    await _bind(r, "w1", "node-a")
    await r.call("DELETE", "/api/v1/namespaces/default/pods/w1")
    await r.call("DELETE", "/api/v1/namespaces/default/pods/w1", query={"gracePeriodSeconds": "0"})
    events = await stream
    assert normalize(events) == normalize(capture("08a")["body"])

    node_b = json.loads(
        json.dumps(capture("02a")["request"]["body"]).replace("node-a", "node-b").replace("zone-1", "zone-2")
    )
    await r.call("POST", "/api/v1/nodes", body=node_b)
    rv = (await r.call("GET", "/api/v1/pods"))[2]["metadata"]["resourceVersion"]
    unassigned = asyncio.create_task(
        r.watch(
            "/api/v1/pods",
            {**capture("08h")["request"]["query"], "resourceVersion": rv, "timeoutSeconds": "1"},
        )
    )
    assigned = asyncio.create_task(
        r.watch(
            "/api/v1/pods",
            {**capture("08i")["request"]["query"], "resourceVersion": rv, "timeoutSeconds": "1"},
        )
    )
    await r.call(
        "POST",
        "/api/v1/namespaces/default/pods",
        body={
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "fw1"},
            "spec": {"containers": [{"name": "c", "image": "pause:3.10"}]},
        },
    )
    await _bind(r, "fw1", "node-b")
    await r.call("DELETE", "/api/v1/namespaces/default/pods/fw1", query={"gracePeriodSeconds": "0"})
    assert normalize(await unassigned) == normalize(capture("08h")["body"])
    assert normalize(await assigned) == normalize(capture("08i")["body"])
    future = await r.watch(
        "/api/v1/namespaces/default/pods", {"resourceVersion": "100415", "timeoutSeconds": "1"}
    )
    assert future == capture("08e")["body"] == []


async def test_events_leases_deletes_and_evictions_match_the_captures(replay: Replay) -> None:
    r = replay
    await r.check("02a")
    for name in ("09a", "09b", "09c", "09d", "10a"):
        await r.check(name)
    lease = capture("10b")["request"]["body"]
    created = (
        await r.call("GET", "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/kube-scheduler")
    )[2]
    lease["metadata"]["resourceVersion"] = created["metadata"]["resourceVersion"]
    lease["metadata"]["uid"] = created["metadata"]["uid"]
    await r.check("10b", body=lease)
    stale = capture("10c")["request"]["body"]
    stale["metadata"]["resourceVersion"] = created["metadata"]["resourceVersion"]
    await r.check("10c", body=stale)
    await r.check("10d")
    node_b = json.loads(
        json.dumps(capture("02a")["request"]["body"]).replace("node-a", "node-b").replace("zone-1", "zone-2")
    )
    await r.call("POST", "/api/v1/nodes", body=node_b)
    for name, node in (("del-bound", "node-a"), ("del-bound0", "node-b"), ("del-unbound", None)):
        spec = {"nodeName": node} if node else {}
        await r.call(
            "POST", "/api/v1/namespaces/default/pods", body=_simple_pod(name, {"app": "demo"}, True, **spec)
        )
    for name in ("11a", "11b", "11c", "11d", "11e", "11f", "11g", "11h", "11i"):
        await r.check(name)
    await r.call(
        "POST", "/api/v1/namespaces/default/pods", body=_simple_pod("db-1", {"app": "db", "tier": "be"})
    )
    current = (await r.call("GET", "/api/v1/namespaces/default/pods/db-1"))[2]["metadata"]["resourceVersion"]
    expected = capture("11j")["body"]
    expected["message"] = expected["message"].replace("(413)", f"({current})")
    status, _, got = await r.call(
        "DELETE", "/api/v1/namespaces/default/pods/db-1", body=capture("11j")["request"]["body"]
    )
    assert (status, got) == (409, expected)

    await r.check("12a")
    await r.check("12b")
    for name, labels in (("ev-1", {"app": "evict"}), ("ev-pending", {"app": "evict"})):
        await r.call("POST", "/api/v1/namespaces/default/pods", body=_simple_pod(name, labels, True))
    await _bind(r, "ev-1", "node-a")
    await r.call(
        "PATCH",
        "/api/v1/namespaces/default/pods/ev-1/status",
        content_type=MERGE,
        body={
            "status": {
                "phase": "Running",
                "conditions": [
                    {"type": "Ready", "status": "True"},
                    {"type": "PodScheduled", "status": "True"},
                ],
            }
        },
    )
    for name in ("12c", "12d", "12e", "12f", "12g", "12h", "12i"):
        await r.check(name)


async def test_time_formats_quantities_and_names_match_the_captures(replay: Replay) -> None:
    r = replay
    await r.call("POST", "/api/v1/namespaces", body={"metadata": {"name": "times"}})
    for name in ("17a", "17b", "17c", "17d", "17e", "17g", "17h", "17i"):
        await r.check(name)


async def test_expired_resource_versions_match_the_captures() -> None:
    """With a history too short to cover an old resourceVersion: 410 on list, ERROR 410 in a watch."""
    config = KubeSimConfig(lifecycle=LifecycleSettings(enabled=False), history_size=3)
    async with KubeSim(config) as sim, aiohttp.ClientSession() as session:
        r = Replay(session, sim)
        for i in range(3):
            await r.call("POST", "/api/v1/namespaces/default/pods", body=_simple_pod(f"p{i}", {"app": "x"}))
        first = (await r.call("GET", "/api/v1/pods", {"limit": "1"}))[2]
        old_rv = first["metadata"]["resourceVersion"]
        for i in range(3, 8):
            await r.call("POST", "/api/v1/namespaces/default/pods", body=_simple_pod(f"p{i}", {"app": "x"}))
        status, _, expired = await r.call(
            "GET", "/api/v1/pods", {"limit": "1", "continue": first["metadata"]["continue"]}
        )
        assert status == 410
        want = capture("13a")["body"]
        assert {**expired, "metadata": {}} == {**want, "metadata": {}}
        assert expired["metadata"]["continue"]
        status, _, too_old = await r.call(
            "GET",
            "/api/v1/namespaces/default/pods",
            {"resourceVersion": old_rv, "resourceVersionMatch": "Exact"},
        )
        assert (status, too_old) == (410, capture("13b")["body"])
        events = await r.watch(
            "/api/v1/namespaces/default/pods", {"resourceVersion": old_rv, "timeoutSeconds": "2"}
        )
        [error] = events
        assert error["type"] == "ERROR"
        assert {k: v for k, v in error["object"].items() if k != "message"} == {
            k: v for k, v in capture("13e")["body"][0]["object"].items() if k != "message"
        }
        assert error["object"]["message"].startswith(f"too old resource version: {old_rv} (")
