"""The sample cluster shipped in examples/ simulates to the documented decisions and JSON shape."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from ksched.simulate.cli import main

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "cluster.yaml"
DRA_EXAMPLE = EXAMPLE.with_name("dra-cluster.yaml")
EXTENDED_EXAMPLE = EXAMPLE.with_name("dra-extended-cluster.yaml")


def simulate(*args: str, cluster: Path = EXAMPLE) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ksched.cli", "simulate", "--cluster", str(cluster), *args],
        capture_output=True,
        text=True,
        check=False,
    )


def test_example_cluster_json() -> None:
    out = simulate("--output", "json", "--seed", "1")
    assert out.returncode == 0, out.stderr
    pods = {p["pod"]: p for p in json.loads(out.stdout)["pods"]}
    assert {k: v["node"] for k, v in pods.items()} == {
        "default/web-1": "node-b1",
        "default/trainer": "node-c1",
        "default/db-1": "node-a1",
        "default/too-big": None,
        "default/gated": None,
    }
    assert pods["default/web-1"]["filter"]["node-a1"] == {
        "plugin": "PodTopologySpread",
        "reasons": ["node(s) didn't match pod topology spread constraints"],
    }
    assert pods["default/too-big"]["message"] == (
        "0/4 nodes are available: 1 Insufficient memory, 1 node(s) had untolerated taint(s), "
        "1 node(s) were unschedulable, 2 Insufficient cpu. no new claims to deallocate, preemption: "
        "0/4 nodes are available: 4 Preemption is not helpful for scheduling."
    )
    assert pods["default/gated"]["gatedBy"] == "SchedulingGates"
    assert all(p["claims"] == {} for p in pods.values())


def test_dra_example_allocates_claims_in_queue_order() -> None:
    """Each placed pod's claims are allocated before the next pod is scheduled; the last one finds
    no two free GPUs left."""
    out = simulate("--output", "json", "--seed", "1", cluster=DRA_EXAMPLE)
    assert out.returncode == 0, out.stderr
    pods = {p["pod"]: p for p in json.loads(out.stdout)["pods"]}
    gpu = "gpu.example.com"
    assert pods["default/trainer"]["claims"] == {
        "default/two-gpus": {"node": "gpu-1", "devices": [f"{gpu}/gpu-1/gpu-0", f"{gpu}/gpu-1/gpu-1"]}
    }
    assert pods["default/notebook"]["claims"] == {
        "default/any-gpu": {"node": "gpu-2", "devices": [f"{gpu}/gpu-2/gpu-0"]}
    }
    assert pods["default/greedy"]["node"] is None and pods["default/greedy"]["claims"] == {}
    assert pods["default/greedy"]["message"] == (
        "0/2 nodes are available: 2 cannot allocate all claims. still not schedulable, preemption: "
        "0/2 nodes are available: 2 Preemption is not helpful for scheduling."
    )
    table = simulate(cluster=DRA_EXAMPLE).stdout
    row = next(line for line in table.splitlines() if "default/two-gpus" in line)
    assert row.split(None, 1) == ["default/two-gpus", f"{gpu}/gpu-1/gpu-0, {gpu}/gpu-1/gpu-1"]


def test_dra_extended_example_creates_a_claim_per_pod() -> None:
    """DRAExtendedResource: NodeResourcesFit leaves example.com/gpu to DynamicResources, which
    allocates one GPU per pod in the claim PreBind creates (named as the API server would)."""
    out = simulate("--output", "json", "--seed", "1", cluster=EXTENDED_EXAMPLE)
    assert out.returncode == 0, out.stderr
    pods = {p["pod"]: p for p in json.loads(out.stdout)["pods"]}
    taken = []
    for name in ("render-1", "render-2"):
        pod = pods[f"default/{name}"]
        assert pod["node"] == "gpu-node"
        [(claim, summary)] = pod["claims"].items()
        assert claim.startswith(f"default/{name}-extended-resources-") and len(claim.rsplit("-", 1)[1]) == 5
        assert summary["node"] == "gpu-node"
        taken += summary["devices"]
    assert sorted(taken) == ["gpu.example.com/gpu-node/gpu-0", "gpu.example.com/gpu-node/gpu-1"]
    last = pods["default/render-3"]
    assert last["node"] is None and last["claims"] == {}
    assert last["message"] == (
        "0/2 nodes are available: 2 cannot allocate all claims. still not schedulable, preemption: "
        "0/2 nodes are available: 2 Preemption is not helpful for scheduling."
    )


def test_bad_input_names_the_object_and_field(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: ns}\nspec: {priority: high}\n")
    out = subprocess.run(
        [sys.executable, "-m", "ksched.cli", "simulate", "--cluster", str(bad)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert out.returncode == 2
    assert "Pod ns/p" in out.stderr and "spec.priority" in out.stderr


NODE = "apiVersion: v1\nkind: Node\nmetadata: {name: n}\n"
POD = "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: ns}\n"
BAD_CPU = "containers: [{name: c, resources: {requests: {cpu: lots}}}]"


@pytest.mark.parametrize(
    ("cluster", "named"),
    [
        ("apiVersion: v1\nkind: Node\nmetadata: {name: n}\nstatus: {allocatable: {cpu: lots}}\n", "Node n"),
        (f"{NODE}---\n{POD}spec: {{nodeName: n, {BAD_CPU}}}\n", "Pod ns/p"),
        (f"{NODE}---\n{POD}spec: {{{BAD_CPU}}}\n", "Pod ns/p"),
    ],
    ids=["node", "bound-pod", "pending-pod"],
)
def test_a_quantity_that_does_not_parse_names_the_object(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], cluster: str, named: str
) -> None:
    """Found by tests/fuzz/test_simulate_files.py: the QuantityError escaped as a traceback."""
    path = tmp_path / "cluster.yaml"
    path.write_text(cluster)
    assert main(["--cluster", str(path)]) == 2
    err = capsys.readouterr().err
    assert f"{named}: invalid quantity 'lots'" in err, err


def test_an_object_without_a_name_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Found by tests/fuzz/test_simulate_files.py: a node without metadata.name was a node called ""
    that pods were scheduled on, and placing one raised out of the simulation."""
    path = tmp_path / "cluster.yaml"
    path.write_text("apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: Node, status: {}}\n")
    assert main(["--cluster", str(path)]) == 2
    err = capsys.readouterr().err
    assert "document 1 items[0]: Node <unnamed>: metadata.name: Required value" in err, err
