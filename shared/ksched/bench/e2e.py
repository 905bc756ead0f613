"""End-to-end throughput: pods created in kubesim, bound by informer → queue → scheduler(s) →
binder(s), each a separate process. Reports pods/s, creation-to-bound p50/p99, CPU per process
(nats-server and kubesim included), CPU per bound pod, the single-leader ceiling, NATS messages and
bytes per pod by client (``nats_per_pod``), and the median of each hop from creation to binding
(``hops``, from the pods' trace events: :mod:`ksched.bench.hops`).

The CPU is read once the binders have also written what each binding owes the API (the pod's
Scheduled event): those writes run behind the bindings, and a figure read at the last binding would
leave out the ones still queued (``api_writes_lag_seconds`` says how far behind they were)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec

from ksched.aio import cancel_and_wait
from ksched.bench import hops, natsstat, procstat, shapes
from ksched.bus.connect import connect
from ksched.bus.subjects import Subjects
from ksched.client.config import api_client
from ksched.client.rest import Client
from ksched.launcher.stack import Stack, StackOptions

log = logging.getLogger(__name__)

NAMESPACE = "bench"


class _Meta(msgspec.Struct, rename="camel"):
    name: str = ""
    resource_version: str = ""


class _Spec(msgspec.Struct, rename="camel"):
    node_name: str = ""


class _Pod(msgspec.Struct):
    metadata: _Meta = msgspec.field(default_factory=_Meta)
    spec: _Spec = msgspec.field(default_factory=_Spec)


class PodEvent(msgspec.Struct):
    """A pod watch event, decoded only as far as the benchmarks read it (name, resourceVersion, node)."""

    type: str
    object: _Pod


async def _debug(stack: Stack, name: str) -> dict[str, Any]:
    import aiohttp

    try:
        async with aiohttp.ClientSession() as session, session.get(stack.http_url(name) + "/debug") as resp:
            result: dict[str, Any] = await resp.json(content_type=None)
            return result
    except (aiohttp.ClientError, ValueError):
        return {}


async def _api_writes_drained(stack: Stack, binders: int, timeout: float) -> float | None:
    """Wait until no binder has an API write (event) pending; the seconds it took, None past
    ``timeout``."""
    start = time.perf_counter()
    while time.perf_counter() - start < timeout:
        states = [await _debug(stack, f"binder-{i}") for i in range(binders)]
        if all(state.get("pending_api_writes", 0) == 0 for state in states):
            return round(time.perf_counter() - start, 2)
        await asyncio.sleep(0.2)
    return None


async def _watch_bound(api: Client, bound: dict[str, float], stop: asyncio.Event) -> None:
    decoder = msgspec.json.Decoder(PodEvent)
    query = [("watch", "true"), ("timeoutSeconds", 3600)]
    async with api.stream(f"/api/v1/namespaces/{NAMESPACE}/pods", query) as resp:
        async for line in resp.lines():
            ev = decoder.decode(line)
            if ev.object.spec.node_name and ev.object.metadata.name not in bound:
                bound[ev.object.metadata.name] = time.perf_counter()
            if stop.is_set():
                return


@dataclass(frozen=True)
class Settings:
    nodes: int = 5000
    pods: int = 10000
    schedulers: int = 1
    binders: int = 1
    workers: int = 64
    shape: str = "plain"
    tls: bool = True
    """kubesim serves HTTPS, as a real API server does (the informer's watch pays for TLS)."""
    rate: float = 0.0
    """Pods created per second (0: as fast as 64 concurrent clients can). A steady rate compares
    shapes or trees at the same load: the leaders' cost per pod falls as the rate rises."""


async def _hops(
    stack: Stack, created: dict[str, float], bound: dict[str, float]
) -> dict[str, dict[str, float]]:
    """:func:`ksched.bench.hops.breakdown` of the run ({} when the trace stream cannot be read)."""
    await asyncio.sleep(0.5)  # the services' last trace flush (every 0.2 s)
    wall = time.time() - time.perf_counter()  # created and bound are perf_counter times
    try:
        bus = await connect(stack.nats_urls, name="bench-hops", subjects=Subjects(stack.options.prefix))
    except Exception:
        return {}
    try:
        events = await hops.trace_events(bus)
    except Exception as exc:
        log.warning("bench: trace events not read (%s); no hops", exc)
        return {}
    finally:
        await bus.close()
    return hops.breakdown(
        events,
        NAMESPACE,
        {name: t + wall for name, t in created.items()},
        {name: t + wall for name, t in bound.items()},
    )


def _pids(stack: Stack) -> dict[str, int | None]:
    """The pid of every process of the stack, nats-server included."""
    pids = {name: p.pid for name, p in stack.procs.items()}
    pids["nats-server"] = stack.nats.pid
    return pids


async def _restart_exited(stack: Stack, restarts: dict[str, int]) -> None:
    """Start again a service that exited (see :meth:`Stack.restart_exited`), counted in the report."""
    for name in stack.exited():
        log.warning("bench: %s exited (%s); restarting it", name, stack.procs[name].process)
    for name in await stack.restart_exited():
        restarts[name] = restarts.get(name, 0) + 1


async def measure(s: Settings) -> dict[str, Any]:
    """Start a stack, create ``s.pods`` pods, wait until they are bound, report (see the module)."""
    workdir = Path(tempfile.mkdtemp(prefix="ksched-bench-"))
    stack = Stack(
        StackOptions(
            workdir=workdir,
            nodes=s.nodes,
            schedulers=s.schedulers,
            binders=s.binders,
            binder_workers=s.workers,
            pod_start_delay=3600,
            log_level="WARNING",
            kubesim_tls=s.tls,
            nats_monitoring=True,
        )
    )
    await stack.start(timeout=180)
    api = await api_client(stack.kubeconfig, component="ksched-bench")
    try:
        await api.request(
            "POST",
            "/api/v1/namespaces",
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}},
        )
        bound: dict[str, float] = {}
        created: dict[str, float] = {}
        stop = asyncio.Event()
        watcher = asyncio.create_task(_watch_bound(api, bound, stop))
        await asyncio.sleep(0.5)
        meter = procstat.CpuMeter(lambda: _pids(stack))
        meter.start()
        monitor = stack.nats_monitor_url
        assert monitor is not None
        nats_before = await natsstat.connection_counts(monitor)
        restarts: dict[str, int] = {}

        async def supervise() -> None:
            while True:
                await asyncio.sleep(0.2)
                meter.sample()
                await _restart_exited(stack, restarts)

        supervisor = asyncio.create_task(supervise(), name="bench-supervisor")
        sem = asyncio.Semaphore(64)

        async def create(i: int) -> None:
            body = shapes.pod(s.shape, f"bench-{i:06d}", NAMESPACE)
            if s.rate > 0:  # pod i is due i/rate seconds after the start
                await asyncio.sleep(max(0.0, start + i / s.rate - time.perf_counter()))
            async with sem:
                await api.request("POST", f"/api/v1/namespaces/{NAMESPACE}/pods", body, timeout=None)
                created[body["metadata"]["name"]] = time.perf_counter()

        start = time.perf_counter()
        await asyncio.gather(*(create(i) for i in range(s.pods)))
        deadline = time.perf_counter() + max(120.0, s.pods / 50)
        while len(bound) < s.pods and time.perf_counter() < deadline:
            await asyncio.sleep(0.2)
        end = max(bound.values()) if bound else time.perf_counter()
        writes_lag = await _api_writes_drained(stack, s.binders, timeout=300.0)
        stop.set()
        for task in (watcher, supervisor):
            with contextlib.suppress(Exception):
                await cancel_and_wait(task)
        cpu = meter.sample()
        nats_after = await natsstat.connection_counts(monitor)
        rss = {name: procstat.rss_mib(p.pid) for name, p in stack.procs.items()}
        rss["nats-server"] = procstat.rss_mib(stack.nats.pid)
        ms_per_pod = procstat.per_pod(cpu, len(bound))
        replica = await _debug(stack, "scheduler-0")
        latencies = sorted(bound[n] - created[n] for n in bound if n in created)
        hop_times = await _hops(stack, created, bound)
        elapsed = end - start
        return {
            "nodes": s.nodes,
            "pods": s.pods,
            "shape": s.shape,
            "tls": s.tls,
            "rate": s.rate,
            "bound": len(bound),
            "schedulers": s.schedulers,
            "binders": s.binders,
            "seconds": round(elapsed, 2),
            "pods_per_second": round(len(bound) / elapsed, 1) if elapsed > 0 else 0.0,
            "p50_ms": round(latencies[len(latencies) // 2] * 1000, 1) if latencies else None,
            "p99_ms": round(latencies[int(len(latencies) * 0.99)] * 1000, 1) if latencies else None,
            "cpu_seconds": cpu,
            "cpu_ms_per_pod": ms_per_pod,
            "restarts": restarts,
            "api_writes_lag_seconds": writes_lag,
            "ceiling_pods_per_second": procstat.ceiling(ms_per_pod),
            "nats_per_pod": natsstat.per_pod(nats_before, nats_after, len(bound)),
            "rss_mib": rss,
            "replica_bootstrap_seconds": replica.get("bootstrap_seconds"),
            "replica_delta_lag_ms": replica.get("delta_lag_ms"),
            "hops": hop_times,
        }
    finally:
        await api.close()
        await stack.stop()


def run(settings: Settings) -> dict[str, Any]:
    return asyncio.run(measure(settings))
