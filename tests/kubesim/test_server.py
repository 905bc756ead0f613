"""HTTP front-end details: bookmarks, slow watchers, tables, content types, dry runs, TLS, kubectl."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest
from ksched_kubesim import KubeSim, KubeSimConfig, LifecycleSettings
from ksched_kubesim.cli import main as kubesim_main
from ksched_kubesim.registry import WatchQuery
from ksched_kubesim.resources import BY_KEY
from kubernetes_asyncio import client

from tests.fixtures.kubesim import api_client_for


@pytest.fixture
async def sim() -> AsyncIterator[KubeSim]:
    config = KubeSimConfig(nodes=2, bookmark_interval=0.1, lifecycle=LifecycleSettings(enabled=False))
    async with KubeSim(config) as running:
        yield running


@pytest.fixture
async def http(sim: KubeSim) -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession(
        base_url=sim.url, headers={"Authorization": f"Bearer {sim.token}"}
    ) as session:
        yield session


POD = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "p"},
    "spec": {"containers": [{"name": "c", "image": "x:1"}]},
}


async def test_periodic_bookmarks(sim: KubeSim, http: aiohttp.ClientSession) -> None:
    """A bookmark every interval, once the resourceVersion is newer than where the watch started
    (the watch cache sends none at a resourceVersion the watcher has already seen)."""
    params = {"watch": "1", "allowWatchBookmarks": "true", "timeoutSeconds": "1", "resourceVersion": "1"}
    types: list[str] = []
    async with http.get("/api/v1/nodes", params=params) as resp:

        async def read() -> None:
            async for line in resp.content:
                types.append(json.loads(line)["type"])

        reader = asyncio.create_task(read())
        await asyncio.sleep(0.35)
        before = list(types)
        sim.create(
            {
                "apiVersion": "scheduling.k8s.io/v1",
                "kind": "PriorityClass",
                "metadata": {"name": "p"},
                "value": 1,
            }
        )
        await reader
    assert before == ["ADDED", "ADDED"], before
    assert types.count("BOOKMARK") >= 3, types


async def test_watchers_far_behind_are_dropped(sim: KubeSim) -> None:
    sim.registry.max_watch_pending_bytes = 2000
    watcher = sim.registry.watch(BY_KEY["nodes"], None, WatchQuery())
    try:
        assert watcher.closed and watcher.overflowed, "two synthetic nodes exceed 2000 pending bytes"
    finally:
        sim.registry.stop_watch(watcher)


async def test_a_watch_backlog_leaves_in_writes_of_at_most_4_kib(sim: KubeSim) -> None:
    """As the API server's watch handler, whose backlog goes through net/http's 4 KiB buffer."""
    watcher = sim.registry.watch(BY_KEY["pods"], None, WatchQuery())
    lines = [b"x" * 999 + b"\n" for _ in range(10)]
    for line in lines:
        watcher.push(line)
    writes: list[bytes] = []

    async def write(data: bytes) -> None:
        writes.append(data)
        if sum(map(len, writes)) == len(b"".join(lines)):
            watcher.close()

    try:
        await watcher.run(write)
    finally:
        sim.registry.stop_watch(watcher)
    assert b"".join(writes) == b"".join(lines)
    assert [len(w) for w in writes] == [4096, 4096, 1808]


async def test_curl_gets_pretty_json(http: aiohttp.ClientSession) -> None:
    async with http.get("/api/v1/namespaces/default/pods/nope", headers={"User-Agent": "curl/8.5.0"}) as resp:
        text = await resp.text()
    assert resp.status == 404
    assert text.startswith('{\n  "kind": "Status",\n  "apiVersion": "v1",')


async def test_table_output_for_kubectl(http: aiohttp.ClientSession) -> None:
    headers = {"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"}
    async with http.get("/api/v1/nodes", headers=headers) as resp:
        table = await resp.json()
    assert table["kind"] == "Table"
    assert [c["name"] for c in table["columnDefinitions"]][:5] == [
        "Name",
        "Status",
        "Roles",
        "Age",
        "Version",
    ]
    assert [r["cells"][0] for r in table["rows"]] == ["node-0000", "node-0001"]
    assert table["rows"][0]["cells"][1] == "Ready"
    assert table["rows"][0]["object"]["kind"] == "PartialObjectMetadata"


async def test_yaml_bodies_and_unknown_content_types(http: aiohttp.ClientSession) -> None:
    yaml_pod = "\n".join(
        [
            "apiVersion: v1",
            "kind: Pod",
            "metadata: {name: from-yaml}",
            "spec: {containers: [{name: c, image: x:1}]}",
        ]
    )
    async with http.post(
        "/api/v1/namespaces/default/pods", data=yaml_pod, headers={"Content-Type": "application/yaml"}
    ) as resp:
        assert resp.status == 201
    async with http.post(
        "/api/v1/namespaces/default/pods",
        data=b"\x6b\x38\x73\x00",
        headers={"Content-Type": "application/vnd.kubernetes.protobuf"},
    ) as resp:
        assert resp.status == 415


async def test_dry_run_create_stores_nothing(http: aiohttp.ClientSession, sim: KubeSim) -> None:
    before = sim.resource_version
    async with http.post("/api/v1/namespaces/default/pods", params={"dryRun": "All"}, json=POD) as resp:
        assert resp.status == 201
        assert (await resp.json())["spec"]["schedulerName"] == "default-scheduler"
    assert sim.get("Pod", "p", "default") is None
    assert sim.resource_version == before


async def test_delete_collection(http: aiohttp.ClientSession, sim: KubeSim) -> None:
    for i in range(3):
        sim.create({**POD, "metadata": {"name": f"d{i}", "labels": {"batch": "yes" if i < 2 else "no"}}})
    async with http.delete("/api/v1/namespaces/default/pods", params={"labelSelector": "batch=yes"}) as resp:
        body = await resp.json()
    assert resp.status == 200 and body["kind"] == "PodList"
    assert sorted(i["metadata"]["name"] for i in body["items"]) == ["d0", "d1"]
    assert [p["metadata"]["name"] for p in sim.list_objects("Pod", namespace="default")] == ["d2"]


async def test_method_not_allowed_and_unknown_paths(http: aiohttp.ClientSession) -> None:
    async with http.put("/api/v1/namespaces/default/pods", json=POD) as resp:
        assert resp.status == 405
        assert (await resp.json())["reason"] == "MethodNotAllowed"
    async with http.get("/nowhere") as resp:
        assert resp.status == 404
    async with http.get("/healthz") as resp:
        assert await resp.text() == "ok"


async def test_anonymous_discovery_is_forbidden_but_version_is_public(sim: KubeSim) -> None:
    async with aiohttp.ClientSession(base_url=sim.url) as anonymous:
        async with anonymous.get("/api") as resp:
            assert resp.status == 403
            assert (await resp.json())[
                "message"
            ] == 'forbidden: User "system:anonymous" cannot get path "/api"'
        async with anonymous.get("/api/v1/nodes/node-0000") as resp:
            assert (await resp.json())["message"] == (
                'nodes "node-0000" is forbidden: User "system:anonymous" cannot get resource "nodes" in API '
                'group "" at the cluster scope'
            )
        async with anonymous.get("/version") as resp:
            assert resp.status == 200


async def test_no_auth_mode_accepts_everyone() -> None:
    async with (
        KubeSim(KubeSimConfig(token=None)) as open_sim,
        aiohttp.ClientSession(base_url=open_sim.url) as s,
        s.get("/api/v1/namespaces") as resp,
    ):
        assert resp.status == 200


def test_no_auth_is_refused_on_an_address_others_reach(capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 21: an endpoint that is not loopback-only must want the token."""
    assert kubesim_main(["--listen", "0.0.0.0:0", "--no-auth"]) == 2
    assert "--no-auth is for a loopback --listen only" in capsys.readouterr().err


async def test_a_wrong_token_is_401_whatever_its_characters() -> None:
    async with (
        KubeSim(KubeSimConfig(token="right")) as sim,
        aiohttp.ClientSession(base_url=sim.url, headers={"Authorization": "Bearer ünïcödé"}) as s,
        s.get("/api/v1/namespaces") as resp,
    ):
        assert resp.status == 401


async def test_tls_with_kubernetes_asyncio(tmp_path: Path) -> None:
    async with KubeSim(KubeSimConfig(nodes=1, tls=True)) as secure:
        assert secure.url.startswith("https://")
        kubeconfig = secure.write_kubeconfig(tmp_path / "kubeconfig")
        api = await api_client_for(kubeconfig)
        async with api:
            nodes = await client.CoreV1Api(api).list_node()
        assert [n.metadata.name for n in nodes.items] == ["node-0000"]


async def test_kubectl_get(tmp_path: Path, kubectl_exe: str) -> None:
    async with KubeSim(KubeSimConfig(nodes=2, tls=True)) as secure:
        kubeconfig = secure.write_kubeconfig(tmp_path / "kubeconfig")
        secure.create(POD)

        def kubectl(*args: str) -> str:
            env = {**os.environ, "KUBECONFIG": str(kubeconfig)}
            done = subprocess.run(
                [kubectl_exe, *args], capture_output=True, text=True, env=env, timeout=30, check=False
            )
            assert done.returncode == 0, done.stderr
            return done.stdout

        nodes = await asyncio.to_thread(kubectl, "get", "nodes")
        assert "node-0000" in nodes and "Ready" in nodes
        pods = await asyncio.to_thread(kubectl, "get", "pods", "-o", "json")
        assert [p["metadata"]["name"] for p in json.loads(pods)["items"]] == ["p"]
        resources = await asyncio.to_thread(kubectl, "api-resources")
        assert "poddisruptionbudgets" in resources
        manifest = tmp_path / "applied.yaml"
        manifest.write_text(
            "apiVersion: v1\nkind: Pod\nmetadata: {name: applied, labels: {v: '1'}}\n"
            "spec: {containers: [{name: c, image: 'nginx:1'}]}\n"
        )
        assert "created" in await asyncio.to_thread(kubectl, "apply", "-f", str(manifest))
        manifest.write_text(manifest.read_text().replace("'1'", "'2'").replace("nginx:1", "nginx:2"))
        assert "configured" in await asyncio.to_thread(kubectl, "apply", "-f", str(manifest))
        applied = secure.get("Pod", "applied", "default")
        assert applied is not None
        assert applied["metadata"]["labels"] == {"v": "2"}
        assert applied["spec"]["containers"][0]["image"] == "nginx:2"


async def test_typed_watch_raises_410_for_an_expired_resource_version(tmp_path: Path) -> None:
    from kubernetes_asyncio import watch
    from kubernetes_asyncio.client.exceptions import ApiException

    config = KubeSimConfig(history_size=2, lifecycle=LifecycleSettings(enabled=False))
    async with KubeSim(config) as small:
        old = str(small.resource_version)
        for i in range(4):
            small.create({**POD, "metadata": {"name": f"churn-{i}"}})
        api = await api_client_for(small.write_kubeconfig(tmp_path / "kubeconfig"))
        async with api:
            core = client.CoreV1Api(api)
            with pytest.raises(ApiException) as info:
                async with watch.Watch().stream(
                    core.list_namespaced_pod, "default", resource_version=old, timeout_seconds=2
                ) as stream:
                    async for _ in stream:
                        pass
        assert info.value.status == 410
        assert "too old resource version" in str(info.value.reason)


async def test_watch_of_one_named_object(http: aiohttp.ClientSession, sim: KubeSim) -> None:
    sim.create({**POD, "metadata": {"name": "one"}})
    sim.create({**POD, "metadata": {"name": "two"}})
    for path, params in (
        ("/api/v1/watch/namespaces/default/pods/one", {"timeoutSeconds": "1"}),
        ("/api/v1/namespaces/default/pods/one", {"watch": "true", "timeoutSeconds": "1"}),
    ):
        async with http.get(path, params=params) as resp:
            names = [json.loads(line)["object"]["metadata"]["name"] async for line in resp.content]
        assert names == ["one"]


async def test_all_namespace_collections_refuse_create_and_delete(http: aiohttp.ClientSession) -> None:
    async with http.post("/api/v1/pods", json=POD) as resp:
        assert resp.status == 405
    async with http.delete("/api/v1/pods") as resp:
        assert resp.status == 405


async def test_a_failing_controller_does_not_fail_the_write(sim: KubeSim) -> None:
    def broken(*_: object) -> None:
        raise RuntimeError("controller bug")

    sim.store.listeners.append(broken)
    try:
        created = sim.create({**POD, "metadata": {"name": "survivor"}})
    finally:
        sim.store.listeners.remove(broken)
    assert created["metadata"]["name"] == "survivor"
    assert sim.get("Pod", "survivor", "default") is not None


async def test_metrics(http: aiohttp.ClientSession, sim: KubeSim) -> None:
    async with http.get("/api/v1/namespaces/default/pods/nope") as resp:
        assert resp.status == 404
    async with http.get("/api/v1/nodes") as resp:
        assert resp.status == 200
    async with http.get("/metrics") as resp:
        text = await resp.text()
    assert resp.status == 200
    assert (
        'apiserver_request_total{code="404",component="apiserver",group="",resource="pods",scope="namespace",'
        'subresource="",verb="get",version="v1"} 1.0' in text
    )
    assert 'verb="list"' in text
    assert 'apiserver_storage_objects{resource="nodes"} 2.0' in text
    assert f"kubesim_resource_version {float(sim.resource_version)}" in text
    async with aiohttp.ClientSession(base_url=sim.url) as anonymous, anonymous.get("/metrics") as resp:
        assert resp.status == 403


async def test_metrics_count_requests_per_client_as_they_arrive(http: aiohttp.ClientSession) -> None:
    """By the product of the User-Agent; a watch counts from its start (the RBAC e2e test reads this)."""
    agent = {"User-Agent": "ksched-binder/1.2.3 (linux)"}
    async with http.get("/api/v1/pods", params={"watch": "1", "timeoutSeconds": "5"}, headers=agent) as watch:
        assert watch.status == 200
        async with http.get("/metrics") as resp:
            text = await resp.text()
    assert (
        'kubesim_client_requests_total{client="ksched-binder",group="",resource="pods",subresource="",'
        'verb="watch"} 1.0' in text
    )


async def test_a_body_over_the_limit_is_refused_with_413_as_the_api_server_does(
    http: aiohttp.ClientSession, caplog: pytest.LogCaptureFixture
) -> None:
    """A body larger than the server takes (a fuzzed Event's note, ``tests/fuzz/test_binder_bus.py``)
    is answered 413 ``RequestEntityTooLarge``, not as an internal error with a traceback."""
    event = {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": {"name": "e"},
        "note": "x" * 4_000_000,
    }
    async with http.post("/apis/events.k8s.io/v1/namespaces/default/events", json=event) as r:
        assert r.status == 413
        status = await r.json()
    assert status["reason"] == "RequestEntityTooLarge" and status["code"] == 413
    assert not [rec for rec in caplog.records if rec.exc_info]
