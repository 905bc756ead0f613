"""HTTPExtender against a real extender HTTP server: each verb on the wire, nodeCacheCapable,
errors, timeouts, connection reuse, IsInterested (upstream ``TestIsInterested``) and the
victims conversions (upstream ``TestConvertToMetaVictims`` / ``TestConvertToVictims``)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any

import pytest

from ksched.api.core import Pod
from ksched.config.types import Extender, ExtenderManagedResource
from ksched.extenders import HTTPExtender, HTTPExtenders
from ksched.framework.extender import ExtenderError, Victims
from ksched.framework.nodeinfo import NodeInfo
from ksched.framework.snapshot import Snapshot
from ksched.framework.testing import container, make_node, make_pod, make_snapshot
from tests.extenders.server import (
    ExtenderServer,
    FakeExtender,
    Reply,
    favour,
    only,
)


@asynccontextmanager
async def opened(*configs: Extender) -> AsyncIterator[list[HTTPExtender]]:
    owner = HTTPExtenders(configs)
    try:
        yield owner.extenders
    finally:
        await owner.close()


def cluster(*names: str, pods: Sequence[Pod] = ()) -> Snapshot:
    return make_snapshot([make_node(n, allocatable={"cpu": "4", "memory": "8Gi"}) for n in names], pods)


def nodes_of(snapshot: Snapshot) -> list[NodeInfo]:
    return list(snapshot.nodes)


POD = make_pod("p", uid="uid-p")


# --- filter ---------------------------------------------------------------------------------------
async def test_filter_sends_whole_nodes_when_not_node_cache_capable(server: ExtenderServer) -> None:
    fake = FakeExtender(predicates=[only("b")])
    snap = cluster("a", "b", "c")
    async with opened(fake.config(server.serve("ext", fake))) as (ext,):
        verdict = await ext.filter(POD, nodes_of(snap))
    assert [ni.name for ni in verdict.nodes] == ["b"]
    assert verdict.nodes[0] is snap.node_map["b"]
    assert verdict.failed == {"a": 'FakeExtender: node "a" failed', "c": 'FakeExtender: node "c" failed'}
    (req,) = server.requests
    assert req.path == "/ext/filter"
    assert req.headers["Content-Type"] == "application/json"
    assert set(req.body) == {"Pod", "Nodes", "NodeNames"}
    assert req.body["NodeNames"] is None
    assert [n["metadata"]["name"] for n in req.body["Nodes"]["items"]] == ["a", "b", "c"]
    assert req.body["Nodes"]["items"][0]["status"]["allocatable"] == {"cpu": "4", "memory": "8Gi"}
    assert req.body["Pod"]["metadata"]["uid"] == "uid-p"


async def test_filter_sends_node_names_when_node_cache_capable(server: ExtenderServer) -> None:
    fake = FakeExtender(predicates=[only("c")], node_cache_capable=True)
    snap = cluster("a", "b", "c")
    async with opened(fake.config(server.serve("ext", fake))) as (ext,):
        verdict = await ext.filter(POD, nodes_of(snap))
    assert [ni.name for ni in verdict.nodes] == ["c"]
    (req,) = server.requests
    assert req.body["Nodes"] is None
    assert req.body["NodeNames"] == ["a", "b", "c"]


async def test_filter_unresolvable_nodes_are_reported_apart(server: ExtenderServer) -> None:
    def verdicts(pod: Any, node: str) -> str:
        return {"a": "ok", "b": "unschedulable"}.get(node, "unresolvable")

    fake = FakeExtender(predicates=[verdicts], node_cache_capable=True)
    async with opened(fake.config(server.serve("ext", fake))) as (ext,):
        verdict = await ext.filter(POD, nodes_of(cluster("a", "b", "c")))
    assert [ni.name for ni in verdict.nodes] == ["a"]
    assert verdict.failed == {"b": 'FakeExtender: node "b" failed'}
    assert verdict.failed_and_unresolvable == {"c": 'FakeExtender: node "c" failed and unresolvable'}


async def test_filter_without_filter_verb_keeps_every_node_without_a_call(server: ExtenderServer) -> None:
    config = Extender(url_prefix=f"{server.url}/ext", prioritize_verb="prioritize", weight=1)
    async with opened(config) as (ext,):
        verdict = await ext.filter(POD, nodes_of(cluster("a", "b")))
    assert [ni.name for ni in verdict.nodes] == ["a", "b"]
    assert server.requests == []


async def test_filter_error_in_reply_fails(server: ExtenderServer) -> None:
    server.routes["/ext/filter"] = lambda body: Reply({"Error": "disk pool offline"})
    async with opened(Extender(url_prefix=f"{server.url}/ext", filter_verb="filter")) as (ext,):
        with pytest.raises(ExtenderError, match="disk pool offline"):
            await ext.filter(POD, nodes_of(cluster("a")))


async def test_filter_claiming_a_node_it_was_not_sent_fails(server: ExtenderServer) -> None:
    server.routes["/ext/filter"] = lambda body: Reply({"NodeNames": ["a", "zz"]})
    config = Extender(url_prefix=f"{server.url}/ext", filter_verb="filter", node_cache_capable=True)
    async with opened(config) as (ext,):
        with pytest.raises(ExtenderError, match='claims a filtered node "zz" which is not found'):
            await ext.filter(POD, nodes_of(cluster("a", "b")))


async def test_filter_reply_with_only_node_names_from_a_non_cache_capable_extender_keeps_nothing(
    server: ExtenderServer,
) -> None:
    # upstream reads NodeNames only when nodeCacheCapable; otherwise Nodes (absent: no node passes)
    server.routes["/ext/filter"] = lambda body: Reply({"NodeNames": ["a"]})
    async with opened(Extender(url_prefix=f"{server.url}/ext", filter_verb="filter")) as (ext,):
        verdict = await ext.filter(POD, nodes_of(cluster("a", "b")))
    assert verdict.nodes == []


async def test_filter_reply_keys_match_without_regard_to_case(server: ExtenderServer) -> None:
    server.routes["/ext/filter"] = lambda body: Reply(
        {"nodenames": ["b"], "failedNodes": {"a": "no"}, "FAILEDANDUNRESOLVABLENODES": {"c": "never"}}
    )
    config = Extender(url_prefix=f"{server.url}/ext/", filter_verb="filter", node_cache_capable=True)
    async with opened(config) as (ext,):
        verdict = await ext.filter(POD, nodes_of(cluster("a", "b", "c")))
    assert [ni.name for ni in verdict.nodes] == ["b"]
    assert verdict.failed == {"a": "no"}
    assert verdict.failed_and_unresolvable == {"c": "never"}
    assert server.paths() == ["/ext/filter"]  # the trailing slash of urlPrefix is dropped


# --- transport errors and timeouts ----------------------------------------------------------------
async def test_non_200_reply_fails_with_upstreams_message(server: ExtenderServer) -> None:
    server.routes["/ext/filter"] = lambda body: Reply("boom", status=500)
    async with opened(Extender(url_prefix=f"{server.url}/ext", filter_verb="filter")) as (ext,):
        with pytest.raises(ExtenderError) as err:
            await ext.filter(POD, nodes_of(cluster("a")))
    assert str(err.value) == f"failed filter with extender at URL {server.url}/ext/filter, code 500"


@pytest.mark.parametrize("raw", [b"<html>", b'[{"Host": "\xff"}]'], ids=["html", "utf8"])
async def test_undecodable_reply_fails(server: ExtenderServer, raw: bytes) -> None:
    server.routes["/ext/prioritize"] = lambda body: Reply(raw=raw)
    config = Extender(url_prefix=f"{server.url}/ext", prioritize_verb="prioritize", weight=1)
    async with opened(config) as (ext,):
        with pytest.raises(ExtenderError, match="decoding HostPriorityList"):
            await ext.prioritize(POD, nodes_of(cluster("a")))


async def test_reply_of_the_wrong_type_fails(server: ExtenderServer) -> None:
    server.routes["/ext/prioritize"] = lambda body: Reply([{"Host": "a", "Score": "high"}])
    config = Extender(url_prefix=f"{server.url}/ext", prioritize_verb="prioritize", weight=1)
    async with opened(config) as (ext,):
        with pytest.raises(ExtenderError, match="expected an integer"):
            await ext.prioritize(POD, nodes_of(cluster("a")))


async def test_http_timeout_bounds_the_call(server: ExtenderServer) -> None:
    server.routes["/ext/filter"] = lambda body: Reply({"NodeNames": []}, delay=2.0)
    config = Extender(url_prefix=f"{server.url}/ext", filter_verb="filter", http_timeout="200ms")
    async with opened(config) as (ext,):
        started = time.monotonic()
        with pytest.raises(ExtenderError) as err:
            await ext.filter(POD, nodes_of(cluster("a")))
        assert time.monotonic() - started < 1.5
    assert str(err.value) == (  # Go's net/http client's text, as upstream's message carries it
        f'Post "{server.url}/ext/filter": context deadline exceeded '
        "(Client.Timeout exceeded while awaiting headers)"
    )


async def test_http_timeout_while_the_body_is_read_reads_as_upstreams() -> None:
    async def headers_then_nothing(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{")
        await writer.drain()
        await asyncio.sleep(2)
        writer.close()

    stalled = await asyncio.start_server(headers_then_nothing, "127.0.0.1", 0)
    port = stalled.sockets[0].getsockname()[1]
    config = Extender(url_prefix=f"http://127.0.0.1:{port}/ext", filter_verb="filter", http_timeout="200ms")
    try:
        async with opened(config) as (ext,):
            with pytest.raises(ExtenderError) as err:
                await ext.filter(POD, nodes_of(cluster("a")))
    finally:
        stalled.close()
    # upstream decodes the body outside the client's call: no url.Error around the text
    assert (
        str(err.value)
        == "context deadline exceeded (Client.Timeout or context cancellation while reading body)"
    )


async def test_unreachable_extender_fails() -> None:
    config = Extender(url_prefix="http://127.0.0.1:9/ext", filter_verb="filter", http_timeout="2s")
    async with opened(config) as (ext,):
        with pytest.raises(ExtenderError) as err:
            await ext.filter(POD, nodes_of(cluster("a")))
    assert (
        str(err.value)
        == 'Post "http://127.0.0.1:9/ext/filter": dial tcp 127.0.0.1:9: connect: connection refused'
    )


async def test_connections_are_reused(server: ExtenderServer) -> None:
    fake = FakeExtender(predicates=[only("a")], prioritizers=[(favour("a"), 1)], node_cache_capable=True)
    async with opened(fake.config(server.serve("ext", fake))) as (ext,):
        for _ in range(5):
            await ext.filter(POD, nodes_of(cluster("a", "b")))
            await ext.prioritize(POD, nodes_of(cluster("a", "b")))
    assert len(server.requests) == 10
    assert len({r.peer for r in server.requests}) == 1


# --- prioritize -----------------------------------------------------------------------------------
async def test_prioritize_returns_scores_and_the_weight(server: ExtenderServer) -> None:
    fake = FakeExtender(prioritizers=[(favour("b"), 2)], weight=3, node_cache_capable=True)
    async with opened(fake.config(server.serve("ext", fake))) as (ext,):
        scores, weight = await ext.prioritize(POD, nodes_of(cluster("a", "b")))
    assert sorted(scores) == [("a", 2), ("b", 20)]
    assert weight == 3
    assert server.requests[0].body["NodeNames"] == ["a", "b"]


async def test_prioritize_without_prioritize_verb_gives_zeros_without_a_call(server: ExtenderServer) -> None:
    config = Extender(url_prefix=f"{server.url}/ext", filter_verb="filter", weight=5)
    async with opened(config) as (ext,):
        assert await ext.prioritize(POD, nodes_of(cluster("a", "b"))) == ([("a", 0), ("b", 0)], 0)
    assert server.requests == []


# --- bind -----------------------------------------------------------------------------------------
async def test_bind_sends_the_binding_args(server: ExtenderServer) -> None:
    fake = FakeExtender(bind=True)
    pod = make_pod("web-0", namespace="shop", uid="uid-web-0")
    async with opened(fake.config(server.serve("ext", fake))) as (ext,):
        await ext.bind(pod, "node-7")
    assert server.requests[0].body == {
        "PodName": "web-0",
        "PodNamespace": "shop",
        "PodUID": "uid-web-0",
        "Node": "node-7",
    }
    assert fake.bound == [("shop", "web-0", "uid-web-0", "node-7")]


async def test_bind_error_in_reply_fails(server: ExtenderServer) -> None:
    fake = FakeExtender(bind=True, bind_error="node full")
    async with opened(fake.config(server.serve("ext", fake))) as (ext,):
        with pytest.raises(ExtenderError, match="node full"):
            await ext.bind(POD, "a")


# --- preempt --------------------------------------------------------------------------------------
def victims_cluster() -> Snapshot:
    pods = [
        make_pod("pod1", uid="uid1", node_name="node1"),
        make_pod("pod2", uid="uid2", node_name="node2"),
        make_pod("pod3", uid="uid3", node_name="node1"),
        make_pod("pod4", uid="uid4", node_name="node2"),
    ]
    return cluster("node1", "node2", pods=pods)


def victims_of(snap: Snapshot) -> dict[str, Victims]:
    by_uid = {pi.uid: pi for ni in snap.nodes for pi in ni.pods}
    return {
        "node1": Victims([by_uid["uid1"], by_uid["uid3"]], 1),
        "node2": Victims([by_uid["uid2"], by_uid["uid4"]], 2),
    }


async def test_preemption_args_carry_meta_victims_when_node_cache_capable(server: ExtenderServer) -> None:
    """Upstream ``TestConvertToMetaVictims``: UIDs and NumPDBViolations per node."""
    fake = FakeExtender(preempt=True, node_cache_capable=True)
    snap = victims_cluster()
    async with opened(fake.config(server.serve("ext", fake))) as (ext,):
        out = await ext.process_preemption(POD, victims_of(snap), snap.node_map)
    body = server.requests[0].body
    assert body["NodeNameToVictims"] is None
    assert body["NodeNameToMetaVictims"] == {
        "node1": {"Pods": [{"UID": "uid1"}, {"UID": "uid3"}], "NumPDBViolations": 1},
        "node2": {"Pods": [{"UID": "uid2"}, {"UID": "uid4"}], "NumPDBViolations": 2},
    }
    # upstream TestConvertToVictims: the UIDs come back as the node's pods, violations kept
    assert {n: ([p.name for p in v.pods], v.num_pdb_violations) for n, v in out.items()} == {
        "node1": (["pod1", "pod3"], 1),
        "node2": (["pod2", "pod4"], 2),
    }


async def test_preemption_args_carry_whole_pods_otherwise(server: ExtenderServer) -> None:
    fake = FakeExtender(preempt=True, predicates=[only("node2")])
    snap = victims_cluster()
    async with opened(fake.config(server.serve("ext", fake))) as (ext,):
        out = await ext.process_preemption(POD, victims_of(snap), snap.node_map)
    body = server.requests[0].body
    assert body["NodeNameToMetaVictims"] is None
    assert [p["metadata"]["name"] for p in body["NodeNameToVictims"]["node1"]["Pods"]] == ["pod1", "pod3"]
    assert list(out) == ["node2"]


async def test_preemption_naming_a_pod_not_on_the_node_fails(server: ExtenderServer) -> None:
    server.routes["/ext/preempt"] = lambda body: Reply(
        {"NodeNameToMetaVictims": {"node1": {"Pods": [{"UID": "uid2"}], "NumPDBViolations": 0}}}
    )
    snap = victims_cluster()
    config = Extender(url_prefix=f"{server.url}/ext", preempt_verb="preempt")
    async with opened(config) as (ext,):
        with pytest.raises(ExtenderError) as failed:
            await ext.process_preemption(POD, victims_of(snap), snap.node_map)
    assert str(failed.value) == (  # upstream's %v of the *MetaPod
        f"extender: {server.url}/ext claims to preempt pod (UID: &{{uid2}}) on node: node1, "
        "but the pod is not found on that node"
    )


async def test_preemption_naming_an_unknown_node_fails(server: ExtenderServer) -> None:
    server.routes["/ext/preempt"] = lambda body: Reply({"NodeNameToMetaVictims": {"gone": {"Pods": []}}})
    snap = victims_cluster()
    config = Extender(url_prefix=f"{server.url}/ext", preempt_verb="preempt")
    async with opened(config) as (ext,):
        with pytest.raises(ExtenderError, match='nodeinfo not found for node name "gone"'):
            await ext.process_preemption(POD, victims_of(snap), snap.node_map)


async def test_verbs_an_extender_does_not_have_fail() -> None:
    async with opened(Extender(url_prefix="http://127.0.0.1:9")) as (ext,):
        with pytest.raises(ExtenderError, match="empty bindVerb"):
            await ext.bind(POD, "a")
        with pytest.raises(ExtenderError, match="preempt verb is not defined"):
            await ext.process_preemption(POD, {}, {})


# --- IsInterested and construction ----------------------------------------------------------------
def _interested(managed: Sequence[str], pod: Pod) -> bool:
    ext = HTTPExtenders(
        [
            Extender(
                url_prefix="http://x", managed_resources=[ExtenderManagedResource(name=m) for m in managed]
            )
        ]
    ).extenders[0]
    return ext.is_interested(pod)


@pytest.mark.parametrize(
    ("label", "managed", "pod", "want"),
    [
        ("Empty managed resources", [], Pod(), True),
        ("Managed memory, empty resources", ["memory"], make_pod(containers=[container("app")]), False),
        (
            "Managed memory, container memory with Requests",
            ["memory"],
            make_pod(containers=[container(requests={"memory": "0"})]),
            True,
        ),
        (
            "Managed memory, container memory with Limits",
            ["memory"],
            make_pod(containers=[container(limits={"memory": "0"})]),
            True,
        ),
        (
            "Managed memory, init container memory",
            ["memory"],
            make_pod(containers=[container("app")], init_containers=[container(requests={"memory": "0"})]),
            True,
        ),
    ],
)
def test_is_interested(label: str, managed: list[str], pod: Pod, want: bool) -> None:
    assert _interested(managed, pod) is want


def test_ignorable_extenders_come_last_and_names_are_url_prefixes() -> None:
    configs = [
        Extender(url_prefix="http://a", ignorable=True),
        Extender(url_prefix="http://b"),
        Extender(url_prefix="http://c", ignorable=True),
        Extender(url_prefix="http://d"),
    ]
    assert [e.name for e in HTTPExtenders(configs).extenders] == [
        "http://b",
        "http://d",
        "http://a",
        "http://c",
    ]


def test_verbs_say_what_the_extender_does() -> None:
    (ext,) = HTTPExtenders([Extender(url_prefix="http://a", filter_verb="f", bind_verb="b")]).extenders
    assert (ext.is_filter(), ext.is_prioritizer(), ext.is_binder(), ext.supports_preemption()) == (
        True,
        False,
        True,
        False,
    )
