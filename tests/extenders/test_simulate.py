"""``ksched simulate`` with an ``extenders`` configuration, against a real extender server: the
extender's rejections and scores show up in the report."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.extenders.server import OK, UNSCHEDULABLE, ExtenderServer, FakeExtender, favour

CLUSTER = """
apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Node
  metadata: {name: gpu-1, labels: {kubernetes.io/hostname: gpu-1}}
  status:
    allocatable: {cpu: "8", memory: 32Gi, pods: "110"}
    capacity: {cpu: "8", memory: 32Gi, pods: "110"}
- apiVersion: v1
  kind: Node
  metadata: {name: gpu-2, labels: {kubernetes.io/hostname: gpu-2}}
  status:
    allocatable: {cpu: "8", memory: 32Gi, pods: "110"}
    capacity: {cpu: "8", memory: 32Gi, pods: "110"}
- apiVersion: v1
  kind: Node
  metadata: {name: cpu-1, labels: {kubernetes.io/hostname: cpu-1}}
  status:
    allocatable: {cpu: "8", memory: 32Gi, pods: "110"}
    capacity: {cpu: "8", memory: 32Gi, pods: "110"}
- apiVersion: v1
  kind: Pod
  metadata: {name: train-0, namespace: ml, uid: u-train-0, creationTimestamp: "2026-01-01T00:00:01Z"}
  spec:
    containers:
    - name: c
      resources: {requests: {cpu: "1", example.com/gpu: "1"}, limits: {example.com/gpu: "1"}}
- apiVersion: v1
  kind: Pod
  metadata: {name: train-1, namespace: ml, uid: u-train-1, creationTimestamp: "2026-01-01T00:00:02Z"}
  spec:
    containers:
    - name: c
      resources: {requests: {cpu: "1", example.com/gpu: "1"}, limits: {example.com/gpu: "1"}}
- apiVersion: v1
  kind: Pod
  metadata: {name: web-0, namespace: default, uid: u-web-0, creationTimestamp: "2026-01-01T00:00:03Z"}
  spec:
    containers:
    - name: c
      resources: {requests: {cpu: "1"}}
"""

CONFIG = """
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
extenders:
- urlPrefix: {url}
  filterVerb: filter
  prioritizeVerb: prioritize
  preemptVerb: preempt
  weight: 2
  nodeCacheCapable: true
  httpTimeout: 2s
  managedResources:
  - name: example.com/gpu
    ignoredByScheduler: true
"""


def gpu_nodes_only(pod: Any, node: str) -> str:
    if pod["metadata"]["name"] == "train-1":
        return UNSCHEDULABLE  # no GPU left anywhere for this one
    return OK if node.startswith("gpu-") else UNSCHEDULABLE


def simulate(cluster: Path, config: Path) -> subprocess.CompletedProcess[str]:
    files = ["--cluster", str(cluster), "--config", str(config)]
    return subprocess.run(
        [sys.executable, "-m", "ksched.cli", "simulate", *files, "--output", "json", "--seed", "1"],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )


def test_simulate_reports_extender_rejections_and_scores(server: ExtenderServer, tmp_path: Path) -> None:
    fake = FakeExtender(
        predicates=[gpu_nodes_only], prioritizers=[(favour("gpu-2"), 1)], node_cache_capable=True
    )
    url = server.serve("gpu", fake)
    (tmp_path / "cluster.yaml").write_text(CLUSTER)
    (tmp_path / "config.yaml").write_text(CONFIG.replace("{url}", url))

    out = simulate(tmp_path / "cluster.yaml", tmp_path / "config.yaml")

    assert out.returncode == 0, out.stderr
    pods = {p["pod"]: p for p in json.loads(out.stdout)["pods"]}
    train0, train1, web0 = pods["ml/train-0"], pods["ml/train-1"], pods["default/web-0"]
    # the extender kept the GPU nodes and prefers gpu-2: 10 * weight 2 * (100 / 10)
    assert train0["node"] == "gpu-2"
    assert train0["filter"] == {
        "cpu-1": {"plugin": "Extender", "extender": url, "reasons": ['FakeExtender: node "cpu-1" failed']}
    }
    assert train0["scores"]["gpu-2"][url] == 200
    assert train0["scores"]["gpu-1"][url] == 20
    assert train0["totals"]["gpu-2"] - train0["totals"]["gpu-1"] >= 180
    # rejected everywhere: the FailedScheduling message carries the extender's reasons
    assert train1["node"] is None
    assert train1["message"].startswith(
        '0/3 nodes are available: 1 FakeExtender: node "cpu-1" failed, 1 FakeExtender: node "gpu-1" failed, '
        '1 FakeExtender: node "gpu-2" failed.'
    )
    assert {entry["plugin"] for entry in train1["filter"].values()} == {"Extender"}
    # the plain pod requests no managed resource: the extender never sees it
    assert web0["node"] is not None
    assert not any(url in scores for scores in web0["scores"].values())
    seen = {r.body["Pod"]["metadata"]["name"] for r in server.requests}
    assert seen == {"train-0", "train-1"}
    assert {r.path for r in server.requests} == {"/gpu/filter", "/gpu/prioritize"}


def test_simulate_fails_the_pod_when_a_required_extender_is_down(tmp_path: Path) -> None:
    (tmp_path / "cluster.yaml").write_text(CLUSTER)
    (tmp_path / "config.yaml").write_text(CONFIG.replace("{url}", "http://127.0.0.1:9/gpu"))

    out = simulate(tmp_path / "cluster.yaml", tmp_path / "config.yaml")

    assert out.returncode == 0, out.stderr
    pods = {p["pod"]: p for p in json.loads(out.stdout)["pods"]}
    assert pods["ml/train-0"]["node"] is None
    assert pods["ml/train-0"]["error"].startswith('Post "http://127.0.0.1:9/gpu/filter"')
    assert pods["default/web-0"]["node"] is not None  # not interested: scheduled as usual


def test_simulate_refuses_unusable_tls_settings(tmp_path: Path) -> None:
    (tmp_path / "cluster.yaml").write_text(CLUSTER)
    config = (
        CONFIG.replace("{url}", "https://127.0.0.1:9/gpu") + "  tlsConfig: {insecure: true, caFile: /x}\n"
    )
    (tmp_path / "config.yaml").write_text(config)

    out = simulate(tmp_path / "cluster.yaml", tmp_path / "config.yaml")

    assert out.returncode == 2
    assert "couldn't build extenders" in out.stderr
