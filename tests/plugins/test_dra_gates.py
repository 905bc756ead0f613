"""The DRA feature gates through ``ksched simulate --feature-gates`` (the flag, the plugins' features
the registry hands DynamicResources and NodeResourcesFit, the allocator): one table per gate, the
same cluster with the gate on (its 1.36 default) and off, as upstream's plugin and allocator tests
have such cases (docs/dra.md, "Feature gates")."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ksched.simulate.cli import main

DRIVER = "gpu.example.com"
NODE = "n1"
CLASS = "gpu"


def node() -> dict[str, Any]:
    resources = {"cpu": "8", "memory": "16Gi", "pods": "110"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": NODE, "labels": {"kubernetes.io/hostname": NODE}},
        "status": {"allocatable": resources, "capacity": resources},
    }


def device_class(**spec: Any) -> dict[str, Any]:
    selectors = [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": CLASS, "creationTimestamp": "2026-01-01T00:00:00Z"},
        "spec": {"selectors": selectors, **spec},
    }


def resource_slice(name: str, *devices: dict[str, Any], count: int = 1, **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "driver": DRIVER,
        "nodeName": NODE,
        "pool": {"name": NODE, "generation": 1, "resourceSliceCount": count},
        **spec,
    }
    if devices:
        body["devices"] = list(devices)
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": name},
        "spec": body,
    }


def exactly(name: str = "r") -> dict[str, Any]:
    return {"name": name, "exactly": {"deviceClassName": CLASS, "allocationMode": "ExactCount", "count": 1}}


def claim(name: str, *requests: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"},
        "spec": {"devices": {"requests": list(requests or (exactly(),))}},
    }


def pod(name: str, claim_name: str | None = None, requests: dict[str, str] | None = None) -> dict[str, Any]:
    container: dict[str, Any] = {
        "name": "c",
        "image": "w:1",
        "resources": {"requests": requests or {"cpu": "1"}},
    }
    spec: dict[str, Any] = {"containers": [container]}
    if claim_name:
        container["resources"]["claims"] = [{"name": "dev"}]
        spec["resourceClaims"] = [{"name": "dev", "resourceClaimName": claim_name}]
    meta = {
        "name": name,
        "namespace": "default",
        "uid": f"uid-{name}",
        "creationTimestamp": f"2026-01-01T00:00:0{len(name) % 10}Z",
    }
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


def simulate(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    items: list[dict[str, Any]],
    gates: str,
    config: str = "",
) -> dict[str, dict[str, Any]]:
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": [node(), *items]}))
    args = ["--cluster", str(cluster), "--output", "json"]
    if config:
        path = tmp_path / "config.yaml"
        path.write_text(config)
        args += ["--config", str(path)]
    if gates:
        args += ["--feature-gates", gates]
    assert main(args) == 0
    return {p["pod"].split("/")[1]: p for p in json.loads(capsys.readouterr().out)["pods"]}


def placed(out: dict[str, dict[str, Any]]) -> dict[str, str | None]:
    return {name: p["node"] for name, p in out.items()}


# --- DRAPrioritizedList: a request with firstAvailable --------------------------------------------
PRIORITIZED = [
    device_class(),
    resource_slice("s", {"name": "gpu-0"}),
    claim("c", {"name": "r", "firstAvailable": [{"name": "a", "deviceClassName": CLASS}]}),
    pod("p", "c"),
]
PRIORITIZED_OFF_MESSAGE = (
    "0/1 nodes are available: resource claim default/c, request r: has subrequests, but the "
    "DRAPrioritizedList feature is disabled. no new claims to deallocate, preemption: 0/1 nodes are "
    "available: 1 Preemption is not helpful for scheduling."
)


@pytest.mark.parametrize(
    ("gates", "node_name", "message"),
    [
        ("", NODE, None),
        ("DRAPrioritizedList=true", NODE, None),
        ("DRAPrioritizedList=false", None, PRIORITIZED_OFF_MESSAGE),
    ],
)
def test_prioritized_list(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], gates: str, node_name: str | None, message: str | None
) -> None:
    out = simulate(tmp_path, capsys, PRIORITIZED, gates)["p"]
    assert (out["node"], out["message"]) == (node_name, message)


# --- DRADeviceTaints: a NoSchedule taint the request does not tolerate ---------------------------
TAINTED = [
    device_class(),
    resource_slice(
        "s", {"name": "gpu-0", "taints": [{"key": "broken", "value": "yes", "effect": "NoSchedule"}]}
    ),
    claim("c"),
    pod("p", "c"),
]


@pytest.mark.parametrize(("gates", "node_name"), [("", None), ("DRADeviceTaints=false", NODE)])
def test_device_taints(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], gates: str, node_name: str | None
) -> None:
    out = simulate(tmp_path, capsys, TAINTED, gates)["p"]
    assert out["node"] == node_name
    if node_name is None:
        assert out["filter"][NODE]["reasons"] == ["cannot allocate all claims"]


# --- DRAPartitionableDevices: a device consuming a pool's shared counters --------------------------
PARTITIONED = [
    device_class(),
    resource_slice(
        "counters", count=2, sharedCounters=[{"name": "mem", "counters": {"memory": {"value": "8Gi"}}}]
    ),
    resource_slice(
        "devices",
        {
            "name": "half",
            "consumesCounters": [{"counterSet": "mem", "counters": {"memory": {"value": "4Gi"}}}],
        },
        count=2,
    ),
    claim("c"),
    pod("p", "c"),
]


@pytest.mark.parametrize(("gates", "node_name"), [("", NODE), ("DRAPartitionableDevices=false", None)])
def test_partitionable_devices(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], gates: str, node_name: str | None
) -> None:
    assert simulate(tmp_path, capsys, PARTITIONED, gates)["p"]["node"] == node_name


# --- DRAConsumableCapacity: one device allowing several allocations --------------------------------
SHARED = [
    device_class(),
    resource_slice("s", {"name": "gpu-0", "allowMultipleAllocations": True}),
    claim("c1"),
    claim("c2"),
    pod("p1", "c1"),
    pod("p2", "c2"),
]
CAPACITY_REQUEST = [
    device_class(),
    resource_slice("s", {"name": "gpu-0", "capacity": {"memory": {"value": "8Gi"}}}),
    claim(
        "c",
        {
            "name": "r",
            "exactly": {
                "deviceClassName": CLASS,
                "allocationMode": "ExactCount",
                "count": 1,
                "capacity": {"requests": {"memory": "4Gi"}},
            },
        },
    ),
    pod("p", "c"),
]


@pytest.mark.parametrize(
    ("gates", "want"),
    [("", {"p1": NODE, "p2": NODE}), ("DRAConsumableCapacity=false", {"p1": NODE, "p2": None})],
)
def test_consumable_capacity_shares_a_device(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], gates: str, want: dict[str, str | None]
) -> None:
    assert placed(simulate(tmp_path, capsys, SHARED, gates)) == want


@pytest.mark.parametrize(("gates", "node_name"), [("", NODE), ("DRAConsumableCapacity=false", None)])
def test_consumable_capacity_requests(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], gates: str, node_name: str | None
) -> None:
    out = simulate(tmp_path, capsys, CAPACITY_REQUEST, gates)["p"]
    assert out["node"] == node_name
    if node_name is None:  # the allocator's error, as upstream's stable allocator's
        assert "has capacity requests, but the DRAConsumableCapacity feature is disabled" in str(out)


# --- DRADeviceBindingConditions (+ DRAResourceClaimDeviceStatus): a device with binding conditions -
BINDING = [
    device_class(),
    resource_slice(
        "s",
        {"name": "gpu-0", "bindingConditions": ["attached"], "bindingFailureConditions": ["failed"]},
    ),
    claim("c"),
    pod("p", "c"),
]


@pytest.mark.parametrize(
    ("gates", "node_name"),
    [
        ("", NODE),
        ("DRADeviceBindingConditions=false", None),
        ("DRADeviceBindingConditions=false,DRAResourceClaimDeviceStatus=false", None),
    ],
)
def test_device_binding_conditions(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], gates: str, node_name: str | None
) -> None:
    assert simulate(tmp_path, capsys, BINDING, gates)["p"]["node"] == node_name


# --- DRAExtendedResource: an extended resource a DeviceClass backs --------------------------------
EXTENDED = [
    device_class(extendedResourceName="example.com/gpu"),
    resource_slice("s", {"name": "gpu-0"}),
    pod("p", requests={"cpu": "1", "example.com/gpu": "1"}),
]
EXTENDED_OFF_MESSAGE = (
    # the node has none of it at all: unresolvable, as upstream's Fit says of a request above allocatable
    "0/1 nodes are available: 1 Insufficient example.com/gpu. no new claims to deallocate, preemption: "
    "0/1 nodes are available: 1 Preemption is not helpful for scheduling."
)


@pytest.mark.parametrize(
    ("gates", "node_name", "message"),
    [("", NODE, None), ("DRAExtendedResource=false", None, EXTENDED_OFF_MESSAGE)],
)
def test_extended_resource(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], gates: str, node_name: str | None, message: str | None
) -> None:
    out = simulate(tmp_path, capsys, EXTENDED, gates)["p"]
    assert (out["node"], out["message"]) == (node_name, message)
    assert bool(out.get("claims")) == (node_name is not None)


# --- DRASchedulerFilterTimeout: DynamicResourcesArgs.filterTimeout --------------------------------
TIMEOUT_CONFIG = """
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- pluginConfig:
  - name: DynamicResources
    args: {filterTimeout: 1ns}
"""


@pytest.mark.parametrize(("gates", "node_name"), [("", None), ("DRASchedulerFilterTimeout=false", NODE)])
def test_scheduler_filter_timeout(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], gates: str, node_name: str | None
) -> None:
    out = simulate(
        tmp_path,
        capsys,
        [device_class(), resource_slice("s", {"name": "gpu-0"}), claim("c"), pod("p", "c")],
        gates,
        TIMEOUT_CONFIG,
    )["p"]
    assert out["node"] == node_name
    if node_name is None:
        assert "timed out trying to allocate devices" in str(out)


# --- settings upstream refuses -----------------------------------------------------------------------
@pytest.mark.parametrize(
    ("gates", "error"),
    [
        (
            "DRAAdminAccess=false",
            "cannot set feature gate DRAAdminAccess to false, feature is locked to true",
        ),
        (
            "DynamicResourceAllocation=false",
            "cannot set feature gate DynamicResourceAllocation to false, feature is locked to true",
        ),
        (
            "DRAResourceClaimDeviceStatus=false",
            "DRADeviceBindingConditions is enabled, but depends on features that are disabled: "
            "[DRAResourceClaimDeviceStatus]",
        ),
    ],
)
def test_refused_settings(tmp_path: Path, capsys: pytest.CaptureFixture[str], gates: str, error: str) -> None:
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": [node()]}))
    with pytest.raises(SystemExit) as exit_:
        main(["--cluster", str(cluster), "--feature-gates", gates])
    assert exit_.value.code == 2
    assert error in capsys.readouterr().err
