"""End to end: with the scheduler's ``--record-results`` (here ``KSCHED_RECORD_RESULTS=1``) a bound pod
carries kube-scheduler-simulator's result annotations, its PreBind and Bind results written by the
binder after binding, and an unschedulable pod carries the scheduler's, each node's rejection in it;
each attempt is appended to ``result-history``."""

from __future__ import annotations

import json
from typing import Any

import pytest
from kubernetes_asyncio import client
from kubernetes_asyncio.client import ApiClient

from ksched.launcher.stack import Stack
from ksched.reporting import simulator_results as sr
from tests import kube
from tests.e2e.testing import create_nodes, create_pods, eventually, node, pod, stack_fixture

pytestmark = pytest.mark.e2e

TAINT = {"key": "dedicated", "value": "batch", "effect": "NoSchedule"}


stack = stack_fixture(
    "record-stack", pod_start_delay=0.1, time_scale=0.01, extra_env={"KSCHED_RECORD_RESULTS": "1"}
)


async def annotations_of(api: ApiClient, name: str) -> dict[str, str]:
    resp = await kube.undecoded(
        client.CoreV1Api(api).read_namespaced_pod(name, "default", _preload_content=False)
    )
    try:
        doc: dict[str, Any] = json.loads(await resp.read())
    finally:
        resp.release()
    annotations: dict[str, str] = doc["metadata"].get("annotations") or {}
    annotations["spec.nodeName"] = doc["spec"].get("nodeName") or ""
    return annotations


async def test_bound_and_unschedulable_pods_carry_the_simulators_annotations(
    stack: Stack, api: ApiClient
) -> None:
    await create_nodes(
        api, [node("plain", cpu="2"), node("small", cpu="1"), node("tainted", cpu="2", taints=[TAINT])]
    )
    await create_pods(api, [pod("recorded-ok", cpu="100m"), pod("recorded-big", cpu="3")])

    async def bound_with_results() -> dict[str, str] | None:
        got = await annotations_of(api, "recorded-ok")
        return got if got["spec.nodeName"] and sr.BIND in got else None

    ok = await eventually(bound_with_results, timeout=60)
    node_name = ok["spec.nodeName"]
    assert ok[sr.SELECTED_NODE] == node_name
    assert json.loads(ok[sr.BIND]) == {"DefaultBinder": "success"}  # the binder's, as documented
    assert json.loads(ok[sr.PRE_BIND]).get("VolumeBinding") is not None
    filtered = json.loads(ok[sr.FILTER])
    assert filtered["tainted"]["TaintToleration"] == "node(s) had untolerated taint(s)"
    assert set(filtered[node_name].values()) == {"passed"}
    final = json.loads(ok[sr.FINAL_SCORE])
    assert set(final) == {"plain", "small"} and final[node_name]["TaintToleration"] == "300"
    (entry,) = json.loads(ok[sr.HISTORY])
    assert entry[sr.BIND] == ok[sr.BIND] and entry[sr.SELECTED_NODE] == node_name

    async def rejected_with_results() -> dict[str, str] | None:
        got = await annotations_of(api, "recorded-big")
        return got if sr.FILTER in got else None

    big = await eventually(rejected_with_results, timeout=60)
    assert big["spec.nodeName"] == "" and big[sr.SELECTED_NODE] == ""
    filtered = json.loads(big[sr.FILTER])
    assert filtered["plain"]["NodeResourcesFit"] == "Insufficient cpu"
    assert filtered["small"]["NodeResourcesFit"] == "Insufficient cpu"
    assert filtered["tainted"]["TaintToleration"] == "node(s) had untolerated taint(s)"
    assert json.loads(big[sr.POST_FILTER]) == {"plain": {}, "small": {}, "tainted": {}}
    assert json.loads(big[sr.BIND]) == {} and json.loads(big[sr.SCORE]) == {}
    assert len(json.loads(big[sr.HISTORY])) >= 1
