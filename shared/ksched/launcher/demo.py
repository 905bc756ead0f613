"""The ``make run`` demo: a realistic emulated cluster, every service as its own process, a sample
workload that exercises the default profile, live progress, and a summary. Exit 0 when the
demo behaved as expected (everything that can fit is bound; the rest has a FailedScheduling reason)."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import random
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from ksched.client.config import api_client
from ksched.client.rest import Client
from ksched.launcher.stack import UI_PORT, Stack, StackOptions

ZONES = ("zone-a", "zone-b", "zone-c")
SIZES = {"small": ("4", "16Gi"), "medium": ("8", "32Gi"), "large": ("16", "64Gi")}
GPU_DRIVER = "gpu.example.com"
GPUS_PER_NODE = 4
RESOURCE_API = "resource.k8s.io/v1"


def gpu_slice(node: str) -> dict[str, Any]:
    """The ResourceSlice a GPU driver would publish for ``node``: four 80Gi GPUs in one pool."""
    return {
        "apiVersion": RESOURCE_API,
        "kind": "ResourceSlice",
        "metadata": {"name": f"{node}-gpu"},
        "spec": {
            "driver": GPU_DRIVER,
            "nodeName": node,
            "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
            "devices": [
                {
                    "name": f"gpu-{g}",
                    "attributes": {"model": {"string": "h100"}, "index": {"int": g}},
                    "capacity": {"memory": {"value": "80Gi"}},
                }
                for g in range(GPUS_PER_NODE)
            ],
        },
    }


def gpu_claim_template() -> dict[str, Any]:
    """One GPU of the demo's DeviceClass, for pods to claim through ``resourceClaimTemplateName``."""
    return {
        "apiVersion": RESOURCE_API,
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": "one-gpu", "namespace": "demo"},
        "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu"}}]}}},
    }


def cluster_objects(nodes: int, seed: int = 7) -> list[dict[str, Any]]:
    """Nodes across three zones in three sizes, every tenth a tainted GPU node with a ResourceSlice of
    four GPUs; two priority classes; the ``gpu`` DeviceClass."""
    rng = random.Random(seed)
    items: list[dict[str, Any]] = [
        {
            "apiVersion": RESOURCE_API,
            "kind": "DeviceClass",
            "metadata": {"name": "gpu"},
            "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{GPU_DRIVER}"'}}]},
        },
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": "high"},
            "value": 1000,
        },
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": "low"},
            "value": 100,
        },
    ]
    for i in range(nodes):
        size = rng.choice(list(SIZES))
        cpu, memory = SIZES[size]
        zone = ZONES[i % len(ZONES)]
        name = f"{zone}-{size}-{i:03d}"
        labels = {
            "kubernetes.io/hostname": name,
            "topology.kubernetes.io/zone": zone,
            "node.ksched.dev/size": size,
        }
        spec: dict[str, Any] = {}
        if i % 10 == 9:
            labels["accelerator"] = "gpu"
            spec["taints"] = [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]
            items.append(gpu_slice(name))
        res = {"cpu": cpu, "memory": memory, "pods": "110"}
        items.append(
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {"name": name, "labels": labels},
                "spec": spec,
                "status": {
                    "capacity": res,
                    "allocatable": res,
                    "conditions": [{"type": "Ready", "status": "True"}],
                },
            }
        )
    return items


def _pod(name: str, app: str, cpu: str, memory: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "demo", "labels": {"app": app}},
        "spec": {
            "containers": [
                {
                    "name": app,
                    "image": f"example.com/{app}:1.0",
                    "resources": {"requests": {"cpu": cpu, "memory": memory}},
                }
            ],
            **spec,
        },
    }


def workload(scale: int) -> list[dict[str, Any]]:
    """Web pods spread across zones, low-priority batch, GPU pods, trainers claiming a GPU each (a
    ResourceClaim from the ``one-gpu`` template), spread-out API pods, and a few too big."""
    pods: list[dict[str, Any]] = []
    spread = [
        {
            "maxSkew": 1,
            "topologyKey": "topology.kubernetes.io/zone",
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": {"app": "web"}},
        }
    ]
    pods += [
        _pod(
            f"web-{i:04d}", "web", "250m", "256Mi", topologySpreadConstraints=spread, priorityClassName="high"
        )
        for i in range(6 * scale)
    ]
    pods += [
        _pod(f"batch-{i:04d}", "batch", "500m", "1Gi", priorityClassName="low") for i in range(3 * scale)
    ]
    gpu = {
        "tolerations": [{"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}],
        "nodeSelector": {"accelerator": "gpu"},
    }
    pods += [_pod(f"gpu-{i:03d}", "gpu", "1", "2Gi", **gpu) for i in range(scale // 2)]
    for i in range(scale // 4):
        trainer = _pod(
            f"trainer-{i:03d}",
            "trainer",
            "1",
            "2Gi",
            tolerations=gpu["tolerations"],
            resourceClaims=[{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}],
        )
        trainer["spec"]["containers"][0]["resources"]["claims"] = [{"name": "gpu"}]
        pods.append(trainer)
    anti = {
        "podAntiAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {
                    "weight": 100,
                    "podAffinityTerm": {
                        "topologyKey": "kubernetes.io/hostname",
                        "labelSelector": {"matchLabels": {"app": "api"}},
                    },
                }
            ]
        }
    }
    pods += [_pod(f"api-{i:03d}", "api", "500m", "512Mi", affinity=anti) for i in range(scale // 3)]
    pods += [_pod(f"too-big-{i}", "too-big", "64", "1Ti") for i in range(3)]
    return pods


async def _create_all(api: Client, pods: list[dict[str, Any]]) -> None:
    sem = asyncio.Semaphore(32)

    async def one(p: dict[str, Any]) -> None:
        async with sem:
            await api.create(f"{DEMO}/pods", p)

    await asyncio.gather(*(one(p) for p in pods))


def _unschedulable_message(pod: dict[str, Any]) -> str | None:
    for c in (pod.get("status") or {}).get("conditions") or []:
        if (
            c.get("type") == "PodScheduled"
            and c.get("status") == "False"
            and c.get("reason") == "Unschedulable"
        ):
            return str(c.get("message"))
    return None


def _node_name(pod: dict[str, Any]) -> str:
    return str(pod["spec"].get("nodeName") or "")


def _name(obj: dict[str, Any]) -> str:
    return str(obj["metadata"]["name"])


def _labels(obj: dict[str, Any]) -> dict[str, str]:
    return obj["metadata"].get("labels") or {}


async def run_demo(workdir: Path, nodes: int, scale: int, timeout: float, keep: bool = False) -> int:
    scenario = workdir / "cluster.yaml"
    scenario.write_text(yaml.safe_dump_all(cluster_objects(nodes)))
    # HTTPS: kubectl sends kubesim's bearer token only over TLS (the CA is in the kubeconfig)
    options = StackOptions(
        workdir=workdir,
        scenarios=[str(scenario)],
        pod_start_delay=0.5,
        kubesim_tls=True,
        ui=True,
        ui_port=UI_PORT,
    )
    stack = Stack(options)
    services = "informer, queue, scheduler, binder, ui"
    print(f"starting NATS, kubesim ({nodes} nodes), {services} ... (logs: {workdir})")
    await stack.start()
    print(f"watch it live: {stack.http_url('ui')}/")
    api = await api_client(stack.kubeconfig, component="ksched-demo")
    try:
        await api.create(
            "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "demo"}}
        )
        await api.create(
            "/apis/resource.k8s.io/v1/namespaces/demo/resourceclaimtemplates", gpu_claim_template()
        )
        pods = workload(scale)
        expected_unschedulable = {
            p["metadata"]["name"] for p in pods if p["metadata"]["labels"]["app"] == "too-big"
        }
        print(
            f"submitting {len(pods)} pods (web spread over zones, batch, gpu, trainers claiming a GPU, "
            "api, 3 that cannot fit)"
        )
        started = time.monotonic()
        await _create_all(api, pods)
        done_at = None
        while True:
            listing: list[dict[str, Any]] = (await api.get(f"{DEMO}/pods"))["items"] or []
            bound = sum(1 for p in listing if _node_name(p))
            unschedulable = {_name(p): m for p in listing if (m := _unschedulable_message(p))}
            pending = len(listing) - bound
            elapsed = time.monotonic() - started
            print(
                f"\r  {elapsed:5.1f}s  bound {bound:5d}  pending {pending:5d}  "
                f"unschedulable {len(unschedulable):4d}  {bound / max(elapsed, 1e-6):7.1f} pods/s",
                end="",
                flush=True,
            )
            if bound == len(pods) - len(expected_unschedulable) and expected_unschedulable <= set(
                unschedulable
            ):
                done_at = elapsed
                break
            if elapsed > timeout:
                break
            await asyncio.sleep(0.5)
        print()
        code = await _summary(api, stack, listing, expected_unschedulable, done_at, keep)
        code = max(code, await _claims_summary(api, listing))
        if keep:
            print("\nthe stack keeps running; Ctrl-C stops everything.", flush=True)
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.Event().wait()
        return code
    finally:
        await api.close()
        await stack.stop()


async def _summary(
    api: Client,
    stack: Stack,
    listing: list[dict[str, Any]],
    expected: set[str],
    done_at: float | None,
    keep: bool,
) -> int:
    nodes = (await api.get("/api/v1/nodes"))["items"] or []
    alloc = {_name(n): _cpu(n["status"]["allocatable"]["cpu"]) for n in nodes}
    used: dict[str, float] = dict.fromkeys(alloc, 0.0)
    apps_by_zone: Counter[tuple[str, str]] = Counter()
    zone_of = {_name(n): _labels(n).get("topology.kubernetes.io/zone", "") for n in nodes}
    for p in listing:
        if node := _node_name(p):
            used[node] += _cpu(p["spec"]["containers"][0]["resources"]["requests"]["cpu"])
            apps_by_zone[(_labels(p)["app"], zone_of.get(node, ""))] += 1
    utilisation = sorted(((used[n] / alloc[n] if alloc[n] else 0.0), n) for n in alloc)
    print("\nper-node cpu utilisation (requested / allocatable):")
    buckets = Counter(min(int(u * 10), 9) for u, _ in utilisation)
    for b in range(10):
        print(f"  {b * 10:3d}-{b * 10 + 9:3d}%  {'#' * min(buckets[b], 60)} {buckets[b]}")
    print("  busiest:", ", ".join(f"{n} {u:.0%}" for u, n in utilisation[-3:]))
    print(
        "\nweb pods per zone (topology spread, maxSkew 1):",
        ", ".join(f"{z} {apps_by_zone[('web', z)]}" for z in ZONES),
    )
    unsched = {_name(p): _unschedulable_message(p) for p in listing if not _node_name(p)}
    print(f"\nunschedulable pods ({len(unsched)}):")
    for name, message in sorted(unsched.items()):
        print(f"  demo/{name}: {message}")
    print("\nwhere to look next" + ("" if keep else " (rerun with --keep to keep the stack up for these):"))
    print(
        f"  {stack.http_url('ui')}/#/pod/demo/too-big-0   (the web page: nodes, queue, why a pod is pending)"
    )
    print(f"  ksched trace demo/too-big-0 --nats {stack.nats.url}   (the pod's timeline across services)")
    print(f"  kubectl --kubeconfig {stack.kubeconfig} get pods -n demo")
    for name in ("scheduler-0", "queue", "informer", "binder-0"):
        print(f"  {name:<12} {stack.http_url(name)}/metrics")
    ok = done_at is not None and set(unsched) == expected and all(unsched.values())
    print(
        f"\n{'demo OK' if ok else 'demo FAILED'}: {len(listing) - len(unsched)} pods bound"
        + (f" in {done_at:.1f}s" if done_at else "")
    )
    return 0 if ok else 1


async def _claims_summary(api: Client, listing: list[dict[str, Any]]) -> int:
    """Print the GPUs the trainers got; 1 when a device was allocated twice or a bound trainer lacks one."""
    claims = (await api.get("/apis/resource.k8s.io/v1/namespaces/demo/resourceclaims"))["items"] or []
    devices: Counter[str] = Counter()
    for claim in claims:
        allocation = (claim.get("status") or {}).get("allocation")
        for result in ((allocation or {}).get("devices") or {}).get("results") or []:
            devices[f"{result['driver']}/{result['pool']}/{result['device']}"] += 1
    twice = sorted(d for d, n in devices.items() if n > 1)
    trainers = [p for p in listing if _labels(p).get("app") == "trainer" and _node_name(p)]
    print(
        f"\nGPUs allocated through ResourceClaims: {sum(devices.values())} for {len(trainers)} bound trainers"
    )
    if twice:
        print("  allocated twice:", ", ".join(twice))
    return 1 if twice or sum(devices.values()) < len(trainers) else 0


DEMO = "/api/v1/namespaces/demo"


def _cpu(q: str) -> float:
    return float(q[:-1]) / 1000 if q.endswith("m") else float(q)


def main(argv: Sequence[str]) -> int:
    p = argparse.ArgumentParser(prog="ksched demo", description=__doc__)
    p.add_argument("--nodes", type=int, default=300)
    p.add_argument("--scale", type=int, default=100, help="workload size factor (default 100 → ~1,000 pods)")
    p.add_argument("--timeout", type=float, default=180.0)
    p.add_argument("--workdir")
    p.add_argument("--keep", action="store_true", help="keep the stack running after the summary")
    ns = p.parse_args(list(argv))
    workdir = Path(ns.workdir) if ns.workdir else Path(tempfile.mkdtemp(prefix="ksched-demo-"))
    workdir.mkdir(parents=True, exist_ok=True)
    try:
        return asyncio.run(run_demo(workdir, ns.nodes, ns.scale, ns.timeout, ns.keep))
    except KeyboardInterrupt:
        return 0
    except (RuntimeError, TimeoutError) as exc:
        print(f"\nksched demo: {exc}", file=sys.stderr)
        return 1
