"""Two scheduler replicas racing: a replica stopped (SIGSTOP, by the fault point before-assume)
between its decision and its assume while the other replica places
a pod that makes the decision wrong; the informer refuses it and the pod gets upstream's
FailedScheduling. Then many constrained pods at once: no hard constraint is ever broken."""

from __future__ import annotations

import asyncio
import os
import re
import signal
from collections import Counter
from typing import Any

import aiohttp
import pytest
from ksched_scheduler.service import BEFORE_ASSUME
from kubernetes_asyncio import client
from kubernetes_asyncio.client import ApiClient

from ksched.launcher.stack import Stack
from tests.e2e.testing import (
    all_bound,
    create_namespace,
    create_nodes,
    create_pods,
    eventually,
    node,
    pod,
    pod_nodes,
    stack_fixture,
    stopped_scheduler,
)

pytestmark = pytest.mark.e2e

ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"
STOPPED = ("race-zone/b", "race-spread/s1", "race-pair/p")


stack = stack_fixture(
    "races",
    schedulers=2,
    pod_start_delay=3600,
    time_scale=0.01,
    faults={f"{BEFORE_ASSUME}/{key}": "stop" for key in STOPPED},
)


async def _stop_while(
    stack: Stack, api: ApiClient, decided: dict[str, Any], conflicting: dict[str, Any]
) -> None:
    """Create ``decided``; once a replica stopped before its assume, have the other replica place
    ``conflicting``, then let the stopped one continue."""
    ns = decided["metadata"]["namespace"]
    await create_pods(api, [decided])

    async def stopped() -> int | None:
        return stopped_scheduler(stack)

    pid = await eventually(stopped, timeout=60)
    try:
        # A pop the stopped replica had sent expires empty (long poll of 0.5 s) before the next pod.
        await asyncio.sleep(1.5)
        await create_pods(api, [conflicting])
        name = conflicting["metadata"]["name"]

        async def placed() -> str:
            return (await pod_nodes(api, ns)).get(name, "")

        await eventually(placed, timeout=60)
    finally:
        os.kill(pid, signal.SIGCONT)


async def _refused(api: ApiClient, ns: str, name: str, text: str) -> str:
    """The FailedScheduling note of pod ``name`` containing ``text``; fails at once if it got bound."""

    async def outcome() -> tuple[str, str] | None:
        node_name = (await pod_nodes(api, ns)).get(name, "")
        if node_name:
            return "bound", node_name
        events = await client.EventsV1Api(api).list_namespaced_event(ns)
        for e in events.items:
            if e.reason == "FailedScheduling" and e.regarding.name == name and text in (e.note or ""):
                return "refused", str(e.note)
        return None

    what, detail = await eventually(outcome, timeout=60)
    assert what == "refused", f"{ns}/{name} was bound to {detail}: a hard constraint is broken"
    return str(detail)


async def _informer_metric(stack: Stack, name: str, label: str, value: str) -> float:
    async with aiohttp.ClientSession() as session, session.get(stack.http_url("informer") + "/metrics") as r:
        text = await r.text()
    found = re.search(rf'^{name}{{{label}="{value}"}} (\S+)$', text, re.M)
    return float(found.group(1)) if found else 0.0


async def _full_checks(stack: Stack, reason: str) -> float:
    return await _informer_metric(stack, "ksched_assume_full_checks_total", "reason", reason)


def _anti(key: str, app: str) -> dict[str, Any]:
    term = {"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": key}
    return {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}


def _labelled(body: dict[str, Any], **labels: str) -> dict[str, Any]:
    body["metadata"]["labels"] = labels
    return body


async def test_a_stopped_replica_cannot_place_a_pod_in_the_zone_of_an_anti_affine_pod(
    stack: Stack, api: ApiClient
) -> None:
    ns = "race-zone"
    await create_namespace(api, ns)
    await create_nodes(
        api,
        [
            node("rz-a1", labels={ZONE: "rz-a", "pool": ns}),
            node("rz-a2", labels={ZONE: "rz-a", "pool": ns}),
            node("rz-b1", labels={ZONE: "rz-b", "pool": ns}),
        ],
    )
    before = await _full_checks(stack, "anti-affinity")
    in_zone_a = {ZONE: "rz-a", "pool": ns}
    b = _labelled(pod("b", namespace=ns, nodeSelector=in_zone_a), app="x")
    a = pod("a", namespace=ns, nodeSelector=in_zone_a, affinity=_anti(ZONE, "x"))
    await _stop_while(stack, api, b, a)
    note = await _refused(api, ns, "b", "didn't satisfy existing pods anti-affinity rules")
    assert note.startswith("0/"), note
    placed = await pod_nodes(api, ns)
    assert placed["a"] in ("rz-a1", "rz-a2") and placed["b"] == "", placed
    assert await _full_checks(stack, "anti-affinity") > before


async def test_two_replicas_racing_spread_pods_into_one_zone(stack: Stack, api: ApiClient) -> None:
    ns = "race-spread"
    await create_namespace(api, ns)
    await create_nodes(api, [node(f"rs-{z}", labels={ZONE: f"rs-{z}", "pool": ns}) for z in "abc"])
    # Both spread pods may only go to rs-a and count every zone (nodeAffinityPolicy Ignore), the
    # others stay empty: the first in rs-a fits (skew 0 + 1 - 0), a second one does not (1 + 1 - 0).
    constraint = {
        "maxSkew": 1,
        "topologyKey": ZONE,
        "whenUnsatisfiable": "DoNotSchedule",
        "labelSelector": {"matchLabels": {"app": "s"}},
        "nodeAffinityPolicy": "Ignore",
    }
    in_zone_a = {ZONE: "rs-a", "pool": ns}

    def spread_pod(name: str) -> dict[str, Any]:
        body = pod(name, namespace=ns, nodeSelector=in_zone_a, topologySpreadConstraints=[constraint])
        return _labelled(body, app="s")

    before = await _full_checks(stack, "refused")
    rechecks = await _informer_metric(
        stack, "ksched_assume_plugin_rechecks_total", "plugin", "PodTopologySpread"
    )
    await _stop_while(stack, api, spread_pod("s1"), spread_pod("s2"))
    await _refused(api, ns, "s1", "didn't match pod topology spread constraints")
    placed = await pod_nodes(api, ns)
    assert (placed["s1"], placed["s2"]) == ("", "rs-a"), placed
    assert await _full_checks(stack, "refused") > before
    plugin = "PodTopologySpread"
    assert await _informer_metric(stack, "ksched_assume_plugin_rechecks_total", "plugin", plugin) > rechecks


async def test_anti_affine_pods_racing_onto_one_node(stack: Stack, api: ApiClient) -> None:
    ns = "race-pair"
    await create_namespace(api, ns)
    await create_nodes(api, [node(f"rp-{i}", labels={"pool": ns}) for i in range(2)])
    only_rp0 = {HOST: "rp-0"}

    def pair_pod(name: str) -> dict[str, Any]:
        return _labelled(
            pod(name, namespace=ns, nodeSelector=only_rp0, affinity=_anti(HOST, "pair")), app="pair"
        )

    await _stop_while(stack, api, pair_pod("p"), pair_pod("q"))
    await _refused(api, ns, "p", "didn't match pod anti-affinity rules")
    placed = await pod_nodes(api, ns)
    assert (placed["p"], placed["q"]) == ("", "rp-0"), placed


async def test_many_constrained_pods_at_once_break_no_hard_constraint(stack: Stack, api: ApiClient) -> None:
    ns = "race-many"
    await create_namespace(api, ns)
    zones = ("rm-a", "rm-b", "rm-c")
    await create_nodes(api, [node(f"rm-{i:02d}", labels={ZONE: zones[i % 3], "pool": ns}) for i in range(12)])
    pool = {"pool": ns}
    spread = {
        "maxSkew": 1,
        "topologyKey": ZONE,
        "whenUnsatisfiable": "DoNotSchedule",
        "labelSelector": {"matchLabels": {"app": "spread"}},
    }
    pods = [
        _labelled(
            pod(f"s-{i:02d}", namespace=ns, nodeSelector=pool, topologySpreadConstraints=[spread]),
            app="spread",
        )
        for i in range(30)
    ]
    pods += [
        _labelled(
            pod(f"h-{i:02d}", namespace=ns, nodeSelector=pool, affinity=_anti(HOST, "host")), app="host"
        )
        for i in range(10)
    ]
    await create_pods(api, pods)

    placed = await eventually(lambda: all_bound(api, ns, len(pods)), timeout=120, interval=0.5)
    zone_of = {f"rm-{i:02d}": zones[i % 3] for i in range(12)}
    per_zone = Counter(zone_of[n] for name, n in placed.items() if name.startswith("s-"))
    assert max(per_zone.values()) - min(per_zone.values()) <= 1, per_zone
    per_host = Counter(n for name, n in placed.items() if name.startswith("h-"))
    assert max(per_host.values()) == 1, per_host
