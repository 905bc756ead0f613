"""End-to-end throughput: pods created in kubesim, bound by informer → queue → scheduler(s) →
binder(s), each a separate process. Reports pods/s, creation-to-bound p50/p99, CPU per service."""

from __future__ import annotations

import asyncio
import contextlib
import os
import tempfile
import time
from pathlib import Path
from typing import Any

import msgspec
from kubernetes_asyncio import config

from ksched.launcher.stack import Stack, StackOptions

NAMESPACE = "bench"


class _Meta(msgspec.Struct, rename="camel"):
    name: str = ""
    resource_version: str = ""


class _Spec(msgspec.Struct, rename="camel"):
    node_name: str = ""


class _Pod(msgspec.Struct):
    metadata: _Meta = msgspec.field(default_factory=_Meta)
    spec: _Spec = msgspec.field(default_factory=_Spec)


class _Event(msgspec.Struct):
    type: str
    object: _Pod


def _cpu_seconds(pid: int | None) -> float:
    if pid is None:
        return 0.0
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _rss_mib(pid: int | None) -> float:
    if pid is None:
        return 0.0
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return round(int(line.split()[1]) / 1024, 1)
    except OSError:
        pass
    return 0.0


async def _debug(stack: Stack, name: str) -> dict[str, Any]:
    import aiohttp

    try:
        async with aiohttp.ClientSession() as session, session.get(stack.http_url(name) + "/debug") as resp:
            result: dict[str, Any] = await resp.json(content_type=None)
            return result
    except (aiohttp.ClientError, ValueError):
        return {}


def _pod(i: int) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": f"bench-{i:06d}", "namespace": NAMESPACE},
        "spec": {
            "containers": [
                {
                    "name": "c",
                    "image": "registry.k8s.io/pause:3.9",
                    "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}},
                }
            ]
        },
    }


async def _watch_bound(api: Any, bound: dict[str, float], stop: asyncio.Event) -> None:
    decoder = msgspec.json.Decoder(_Event)
    resp = await api.call_api(
        f"/api/v1/namespaces/{NAMESPACE}/pods",
        "GET",
        query_params=[("watch", "true"), ("timeoutSeconds", 3600)],
        header_params={"Accept": "application/json"},
        auth_settings=["BearerToken"],
        _preload_content=False,
    )
    buffer = b""
    try:
        async for chunk in resp.content.iter_any():
            buffer += chunk
            while (end := buffer.find(b"\n")) >= 0:
                line, buffer = buffer[:end], buffer[end + 1 :]
                if not line.strip():
                    continue
                ev = decoder.decode(line)
                if ev.object.spec.node_name and ev.object.metadata.name not in bound:
                    bound[ev.object.metadata.name] = time.perf_counter()
            if stop.is_set():
                return
    finally:
        resp.release()


async def _run(nodes: int, pods: int, schedulers: int, binders: int, workers: int) -> dict[str, Any]:
    workdir = Path(tempfile.mkdtemp(prefix="ksched-bench-"))
    stack = Stack(
        StackOptions(
            workdir=workdir,
            nodes=nodes,
            schedulers=schedulers,
            binders=binders,
            binder_workers=workers,
            pod_start_delay=3600,
            log_level="WARNING",
        )
    )
    await stack.start(timeout=180)
    api = await config.new_client_from_config(config_file=stack.kubeconfig)
    try:
        await api.call_api(
            "/api/v1/namespaces",
            "POST",
            body={"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}},
            header_params={"Content-Type": "application/json"},
            auth_settings=["BearerToken"],
            _preload_content=False,
        )
        bound: dict[str, float] = {}
        created: dict[str, float] = {}
        stop = asyncio.Event()
        watcher = asyncio.create_task(_watch_bound(api, bound, stop))
        await asyncio.sleep(0.5)
        cpu_before = {name: _cpu_seconds(p.pid) for name, p in stack.procs.items()}
        sem = asyncio.Semaphore(64)

        async def create(i: int) -> None:
            body = _pod(i)
            async with sem:
                resp = await api.call_api(
                    f"/api/v1/namespaces/{NAMESPACE}/pods",
                    "POST",
                    body=body,
                    header_params={"Content-Type": "application/json"},
                    auth_settings=["BearerToken"],
                    _preload_content=False,
                )
                resp.release()
                created[body["metadata"]["name"]] = time.perf_counter()

        start = time.perf_counter()
        await asyncio.gather(*(create(i) for i in range(pods)))
        deadline = time.perf_counter() + max(120.0, pods / 50)
        while len(bound) < pods and time.perf_counter() < deadline:
            await asyncio.sleep(0.2)
        end = max(bound.values()) if bound else time.perf_counter()
        stop.set()
        watcher.cancel()
        with contextlib.suppress(BaseException):
            await watcher
        cpu = {name: round(_cpu_seconds(p.pid) - cpu_before[name], 2) for name, p in stack.procs.items()}
        rss = {name: _rss_mib(p.pid) for name, p in stack.procs.items()}
        replica = await _debug(stack, "scheduler-0")
        latencies = sorted(bound[n] - created[n] for n in bound if n in created)
        elapsed = end - start
        return {
            "nodes": nodes,
            "pods": pods,
            "bound": len(bound),
            "schedulers": schedulers,
            "binders": binders,
            "seconds": round(elapsed, 2),
            "pods_per_second": round(len(bound) / elapsed, 1) if elapsed > 0 else 0.0,
            "p50_ms": round(latencies[len(latencies) // 2] * 1000, 1) if latencies else None,
            "p99_ms": round(latencies[int(len(latencies) * 0.99)] * 1000, 1) if latencies else None,
            "cpu_seconds": cpu,
            "rss_mib": rss,
            "replica_bootstrap_seconds": replica.get("bootstrap_seconds"),
            "replica_delta_lag_ms": replica.get("delta_lag_ms"),
        }
    finally:
        await api.close()
        await stack.stop()


def run(nodes: int, pods: int, schedulers: int = 1, binders: int = 1, workers: int = 64) -> dict[str, Any]:
    return asyncio.run(_run(nodes, pods, schedulers, binders, workers))
