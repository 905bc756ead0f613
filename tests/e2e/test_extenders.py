"""End to end with a scheduler extender: every service is a process, the extender a real HTTP
server. Its filter and prioritize verbs steer GPU pods, its bind verb binds them (the extender
posts the Binding to the API itself); other pods never reach it and are bound by DefaultBinder."""

from __future__ import annotations

import json
import urllib.request
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes_asyncio import client
from kubernetes_asyncio.client import ApiClient

from ksched.launcher.stack import Stack, StackOptions
from tests.e2e.testing import api_for, create_nodes, create_pods, eventually, node, pod, pod_nodes
from tests.extenders.server import ERROR, OK, UNSCHEDULABLE, ExtenderServer, FakeExtender, Reply, favour

pytestmark = pytest.mark.e2e

CONFIG = """
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
extenders:
- urlPrefix: {url}
  filterVerb: filter
  prioritizeVerb: prioritize
  bindVerb: bind
  weight: 5
  nodeCacheCapable: true
  managedResources:
  - name: example.com/gpu
    ignoredByScheduler: true
"""


def gpu_pod(name: str) -> dict[str, Any]:
    body = pod(name)
    body["spec"]["containers"][0]["resources"]["requests"]["example.com/gpu"] = "1"
    body["spec"]["containers"][0]["resources"]["limits"] = {"example.com/gpu": "1"}
    return body


def gpu_nodes(pod_json: Any, node_name: str) -> str:
    if pod_json["metadata"]["name"] == "no-gpu-left":
        return UNSCHEDULABLE
    if pod_json["metadata"]["name"] == "gpu-backend-down":
        return ERROR  # the extender answers {"Error": "some error"}
    return OK if node_name.startswith("gpu-") else UNSCHEDULABLE


class BindingExtender(FakeExtender):
    """Binds through the API server as a real binding extender does."""

    kubeconfig: str = ""

    def on_bind(self, args: Any) -> Reply:
        cfg = yaml.safe_load(Path(self.kubeconfig).read_text())
        server = cfg["clusters"][0]["cluster"]["server"]
        token = cfg["users"][0]["user"].get("token")
        ns, name = args["PodNamespace"], args["PodName"]
        body = {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {"name": name, "namespace": ns, "uid": args["PodUID"]},
            "target": {"apiVersion": "v1", "kind": "Node", "name": args["Node"]},
        }
        req = urllib.request.Request(
            f"{server}/api/v1/namespaces/{ns}/pods/{name}/binding",
            data=json.dumps(body).encode(),
            headers={
                "Content-Type": "application/json",
                **({"Authorization": f"Bearer {token}"} if token else {}),
            },
            method="POST",
        )
        with urllib.request.urlopen(req, timeout=5) as resp:  # the extender's own API call
            if resp.status >= 300:
                return Reply({"Error": f"binding failed: {resp.status}"})
        self.bound.append((ns, name, args["PodUID"], args["Node"]))
        return Reply({"Error": ""})


@pytest.fixture(scope="module")
def extender() -> Iterator[tuple[ExtenderServer, BindingExtender, str]]:
    srv = ExtenderServer().start()
    fake = BindingExtender(
        predicates=[gpu_nodes], prioritizers=[(favour("gpu-2"), 1)], node_cache_capable=True
    )
    fake.bind = True
    url = srv.serve("gpu", fake)
    try:
        yield srv, fake, url
    finally:
        srv.stop()


@pytest.fixture(scope="module")
async def stack(
    tmp_path_factory: pytest.TempPathFactory, extender: tuple[ExtenderServer, BindingExtender, str]
) -> AsyncIterator[Stack]:
    workdir = tmp_path_factory.mktemp("stack-extenders")
    config = workdir / "scheduler-config.yaml"
    config.write_text(CONFIG.replace("{url}", extender[2]))
    s = Stack(StackOptions(workdir=workdir, config=str(config), pod_start_delay=0.1, time_scale=0.01))
    await s.start()
    extender[1].kubeconfig = s.kubeconfig
    try:
        yield s
    finally:
        await s.stop()


async def test_extender_filters_scores_and_binds(
    stack: Stack, extender: tuple[ExtenderServer, BindingExtender, str]
) -> None:
    server, fake, _ = extender
    api: ApiClient = await api_for(stack.kubeconfig)
    try:
        await create_nodes(api, [node("gpu-1"), node("gpu-2"), node("cpu-1", cpu="16")])
        await create_pods(
            api, [gpu_pod("trainer"), pod("web"), gpu_pod("no-gpu-left"), gpu_pod("gpu-backend-down")]
        )

        async def placed() -> dict[str, str] | None:
            nodes = await pod_nodes(api)
            return nodes if nodes.get("trainer") and nodes.get("web") else None

        nodes = await eventually(placed, timeout=90)
        assert nodes["trainer"] == "gpu-2"  # kept by the filter, preferred by prioritize
        assert [(b[1], b[3]) for b in fake.bound] == [("trainer", "gpu-2")]  # bound by the extender
        assert nodes["web"]  # bound by DefaultBinder

        async def rejected(name: str = "no-gpu-left") -> tuple[str, str] | None:
            p = await client.CoreV1Api(api).read_namespaced_pod(name, "default")
            for cond in p.status.conditions or []:
                if cond.type == "PodScheduled" and cond.status == "False":
                    return str(cond.reason), str(cond.message)
            return None

        reason, message = await eventually(rejected, timeout=60)
        assert reason == "Unschedulable"
        assert message.startswith("0/3 nodes are available: ")
        assert 'FakeExtender: node "gpu-1" failed' in message
        assert nodes.get("no-gpu-left", "") == ""
        # the extender's error: said as upstream's, the extender's own text, reason SchedulerError
        assert await eventually(lambda: rejected("gpu-backend-down"), timeout=60) == (
            "SchedulerError",
            "some error",
        )

        async def failed_scheduling() -> list[str]:
            events = await client.CoreV1Api(api).list_namespaced_event(
                "default", field_selector="involvedObject.name=gpu-backend-down,reason=FailedScheduling"
            )
            return [str(e.message) for e in events.items]

        assert (await eventually(failed_scheduling, timeout=30))[0] == "some error"
        seen = {r.body["Pod"]["metadata"]["name"] for r in server.requests if "Pod" in (r.body or {})}
        assert "web" not in seen  # no managed resource: the extender never saw it
    finally:
        await api.close()
