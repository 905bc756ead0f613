"""In-process scheduling cycles per second: the default profile over a synthetic cluster, pods with
requests only, each placement assumed before the next (upstream scheduler_perf SchedulingBasic)."""

from __future__ import annotations

import random
import time
from dataclasses import asdict, dataclass

from ksched.config import default_config
from ksched.config.profile import build_frameworks
from ksched.framework.algorithm import ScheduleAlgorithm
from ksched.framework.cycle_state import CycleState
from ksched.framework.podinfo import PodInfo
from ksched.framework.snapshot import Snapshot, with_node_name
from ksched.framework.testing import make_node, make_pod

ZONES = ("zone-a", "zone-b", "zone-c")


@dataclass
class CycleResult:
    nodes: int
    pods: int
    existing_pods: int
    seconds: float
    pods_per_second: float
    p50_ms: float
    p99_ms: float
    scheduled: int


def synthetic_snapshot(nodes: int, existing: int, seed: int = 1) -> Snapshot:
    snap = Snapshot()
    for i in range(nodes):
        snap.upsert_node(
            make_node(
                f"node-{i:05d}",
                labels={"topology.kubernetes.io/zone": ZONES[i % 3]},
                allocatable={"cpu": "32", "memory": "128Gi", "pods": "110"},
            )
        )
    rng = random.Random(seed)
    for j in range(existing):
        node = f"node-{rng.randrange(nodes):05d}"
        snap.add_pod(make_pod(f"existing-{j}", requests={"cpu": "100m", "memory": "128Mi"}, node_name=node))
    return snap


def run(nodes: int, pods: int, existing: int | None = None, seed: int = 1) -> CycleResult:
    existing = nodes // 5 if existing is None else existing
    snap = synthetic_snapshot(nodes, existing, seed)
    fw = build_frameworks(default_config(), snap)["default-scheduler"]
    alg = ScheduleAlgorithm(seed=seed)
    incoming = [
        PodInfo(make_pod(f"pod-{k}", requests={"cpu": "100m", "memory": "128Mi"})) for k in range(pods)
    ]
    latencies: list[float] = []
    scheduled = 0
    start = time.perf_counter()
    for pi in incoming:
        t0 = time.perf_counter()
        result = alg.schedule_pod(fw, CycleState(), pi)
        snap.add_pod(with_node_name(pi.pod, result.suggested_host), result.suggested_host)
        scheduled += 1
        latencies.append(time.perf_counter() - t0)
    seconds = time.perf_counter() - start
    latencies.sort()
    return CycleResult(
        nodes=nodes,
        pods=pods,
        existing_pods=existing,
        seconds=round(seconds, 3),
        pods_per_second=round(pods / seconds, 1),
        p50_ms=round(latencies[len(latencies) // 2] * 1000, 3),
        p99_ms=round(latencies[int(len(latencies) * 0.99)] * 1000, 3),
        scheduled=scheduled,
    )


def as_dict(result: CycleResult) -> dict[str, object]:
    return asdict(result)
