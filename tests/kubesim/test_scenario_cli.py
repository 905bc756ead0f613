"""Scenario files (YAML stream or kind: List), synthetic nodes, and the ``ksched kubesim`` command."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path

import pytest
from ksched_kubesim import KubeSim, KubeSimConfig, LifecycleSettings, ScenarioError
from ksched_kubesim.scenario import parse_objects
from ksched_kubesim.synthetic import synthetic_node
from kubernetes_asyncio import client

from tests.fixtures.kubesim import api_client_for

LIST = """\
apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Namespace
  metadata:
    name: team-a
    uid: ce19458d-7cc0-4e2c-a0b6-54ab28283bb1
    resourceVersion: "207"
    creationTimestamp: '2026-11-21T11:40:06Z'
    labels: {kubernetes.io/metadata.name: team-a}
  spec: {finalizers: [kubernetes]}
  status: {phase: Active}
- apiVersion: v1
  kind: Node
  metadata:
    name: n1
    resourceVersion: "216"
    labels: {kubernetes.io/hostname: n1, topology.kubernetes.io/zone: z1}
    managedFields:
    - {manager: recorder, operation: Update, apiVersion: v1}
  spec: {}
  status:
    capacity: {cpu: "8", memory: 32Gi, pods: "110"}
    allocatable: {cpu: 7890m, memory: 31Gi, pods: "110"}
- apiVersion: v1
  kind: Pod
  metadata: {name: bound, namespace: team-a, resourceVersion: "300", labels: {app: api}}
  spec:
    nodeName: n1
    containers: [{name: c, image: "x:1", resources: {requests: {cpu: 250m}}}]
  status: {phase: Pending, qosClass: Burstable}
- apiVersion: scheduling.k8s.io/v1
  kind: PriorityClass
  metadata: {name: batch-low}
  value: 100
"""

STREAM = """\
apiVersion: v1
kind: Pod
metadata: {name: pending, namespace: fresh}
spec: {containers: [{name: c, image: "x:1"}]}
---
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: local}
provisioner: kubernetes.io/no-provisioner
"""


def test_list_scenario_is_loaded_as_given() -> None:
    sim = KubeSim(KubeSimConfig(lifecycle=LifecycleSettings(enabled=False)))
    before = sim.resource_version
    assert sim.load_yaml(LIST) == 4
    ns = sim.get("Namespace", "team-a")
    assert ns is not None and ns["metadata"]["uid"] == "ce19458d-7cc0-4e2c-a0b6-54ab28283bb1"
    pod = sim.get("Pod", "bound", "team-a")
    assert pod is not None
    assert pod["status"] == {"phase": "Pending", "qosClass": "Burstable"}, "status kept, nothing defaulted"
    assert "tolerations" not in pod["spec"]
    assert int(pod["metadata"]["resourceVersion"]) > before, "resourceVersion reassigned"
    node = sim.get("Node", "n1")
    assert node is not None and node["status"]["allocatable"]["cpu"] == "7890m"
    assert node["metadata"]["managedFields"][0]["manager"] == "recorder"
    pc = sim.get("PriorityClass", "batch-low", api_version="scheduling.k8s.io/v1")
    assert pc is not None and pc["value"] == 100


def test_nested_lists_and_api_lists_are_flattened() -> None:
    """``kubectl get`` of several kinds nests nothing, but a List of Lists and a NodeList as the API
    serves it are Lists to kubectl too (the reader is ``ksched.api.files``)."""
    text = (
        "kind: List\nitems:\n- kind: NodeList\n  items: [{apiVersion: v1, kind: Node, metadata: {name: n}}]\n"
    )
    assert [(rt.kind, obj["metadata"]["name"]) for rt, obj in parse_objects(text)] == [("Node", "n")]


def test_stream_scenario_creates_missing_namespaces() -> None:
    sim = KubeSim(KubeSimConfig(lifecycle=LifecycleSettings(enabled=False)))
    sim.load_yaml(STREAM)
    assert sim.get("Namespace", "fresh") is not None
    assert sim.get("StorageClass", "local", api_version="storage.k8s.io/v1") is not None


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("apiVersion: v1\nkind: Gadget\nmetadata: {name: g}\n", "kubesim does not serve Gadget in v1"),
        ("apiVersion: v1\nkind: Pod\nmetadata: {}\n", "(Pod ?): metadata.name is required"),
        ("kind: Pod\nmetadata: {name: x}\n", "apiVersion and kind are required"),
        ("- just\n- a list\n", "expected a Kubernetes object"),
        ("a: [unclosed\n", "not valid YAML"),
        ("---\n---\napiVersion: v1\nkind: Gadget\nmetadata: {name: g}\n", "document 2 (Gadget g)"),
        (
            "kind: List\nitems:\n- kind: List\n  items: [{apiVersion: v1, kind: Pod}]\n",
            "items[0] items[0] (Pod ?)",
        ),
    ],
)
def test_bad_scenarios_name_the_problem(text: str, message: str) -> None:
    with pytest.raises(ScenarioError) as info:
        parse_objects(text, "scenario.yaml")
    assert message in str(info.value)
    assert str(info.value).startswith("scenario.yaml")


def test_synthetic_node_shape() -> None:
    node = synthetic_node(4)
    labels = node["metadata"]["labels"]
    assert node["metadata"]["name"] == "node-0004"
    assert labels["kubernetes.io/hostname"] == "node-0004"
    assert labels["topology.kubernetes.io/zone"] == "zone-b"
    assert labels["topology.kubernetes.io/region"] == "region-1"
    assert node["status"]["capacity"] == {
        "cpu": "32",
        "memory": "128Gi",
        "pods": "110",
        "ephemeral-storage": "500Gi",
    }
    assert node["spec"]["podCIDR"] != synthetic_node(5)["spec"]["podCIDR"]


async def _read_line(stream: asyncio.StreamReader) -> str:
    return (await asyncio.wait_for(stream.readline(), 20)).decode()


async def test_command_serves_nodes_and_scenario(tmp_path: Path) -> None:
    scenario = tmp_path / "scenario.yaml"
    scenario.write_text(LIST)
    kubeconfig = tmp_path / "kubeconfig"
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "ksched_kubesim",
        "--listen",
        "127.0.0.1:0",
        "--write-kubeconfig",
        str(kubeconfig),
        "--nodes",
        "3",
        "--scenario",
        str(scenario),
        "--token",
        "sekret",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        assert proc.stdout is not None
        first = await _read_line(proc.stdout)
        assert first.startswith("kubesim listening on http://127.0.0.1:")
        assert (await _read_line(proc.stdout)).startswith("kubeconfig written to")
        assert "sekret" in kubeconfig.read_text()
        assert oct(kubeconfig.stat().st_mode & 0o777) == "0o600"
        api = await api_client_for(kubeconfig)
        async with api:
            nodes = await client.CoreV1Api(api).list_node()
        assert sorted(n.metadata.name for n in nodes.items) == ["n1", "node-0000", "node-0001", "node-0002"]
    finally:
        proc.send_signal(signal.SIGTERM)
        code = await asyncio.wait_for(proc.wait(), 20)
    assert code == 0


async def test_command_rejects_a_bad_scenario(tmp_path: Path) -> None:
    scenario = tmp_path / "bad.yaml"
    scenario.write_text("apiVersion: v1\nkind: Gadget\nmetadata: {name: g}\n")
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "ksched_kubesim",
        "--scenario",
        str(scenario),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={**os.environ},
    )
    _, err = await asyncio.wait_for(proc.communicate(), 20)
    assert proc.returncode == 2
    assert f"{scenario} document 1 (Gadget g): kubesim does not serve Gadget in v1" in err.decode()


async def test_command_rejects_a_bad_listen_address() -> None:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "ksched_kubesim",
        "--listen",
        "nowhere",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    _, err = await asyncio.wait_for(proc.communicate(), 20)
    assert proc.returncode == 2
    assert "--listen must be HOST:PORT" in err.decode()


def test_log_options_follow_the_other_services(monkeypatch: pytest.MonkeyPatch) -> None:
    from ksched_kubesim.cli import build_parser

    assert build_parser().parse_args([]).log_format == "text"
    monkeypatch.setenv("KSCHED_LOG_FORMAT", "json")
    monkeypatch.setenv("KSCHED_LOG_LEVEL", "DEBUG")
    args = build_parser().parse_args([])
    assert (args.log_format, args.log_level) == ("json", "DEBUG")
    assert build_parser().parse_args(["--log-format", "text"]).log_format == "text"


async def test_command_issues_service_account_tokens_and_grants(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "ksched_kubesim",
        "--write-kubeconfig",
        str(kubeconfig),
        "--service-account",
        "monitoring/prometheus",
        "--grant",
        "serviceaccount:monitoring/prometheus=/metrics",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        assert proc.stdout is not None
        await _read_line(proc.stdout)
        await _read_line(proc.stdout)
        line = await _read_line(proc.stdout)
        assert line.startswith("token of service account monitoring/prometheus: ")
        token = line.rsplit(" ", 1)[1].strip()
        api = await api_client_for(kubeconfig)
        async with api:
            who = await client.AuthenticationV1Api(api).create_token_review(
                client.V1TokenReview(spec=client.V1TokenReviewSpec(token=token))
            )
            may = await client.AuthorizationV1Api(api).create_subject_access_review(
                client.V1SubjectAccessReview(
                    spec=client.V1SubjectAccessReviewSpec(
                        user=who.status.user.username,
                        groups=who.status.user.groups,
                        non_resource_attributes=client.V1NonResourceAttributes(path="/metrics", verb="get"),
                    )
                )
            )
        assert who.status.user.username == "system:serviceaccount:monitoring:prometheus"
        assert may.status.allowed is True
    finally:
        proc.send_signal(signal.SIGTERM)
        assert await asyncio.wait_for(proc.wait(), 20) == 0


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--grant", "robot=/metrics"], "--grant 'robot=/metrics': expected serviceaccount:NAMESPACE/NAME"),
        (["--grant", "user:alice=metrics"], "the paths must be absolute"),
        (["--service-account", "prometheus"], "--service-account 'prometheus': expected NAMESPACE/NAME"),
    ],
)
def test_bad_grants_name_the_flag(args: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    from ksched_kubesim.cli import main

    assert main(args) == 2
    assert message in capsys.readouterr().err
