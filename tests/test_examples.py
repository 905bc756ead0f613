"""The sample cluster shipped in examples/ simulates to the documented decisions and JSON shape."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "cluster.yaml"
DRA_EXAMPLE = EXAMPLE.with_name("dra-cluster.yaml")


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
