"""WATCH: event streams, bookmarks, initial events, selector boundaries, resourceVersion semantics."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from kubernetes_asyncio import client, watch
from kubernetes_asyncio.client import ApiClient

from tests import kube
from tests.contract.testing import bind, create_pod, unique
from tests.fixtures.kubesim import Cluster, Raw

pytestmark = pytest.mark.contract


def _types(events: list[dict[str, Any]]) -> list[str]:
    return [e["type"] for e in events]


async def _current_rv(raw: Raw, namespace: str) -> str:
    return str((await raw.get(f"/api/v1/namespaces/{namespace}/pods")).json()["metadata"]["resourceVersion"])


async def test_watch_stream_of_a_pods_life(raw: Raw, api: ApiClient, cluster: Cluster) -> None:
    """A pod's life as a watch from before it sees it live, and as a watch from the same
    resourceVersion opened afterwards replays it: the same events, then (a bookmark being asked for)
    the bookmark 2 s before ``timeoutSeconds`` ends the stream, once the resourceVersion has moved
    past the last event (another pod's creation). The live watch asks for no bookmark: its one would
    come at a time the writes race. (The watch cache tries that bookmark on a 1 s tick from a second
    before it is due, so the real server may send a second one: the stream is read to the first.)"""
    ns, name = cluster.namespace, unique("w")
    core = client.CoreV1Api(api)
    rv = await _current_rv(raw, ns)
    path = f"/api/v1/namespaces/{ns}/pods"
    selector = f"metadata.name={name}"
    live_query = {"resourceVersion": rv, "timeoutSeconds": "30", "fieldSelector": selector}
    live = asyncio.create_task(raw.watch(path, live_query, until=6))
    await create_pod(api, ns, name, labels={"app": "watch"}, terminationGracePeriodSeconds=600)
    await core.patch_namespaced_pod(name, ns, {"metadata": {"labels": {"step": "patched"}}})
    assert (await bind(api, ns, name, cluster.name("ghost")))[0] == 201
    graceful = await core.delete_namespaced_pod(name, ns)
    assert graceful.metadata.deletion_grace_period_seconds == 600
    await core.delete_namespaced_pod(name, ns, grace_period_seconds=0)
    seen = await live
    query = {**live_query, "timeoutSeconds": "4", "allowWatchBookmarks": "true"}
    arrived: asyncio.Queue[Any] = asyncio.Queue()
    replay = asyncio.create_task(raw.watch(path, query, until=7, limit=8, seen=arrived))
    for _ in range(6):
        await asyncio.wait_for(arrived.get(), 5)
    # the bookmark is sent only at a resourceVersion newer than the replay's last event
    await create_pod(api, ns, unique("other"))
    events = await replay
    assert _types(events) == ["ADDED", "MODIFIED", "MODIFIED", "MODIFIED", "MODIFIED", "DELETED", "BOOKMARK"]
    assert events[:6] == seen
    objects = [e["object"] for e in events]
    rvs = [int(o["metadata"]["resourceVersion"]) for o in objects]
    assert rvs == sorted(rvs) and len(set(rvs[:-1])) == 6
    assert objects[0]["kind"] == "Pod" and objects[0]["apiVersion"] == "v1"
    assert objects[1]["metadata"]["labels"]["step"] == "patched"
    assert objects[2]["spec"]["nodeName"] == cluster.name("ghost")
    assert objects[3]["metadata"]["deletionGracePeriodSeconds"] == 600
    assert objects[3]["metadata"]["generation"] == 2
    assert objects[4]["metadata"]["deletionGracePeriodSeconds"] == 0
    assert objects[5]["metadata"]["deletionGracePeriodSeconds"] == 0
    bookmark = objects[6]
    assert bookmark == {
        "kind": "Pod",
        "apiVersion": "v1",
        "metadata": {"resourceVersion": bookmark["metadata"]["resourceVersion"]},
        "spec": {"containers": None},
        "status": {},
    }
    assert int(bookmark["metadata"]["resourceVersion"]) >= rvs[5]


async def test_which_watches_get_a_bookmark_before_their_end(
    raw: Raw, api: ApiClient, cluster: Cluster
) -> None:
    """The bookmark before the end is due 2 s before it (a watch of 2 s or less gets none), and only
    at a resourceVersion newer than where the watch started."""
    path = f"/api/v1/namespaces/{cluster.namespace}/pods"
    query = {"allowWatchBookmarks": "true", "fieldSelector": "metadata.name=none"}
    rv = await _current_rv(raw, cluster.namespace)
    short = asyncio.create_task(raw.watch(path, {**query, "resourceVersion": rv, "timeoutSeconds": "2"}))
    longer = asyncio.create_task(raw.watch(path, {**query, "resourceVersion": rv, "timeoutSeconds": "3"}))
    await asyncio.sleep(0.2)
    await create_pod(api, cluster.namespace, unique("other"))
    assert await short == []
    bookmarks = await longer
    assert bookmarks and _types(bookmarks) == ["BOOKMARK"] * len(bookmarks)
    assert int(bookmarks[0]["object"]["metadata"]["resourceVersion"]) > int(rv)


async def test_watch_without_resource_version_starts_with_the_existing_objects(
    raw: Raw, api: ApiClient, cluster: Cluster
) -> None:
    name = unique("existing")
    await create_pod(api, cluster.namespace, name)
    for rv in ("", "0"):
        query = {"timeoutSeconds": "1", "fieldSelector": f"metadata.name={name}"}
        if rv:
            query["resourceVersion"] = rv
        events = await raw.watch(f"/api/v1/namespaces/{cluster.namespace}/pods", query, limit=5)
        assert _types(events) == ["ADDED"]
        assert events[0]["object"]["metadata"]["name"] == name


async def test_a_watch_from_now_with_bookmarks_closes_its_initial_events(
    raw: Raw, api: ApiClient, cluster: Cluster
) -> None:
    """Without a resourceVersion (or with "0") a watch asks for its initial events (the WatchList
    defaulting): allowing bookmarks, they end with the annotated one. The real server may send the
    watch cache's periodic bookmark too before ``timeoutSeconds`` (it failed CI once with two): any
    event after the annotated one is a bookmark."""
    name = unique("existing")
    await create_pod(api, cluster.namespace, name)
    for rv in ("", "0"):
        query = {
            "allowWatchBookmarks": "true",
            "timeoutSeconds": "2",
            "fieldSelector": f"metadata.name={name}",
        }
        if rv:
            query["resourceVersion"] = rv
        events = await raw.watch(f"/api/v1/namespaces/{cluster.namespace}/pods", query, limit=5)
        assert _types(events)[:2] == ["ADDED", "BOOKMARK"], _types(events)
        assert events[1]["object"]["metadata"]["annotations"] == {"k8s.io/initial-events-end": "true"}
        assert set(_types(events)[2:]) <= {"BOOKMARK"}, _types(events)


async def test_send_initial_events_ends_with_an_annotated_bookmark(
    raw: Raw, api: ApiClient, cluster: Cluster
) -> None:
    label = unique("sie")
    for i in range(2):
        await create_pod(api, cluster.namespace, f"{label}-{i}", labels={"sie": label})
    query = {
        "sendInitialEvents": "true",
        "resourceVersionMatch": "NotOlderThan",
        "allowWatchBookmarks": "true",
        "timeoutSeconds": "4",
        "labelSelector": f"sie={label}",
    }
    events = await raw.watch(f"/api/v1/namespaces/{cluster.namespace}/pods", query, until=3, limit=5)
    assert _types(events) == ["ADDED", "ADDED", "BOOKMARK"]
    assert sorted(e["object"]["metadata"]["name"] for e in events[:2]) == [f"{label}-0", f"{label}-1"]
    assert events[2]["object"]["metadata"]["annotations"] == {"k8s.io/initial-events-end": "true"}


async def test_send_initial_events_needs_not_older_than(raw: Raw, cluster: Cluster) -> None:
    resp = await raw.get(
        f"/api/v1/namespaces/{cluster.namespace}/pods",
        watch="true",
        sendInitialEvents="true",
        allowWatchBookmarks="true",
    )
    assert resp.status == 422


async def test_selector_boundaries_synthesize_added_and_deleted(
    raw: Raw, api: ApiClient, cluster: Cluster
) -> None:
    ns, name = cluster.namespace, unique("fw")
    rv = await _current_rv(raw, ns)
    base = {"resourceVersion": rv, "timeoutSeconds": "2"}
    unassigned = asyncio.create_task(
        raw.watch(
            "/api/v1/pods",
            {
                **base,
                "fieldSelector": (
                    f"metadata.name={name},spec.nodeName=,status.phase!=Succeeded,status.phase!=Failed"
                ),
            },
        )
    )
    assigned = asyncio.create_task(
        raw.watch("/api/v1/pods", {**base, "fieldSelector": f"metadata.name={name},spec.nodeName!="})
    )
    await asyncio.sleep(0.2)
    created = await create_pod(api, ns, name)
    assert (await bind(api, ns, name, cluster.name("ghost")))[0] == 201
    await client.CoreV1Api(api).delete_namespaced_pod(name, ns, grace_period_seconds=0)
    left, right = await unassigned, await assigned
    assert _types(left) == ["ADDED", "DELETED"]
    gone = left[1]["object"]
    assert "nodeName" not in gone["spec"], "the DELETED object is the pre-bind state"
    assert "conditions" not in gone["status"]
    assert int(gone["metadata"]["resourceVersion"]) > int(created.metadata.resource_version)
    assert _types(right) == ["ADDED", "MODIFIED", "DELETED"]
    assert right[0]["object"]["spec"]["nodeName"] == cluster.name("ghost")
    assert right[0]["object"]["metadata"]["resourceVersion"] == gone["metadata"]["resourceVersion"]


async def test_watch_from_an_older_resource_version_replays(
    raw: Raw, api: ApiClient, cluster: Cluster
) -> None:
    name = unique("replay")
    rv = await _current_rv(raw, cluster.namespace)
    await create_pod(api, cluster.namespace, name)
    for i in range(3):
        await client.CoreV1Api(api).patch_namespaced_pod(
            name, cluster.namespace, {"metadata": {"annotations": {"n": str(i)}}}
        )
    query = {"resourceVersion": rv, "fieldSelector": f"metadata.name={name}", "timeoutSeconds": "1"}
    events = await raw.watch(f"/api/v1/namespaces/{cluster.namespace}/pods", query, until=4, limit=5)
    assert _types(events) == ["ADDED", "MODIFIED", "MODIFIED", "MODIFIED"]
    assert [e["object"]["metadata"].get("annotations", {}).get("n") for e in events] == [None, "0", "1", "2"]


async def test_watch_at_a_future_resource_version_sends_nothing(raw: Raw, cluster: Cluster) -> None:
    rv = int(await _current_rv(raw, cluster.namespace)) + 100000
    query = {"resourceVersion": str(rv), "timeoutSeconds": "1"}
    events = await raw.watch(f"/api/v1/namespaces/{cluster.namespace}/pods", query, limit=5)
    assert events == []


async def test_typed_watch_of_the_client(api: ApiClient, cluster: Cluster) -> None:
    name = unique("typed")
    core = client.CoreV1Api(api)
    await create_pod(api, cluster.namespace, name)
    seen = []
    w = watch.Watch()
    async with w.stream(
        core.list_namespaced_pod, cluster.namespace, field_selector=f"metadata.name={name}", timeout_seconds=1
    ) as stream:
        async for event in stream:
            seen.append((event["type"], event["object"].metadata.name))
            w.stop()
    assert seen == [("ADDED", name)]


async def test_node_watch(raw: Raw, api: ApiClient, cluster: Cluster) -> None:
    from tests.contract.testing import node_manifest

    body = node_manifest(cluster, unique("watched"))
    rv = (await raw.get("/api/v1/nodes")).json()["metadata"]["resourceVersion"]
    watcher = asyncio.create_task(
        raw.watch(
            "/api/v1/nodes",
            {
                "resourceVersion": rv,
                "fieldSelector": f"metadata.name={body['metadata']['name']}",
                "timeoutSeconds": "5",
            },
            until=1,
            limit=6,
        )
    )
    await client.CoreV1Api(api).create_node(kube.body(body))
    [event] = await watcher
    assert event["type"] == "ADDED" and event["object"]["kind"] == "Node"
