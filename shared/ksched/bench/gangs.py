"""Gang scheduling end to end (docs/gang.md): PodGroups of pods created in kubesim and placed all or
nothing by informer → queue → scheduler(s) → binder(s), each a separate process, GenericWorkload and
GangScheduling on. Reports pods/s and, per group, the time from its creation to its last pod bound."""

from __future__ import annotations

import asyncio
import contextlib
import tempfile
import time
from pathlib import Path
from typing import Any

from ksched.aio import cancel_and_wait
from ksched.bench import procstat
from ksched.bench.e2e import NAMESPACE, _watch_bound
from ksched.client.config import api_client
from ksched.launcher.stack import Stack, StackOptions

GATES = "GenericWorkload=true,GangScheduling=true"


def _pod_group(name: str, size: int) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.k8s.io/v1alpha2",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": {"schedulingPolicy": {"gang": {"minCount": size}}},
    }


def _member(group: str, i: int) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": f"{group}-{i:02d}", "namespace": NAMESPACE},
        "spec": {
            "schedulingGroup": {"podGroupName": group},
            "containers": [
                {
                    "name": "c",
                    "image": "registry.k8s.io/pause:3.9",
                    "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}},
                }
            ],
        },
    }


def _percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(len(ordered) * q))], 3)


async def _run(groups: int, size: int, nodes: int, schedulers: int, binders: int) -> dict[str, Any]:
    workdir = Path(tempfile.mkdtemp(prefix="ksched-bench-gangs-"))
    options = StackOptions(
        workdir=workdir,
        nodes=nodes,
        schedulers=schedulers,
        binders=binders,
        pod_start_delay=3600,
        log_level="WARNING",
        feature_gates=GATES,
    )
    stack = Stack(options)
    await stack.start(timeout=180)
    api = await api_client(stack.kubeconfig, component="ksched-bench")

    async def post(path: str, body: dict[str, Any]) -> None:
        await api.request("POST", path, body, timeout=None)

    try:
        await post(
            "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}
        )
        bound: dict[str, float] = {}
        stop = asyncio.Event()
        watcher = asyncio.create_task(_watch_bound(api, bound, stop))
        await asyncio.sleep(0.5)
        cpu_before = {name: procstat.cpu_seconds(p.pid) for name, p in stack.procs.items()}
        sem = asyncio.Semaphore(64)
        created: dict[str, float] = {}
        names = [f"gang-{g:03d}" for g in range(groups)]

        async def create_group(group: str) -> None:
            async with sem:
                created[group] = time.perf_counter()
                await post(
                    f"/apis/scheduling.k8s.io/v1alpha2/namespaces/{NAMESPACE}/podgroups",
                    _pod_group(group, size),
                )
            for i in range(size):
                async with sem:
                    await post(f"/api/v1/namespaces/{NAMESPACE}/pods", _member(group, i))

        start = time.perf_counter()
        await asyncio.gather(*(create_group(g) for g in names))
        total = groups * size
        deadline = time.perf_counter() + max(120.0, total / 20)
        while len(bound) < total and time.perf_counter() < deadline:
            await asyncio.sleep(0.2)
        end = max(bound.values()) if bound else time.perf_counter()
        stop.set()
        with contextlib.suppress(Exception):
            await cancel_and_wait(watcher)
        cpu = {
            name: round(procstat.cpu_seconds(p.pid) - cpu_before[name], 2) for name, p in stack.procs.items()
        }
        per_group = {g: [t for name, t in bound.items() if name.rsplit("-", 1)[0] == g] for g in names}
        placed = [times for times in per_group.values() if len(times) == size]
        partial = [g for g, times in per_group.items() if 0 < len(times) < size]
        to_last = [max(times) - created[g] for g, times in per_group.items() if len(times) == size]
        elapsed = end - start
        return {
            "nodes": nodes,
            "groups": groups,
            "group_size": size,
            "schedulers": schedulers,
            "binders": binders,
            "bound": len(bound),
            "groups_placed": len(placed),
            "groups_partial": len(partial),
            "seconds": round(elapsed, 2),
            "pods_per_second": round(len(bound) / elapsed, 1) if elapsed > 0 else 0.0,
            "group_seconds_p50": _percentile(to_last, 0.5),
            "group_seconds_p99": _percentile(to_last, 0.99),
            "group_seconds_max": round(max(to_last), 3) if to_last else None,
            "cpu_seconds": cpu,
        }
    finally:
        await api.close()
        await stack.stop()


def run(
    groups: int = 100, size: int = 10, nodes: int = 1000, schedulers: int = 2, binders: int = 2
) -> dict[str, Any]:
    return asyncio.run(_run(groups, size, nodes, schedulers, binders))
