"""In-process scheduling of pods with ResourceClaims from a template, in the shape of upstream
scheduler_perf's ``SchedulingWithResourceClaimTemplate`` (test/integration/scheduler_perf/dra):
every node has a ResourceSlice of ``devices`` devices of driver ``test-driver.cdi.k8s.io``, the
DeviceClass ``test-class`` selects them by CEL, and each pod claims one device through the template
``test-claim-template``. ``init`` pods are placed first, then ``measure`` pods are timed.

Each pod goes through what the services do for it: its claim is generated as the resourceclaim
controller names it and recorded in the pod's status, the default profile (DynamicResources
included) schedules it, Reserve runs, and the claim as PreBind leaves it (allocated, reserved for
the pod) goes into the snapshot with the pod, as ``ksched simulate`` applies them."""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from typing import Any

import msgspec

from ksched.api.core import Pod
from ksched.api.resource import ResourceClaim
from ksched.config import default_config
from ksched.config.profile import build_frameworks
from ksched.framework.algorithm import ScheduleAlgorithm
from ksched.framework.cycle_state import CycleState
from ksched.framework.podinfo import PodInfo
from ksched.framework.runtime import Framework
from ksched.framework.snapshot import Snapshot, with_node_name
from ksched.framework.testing import make_node
from ksched.plugins.dynamicresources.testing import device, device_class, request, resource_slice

DRIVER = "test-driver.cdi.k8s.io"
CLASS = "test-class"
NAMESPACE = "test"


@dataclass
class DRAResult:
    nodes: int
    devices_per_node: int
    init_pods: int
    measured_pods: int
    seconds: float
    pods_per_second: float
    #: the process's CPU time for the measured pods: what the figure is on an idle core
    cpu_seconds: float
    pods_per_cpu_second: float
    p50_ms: float
    p99_ms: float
    scheduled: int


def _objects(nodes: int, devices: int) -> tuple[Snapshot, list[Any]]:
    snap = Snapshot()
    objects: list[Any] = [device_class(CLASS, DRIVER)]
    for i in range(nodes):
        name = f"scheduler-perf-dra-{i:04d}"
        snap.upsert_node(make_node(name, allocatable={"cpu": "4", "memory": "32Gi", "pods": "110"}))
        items = [device(f"item-{d}") for d in range(devices)]
        objects.append(resource_slice(f"{name}-{DRIVER}", name, name, DRIVER, *items))
    return snap, objects


def _pod_and_claim(k: int) -> tuple[Pod, ResourceClaim]:
    """Pod ``test-dra-<k>`` and the claim the resourceclaim controller generates for it."""
    pod_name, uid = f"test-dra-{k:06d}", f"00000000-0000-0000-0000-{k:012d}"
    claim_name = f"{pod_name}-resource-{k % 100000:05d}"
    pod = msgspec.convert(
        {
            "metadata": {"name": pod_name, "namespace": NAMESPACE, "uid": uid},
            "spec": {
                "containers": [
                    {
                        "name": "pause",
                        "image": "registry.k8s.io/pause:3.10.1",
                        "resources": {"claims": [{"name": "resource"}]},
                    }
                ],
                "resourceClaims": [{"name": "resource", "resourceClaimTemplateName": "test-claim-template"}],
            },
            "status": {"resourceClaimStatuses": [{"name": "resource", "resourceClaimName": claim_name}]},
        },
        Pod,
    )
    claim = msgspec.convert(
        {
            "kind": "ResourceClaim",
            "metadata": {
                "name": claim_name,
                "namespace": NAMESPACE,
                "uid": f"10000000-0000-0000-0000-{k:012d}",
                "resourceVersion": "1",
                "annotations": {"resource.kubernetes.io/pod-claim-name": "resource"},
                "ownerReferences": [
                    {"apiVersion": "v1", "kind": "Pod", "name": pod_name, "uid": uid, "controller": True}
                ],
            },
            "spec": {"devices": {"requests": [request("req-0", CLASS)]}},
        },
        ResourceClaim,
    )
    return pod, claim


def _place(fw: Framework, alg: ScheduleAlgorithm, snap: Snapshot, pod: Pod, claim: ResourceClaim) -> None:
    snap.objects.put(claim)
    state, pi = CycleState(), PodInfo(pod)
    result = alg.schedule_pod(fw, state, pi)
    host = result.suggested_host
    status = fw.run_reserve_plugins_reserve(state, pi, host)
    if status is not None:
        raise RuntimeError(f"Reserve failed for {pi.key}: {status.message}")
    snap.add_pod(with_node_name(pod, host))
    for pl in fw.plugins.pre_bind:
        after = getattr(pl, "objects_after_pre_bind", None)
        for obj in after(state, pi) if after is not None else ():
            snap.objects.put(obj)


def _prefill(snap: Snapshot, nodes: int, devices: int, k: int) -> None:
    """Pod ``k`` and its claim placed without scheduling: node ``k % nodes``, its next free device
    (round robin, as the default profile's spreading fills an empty cluster)."""
    pod, claim = _pod_and_claim(k)
    node = f"scheduler-perf-dra-{k % nodes:04d}"
    result = {"request": "req-0", "driver": DRIVER, "pool": node, "device": f"item-{k // nodes % devices}"}
    term = {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}
    status = {
        "allocation": {"devices": {"results": [result]}, "nodeSelector": {"nodeSelectorTerms": [term]}},
        "reservedFor": [{"resource": "pods", "name": pod.metadata.name, "uid": pod.metadata.uid}],
    }
    claim = msgspec.convert({**msgspec.to_builtins(claim), "status": status}, ResourceClaim)
    snap.objects.put(claim)
    snap.add_pod(with_node_name(pod, node))


def run(
    nodes: int = 500,
    devices: int = 10,
    init: int = 2500,
    measure: int = 2500,
    seed: int = 1,
    prefill: bool = False,
) -> DRAResult:
    """Place ``init`` pods, then time ``measure`` more (upstream 5000pods_500nodes: 500, 10, 2500,
    2500). ``prefill`` places the init pods directly (round robin) instead of scheduling them."""
    if init + measure > nodes * devices:
        raise ValueError(f"{init + measure} pods need more than the {nodes * devices} devices")
    snap, objects = _objects(nodes, devices)
    for obj in objects:
        snap.objects.put(obj)
    fw = build_frameworks(default_config(), snap)["default-scheduler"]
    alg = ScheduleAlgorithm(seed=seed)
    for k in range(init):
        if prefill:
            _prefill(snap, nodes, devices, k)
        else:
            _place(fw, alg, snap, *_pod_and_claim(k))
    latencies: list[float] = []
    cpu_start = time.process_time()
    start = time.perf_counter()
    for k in range(init, init + measure):
        pod, claim = _pod_and_claim(k)
        t0 = time.perf_counter()
        _place(fw, alg, snap, pod, claim)
        latencies.append(time.perf_counter() - t0)
    seconds = time.perf_counter() - start
    cpu = time.process_time() - cpu_start
    latencies.sort()
    taken = [
        (r.driver, r.pool, r.device)
        for c in snap.objects.resource_claims.values()
        if c.status.allocation is not None
        for r in c.status.allocation.devices.results
    ]
    if len(set(taken)) != len(taken):
        raise RuntimeError("a device was allocated twice")
    allocated = len(taken)
    return DRAResult(
        nodes=nodes,
        devices_per_node=devices,
        init_pods=init,
        measured_pods=measure,
        seconds=round(seconds, 3),
        pods_per_second=round(measure / seconds, 1),
        cpu_seconds=round(cpu, 3),
        pods_per_cpu_second=round(measure / cpu, 1),
        p50_ms=round(latencies[len(latencies) // 2] * 1000, 3),
        p99_ms=round(latencies[int(len(latencies) * 0.99)] * 1000, 3),
        scheduled=allocated - init,
    )


def as_dict(result: DRAResult) -> dict[str, object]:
    return asdict(result)
