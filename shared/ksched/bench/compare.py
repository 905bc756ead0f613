"""``ksched bench compare``: the real kube-scheduler 1.36.2 and ksched on the same workload, each on a
fresh real control plane (etcd and kube-apiserver 1.36.2 of ``--kube``, a folder laid out as
``../shared/kube-1.36``, started by its ``cluster.sh``).

Side ``kube_scheduler``: ``cluster.sh up --with scheduler`` (kube-scheduler with kubeadm's flags,
client QPS/burst 5000). Side ``ksched``: ``cluster.sh up`` without it, and ksched's services (informer,
queue, ``--schedulers`` scheduler and ``--binders`` binder processes, an embedded nats-server) started
by :class:`~ksched.launcher.stack.Stack` with the cluster's **admin kubeconfig** (``system:masters``;
the bench does not set up ksched's RBAC). The two sides run one after the other, never at once.

On each side: the same ``--nodes`` nodes (kubesim's synthetic shape, :func:`shapes.node`), then for
each shape the same ``--pods`` pods in namespace ``bench-<shape>`` (no ``schedulerName``: both
schedulers are the default scheduler), created by separate client processes
(:mod:`ksched.bench.creator`; a burst: ``--clients`` processes of ``--connections`` connections
each; ``--rate R``: one process sending pod ``i`` at ``i / R`` s) while this process watches the
namespace's pods. Measured over the window from the first pod created (its create response) to the
last binding seen on the watch:

* ``pods_per_second``: pods / window;
* ``cpu_ms_per_pod``: CPU of the scheduler's processes over the window per pod (kube-scheduler; for
  ksched each service process and nats-server), with ``total``; ``control_plane_cpu_ms_per_pod``:
  kube-apiserver and etcd, reported apart (common to both sides, but the load each side puts on
  them);
* ``latency_ms``: create-to-bound (from the create response in the client to the binding seen on
  the watch), ``p50``, ``p90``, ``p99``, ``max``;
* ``client``: the clients' own CPU, and how busy the busiest creator and the watch were (a figure near
  1 means the client, not the scheduler, may have set the pace).

Between shapes the pods are deleted (grace period 0) and the next shape starts on empty nodes.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import msgspec

from ksched.aio import cancel_and_wait
from ksched.bench import procstat, shapes
from ksched.bench.e2e import PodEvent
from ksched.client.config import api_client
from ksched.client.rest import Client
from ksched.launcher.controlplane import ControlPlane
from ksched.launcher.stack import Stack, StackOptions

SIDES = ("kube_scheduler", "ksched")
LABELS = {"kube_scheduler": "kube-scheduler", "ksched": "ksched"}
KSCHED_CREDENTIALS = "admin.kubeconfig (system:masters)"
BUSY = 0.8
"""A client process busier than this over its work may have been the bottleneck (warned)."""


@dataclass(frozen=True)
class Settings:
    kube: Path
    nodes: int = 2000
    pods: int = 5000
    shapes: tuple[str, ...] = ("plain",)
    rate: float = 0.0
    """Pods per second from one client; 0: a burst from ``clients`` processes."""
    schedulers: int = 1
    binders: int = 1
    binder_workers: int = 64
    clients: int = 2
    """Creating processes in a burst (one with a rate)."""
    connections: int = 16
    """Connections (requests in flight) per creating process."""
    timeout: float = 0.0
    """Seconds to wait for the last binding once every pod is created; 0: 60 + pods / 20."""
    sides_at_once: bool = False
    """Run both sides at the same time: quicker, but they share the CPU, so their figures are not
    comparable (for tests of the bench itself)."""
    workdir: Path | None = None
    """Where the clusters and ksched's logs go (a new temporary folder when None; removed after a
    run that bound every pod)."""

    @property
    def creators(self) -> int:
        return 1 if self.rate > 0 else max(1, self.clients)

    @property
    def bind_timeout(self) -> float:
        return self.timeout or 60.0 + self.pods / 20


def progress(side: str, message: str) -> None:
    print(f"[{LABELS.get(side, side)}] {message}", flush=True)


def percentiles(values: list[float], digits: int = 1) -> dict[str, float | None]:
    """Nearest-rank p50, p90, p99 and the max of ``values`` (seconds), in milliseconds rounded to
    ``digits`` (None without values)."""
    ordered = sorted(values)

    def rank(q: float) -> float | None:
        if not ordered:
            return None
        return round(ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))] * 1000, digits)

    return {"p50": rank(0.5), "p90": rank(0.9), "p99": rank(0.99), "max": rank(1.0)}


def with_total(ms_per_pod: Mapping[str, float]) -> dict[str, float]:
    return {**ms_per_pod, "total": round(sum(ms_per_pod.values()), 3)}


# --- the API -------------------------------------------------------------------------------------


async def _request(api: Client, method: str, path: str, body: Any = None, ok: tuple[int, ...] = ()) -> Any:
    status, data = await api.request(method, path, body, timeout=120.0)
    if not (200 <= status < 300 or status in ok):
        raise RuntimeError(f"{method} {path}: HTTP {status} {data[:300]!r}")
    return msgspec.json.decode(data) if data else None


async def create_nodes(api: Client, count: int, in_flight: int = 32) -> None:
    indices = iter(range(count))

    async def worker() -> None:
        for i in indices:
            await _request(api, "POST", "/api/v1/nodes", shapes.node(i))

    await asyncio.gather(*(worker() for _ in range(in_flight)))


async def create_namespace(api: Client, name: str) -> None:
    body = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
    await _request(api, "POST", "/api/v1/namespaces", body, ok=(409,))


async def pending_pods(api: Client, namespace: str) -> int:
    """Pods of ``namespace`` without a node."""
    found = await _request(api, "GET", f"/api/v1/namespaces/{namespace}/pods?fieldSelector=spec.nodeName%3D")
    return len(found.get("items") or [])


async def failed_scheduling_sample(api: Client, namespace: str) -> str | None:
    """The message of one FailedScheduling event of ``namespace`` (None when there is none)."""
    found = await _request(
        api, "GET", f"/api/v1/namespaces/{namespace}/events?fieldSelector=reason%3DFailedScheduling&limit=1"
    )
    for event in found.get("items") or []:
        name = (event.get("involvedObject") or {}).get("name", "?")
        return f"{name}: {event.get('message') or event.get('note') or ''}".strip()
    return None


async def delete_pods(api: Client, namespace: str, timeout: float = 120.0) -> None:
    """Delete every pod of ``namespace`` at once (no kubelet confirms a graceful deletion)."""
    path = f"/api/v1/namespaces/{namespace}/pods"
    await _request(api, "DELETE", path + "?gracePeriodSeconds=0")
    deadline = time.monotonic() + timeout
    while (await _request(api, "GET", path + "?limit=1")).get("items"):
        if time.monotonic() > deadline:
            raise TimeoutError(f"pods of {namespace} not deleted in {timeout:.0f} s")
        await asyncio.sleep(0.2)


# --- the watch -----------------------------------------------------------------------------------


@dataclass
class Watch:
    """The pods of a namespace, on one watch: when each was first seen and first seen bound."""

    api: Client
    namespace: str
    expected: int
    seen: set[str] = field(default_factory=set)
    bound: dict[str, float] = field(default_factory=dict)
    all_bound: asyncio.Event = field(default_factory=asyncio.Event)
    connected: asyncio.Event = field(default_factory=asyncio.Event)
    _version: str = ""

    async def run(self) -> None:
        """Watch until cancelled, resuming after the last event when the server ends the watch or
        the connection breaks."""
        decoder = msgspec.json.Decoder(PodEvent)
        while True:
            try:
                await self._watch(decoder)
            except (aiohttp.ClientError, ConnectionError, TimeoutError) as exc:
                print(f"watch of {self.namespace} broke ({exc!r}); resuming", flush=True)
                await asyncio.sleep(0.5)

    async def _watch(self, decoder: msgspec.json.Decoder[PodEvent]) -> None:
        params: list[tuple[str, Any]] = [("watch", "true"), ("timeoutSeconds", 3600)]
        if self._version:
            params.append(("resourceVersion", self._version))
        async with self.api.stream(f"/api/v1/namespaces/{self.namespace}/pods", params) as resp:
            self.connected.set()
            async for line in resp.lines():
                self._event(decoder.decode(line), now=time.monotonic())

    def _event(self, event: PodEvent, now: float) -> None:
        if event.type == "ERROR":  # resource version too old: start over (the bindings are then late)
            self._version = ""
            return
        pod = event.object
        self._version = pod.metadata.resource_version or self._version
        if event.type == "DELETED":
            return
        self.seen.add(pod.metadata.name)
        if pod.spec.node_name and pod.metadata.name not in self.bound:
            self.bound[pod.metadata.name] = now
            if len(self.bound) >= self.expected:
                self.all_bound.set()


# --- the clients ---------------------------------------------------------------------------------


@dataclass
class Creator:
    process: asyncio.subprocess.Process
    output: asyncio.Task[bytes] | None = None

    @classmethod
    async def start(cls, s: Settings, kubeconfig: Path, namespace: str, shape: str, index: int) -> Creator:
        args = ["--kubeconfig", str(kubeconfig), "--namespace", namespace, "--shape", shape]
        args += ["--pods", str(s.pods), "--first", str(index), "--step", str(s.creators)]
        args += ["--connections", str(s.connections), "--rate", str(s.rate)]
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "ksched.bench.creator",
            *args,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
        )
        return cls(process)

    async def ready(self, timeout: float = 60.0) -> None:
        assert self.process.stdout is not None
        line = await asyncio.wait_for(self.process.stdout.readline(), timeout)
        if line.strip() != b"ready":
            await self.process.wait()
            raise RuntimeError(f"a pod creator did not start (exit {self.process.returncode}): {line!r}")

    def go(self, start: float) -> None:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(f"{start!r}\n".encode())
        self.process.stdin.close()
        self.output = asyncio.create_task(self.process.stdout.read())

    async def result(self) -> dict[str, Any]:
        assert self.output is not None
        data = await self.output
        code = await self.process.wait()
        if code != 0 or not data.strip():
            raise RuntimeError(f"a pod creator exited {code}")
        result: dict[str, Any] = json.loads(data)
        return result

    def kill(self) -> None:
        if self.process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                self.process.kill()


# --- one side ------------------------------------------------------------------------------------


@dataclass
class Side:
    name: str
    settings: Settings
    plane: ControlPlane
    stack: Stack | None = None
    api: Client | None = None

    def scheduler_pids(self) -> dict[str, int | None]:
        if self.stack is None:
            return {"kube-scheduler": self.plane.pid("scheduler")}
        pids = {name: p.pid for name, p in self.stack.procs.items()}
        pids["nats-server"] = self.stack.nats.pid
        return pids

    def control_plane_pids(self) -> dict[str, int | None]:
        return {"kube-apiserver": self.plane.pid("apiserver"), "etcd": self.plane.pid("etcd")}

    async def up(self) -> None:
        s = self.settings
        started = time.monotonic()
        await asyncio.to_thread(self.plane.up)
        progress(self.name, f"control plane up in {time.monotonic() - started:.1f} s ({self.plane.dir})")
        self.api = await api_client(str(self.plane.admin_kubeconfig), component="ksched-bench")
        started = time.monotonic()
        await create_nodes(self.api, s.nodes)
        progress(self.name, f"{s.nodes} nodes created in {time.monotonic() - started:.1f} s")
        if self.name == "ksched":
            started = time.monotonic()
            self.stack = Stack(
                StackOptions(
                    workdir=self.plane.dir / "ksched",
                    kubeconfig=str(self.plane.admin_kubeconfig),
                    schedulers=s.schedulers,
                    binders=s.binders,
                    binder_workers=s.binder_workers,
                    log_level="WARNING",
                )
            )
            await self.stack.start(timeout=180)
            progress(
                self.name,
                f"services ready in {time.monotonic() - started:.1f} s "
                f"({', '.join(self.stack.procs)}, nats-server; as {KSCHED_CREDENTIALS})",
            )

    async def down(self) -> None:
        if self.stack is not None:
            await self.stack.stop()
            self.stack = None
        if self.api is not None:
            await self.api.close()
            self.api = None

    async def measure(self, shape: str) -> dict[str, Any]:
        """Create the pods of ``shape`` and wait until they are bound; the side's figures."""
        s = self.settings
        api = self.api
        assert api is not None
        namespace = f"bench-{shape}"
        await create_namespace(api, namespace)
        watch = Watch(api, namespace, s.pods)
        watching = asyncio.create_task(watch.run(), name=f"watch-{namespace}")
        creators: list[Creator] = []
        try:
            await asyncio.wait_for(watch.connected.wait(), 30)
            kubeconfig = self.plane.admin_kubeconfig
            creators = [await Creator.start(s, kubeconfig, namespace, shape, i) for i in range(s.creators)]
            for creator in creators:
                await creator.ready()
            await asyncio.sleep(1.0)  # the schedulers settle (nodes, the namespace)
            return await self._window(shape, namespace, watch, creators)
        finally:
            for creator in creators:
                creator.kill()
            with contextlib.suppress(Exception):
                await cancel_and_wait(watching)

    async def _window(
        self, shape: str, namespace: str, watch: Watch, creators: list[Creator]
    ) -> dict[str, Any]:
        s = self.settings
        api = self.api
        assert api is not None
        meter = procstat.CpuMeter(lambda: {**self.scheduler_pids(), **self.control_plane_pids()})
        meter.start()
        own_cpu = procstat.cpu_seconds(os.getpid())
        start = time.monotonic()
        for creator in creators:
            creator.go(start)
        results = await self._await_creators(creators, watch, start)
        created: dict[str, float] = {}
        for result in results:
            created.update(result["created"])
        deadline = time.monotonic() + s.bind_timeout
        last_print = time.monotonic()
        while not watch.all_bound.is_set() and time.monotonic() < deadline:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(watch.all_bound.wait(), 0.5)
            meter.sample()
            if time.monotonic() - last_print >= 5:
                last_print = time.monotonic()
                progress(self.name, f"{shape}: bound {len(watch.bound)}/{s.pods}")
        cpu = meter.sample()
        watch_cpu = procstat.cpu_seconds(os.getpid()) - own_cpu
        bound = len(watch.bound)
        first = min(created.values(), default=start)
        end = max(watch.bound.values(), default=time.monotonic())
        window = max(end - first, 1e-6)
        latencies = [max(0.0, watch.bound[n] - t) for n, t in created.items() if n in watch.bound]
        scheduler = procstat.per_pod({n: cpu[n] for n in self.scheduler_pids()}, bound)
        control = procstat.per_pod({n: cpu[n] for n in self.control_plane_pids()}, bound)
        creator_cpu = sum(r["cpu_seconds"] for r in results)
        busiest = max((r["cpu_seconds"] / max(r["seconds"], 1e-6) for r in results), default=0.0)
        out: dict[str, Any] = {
            "bound": bound,
            "seconds": round(window, 2),
            "pods_per_second": round(bound / window, 1),
            "cpu_ms_per_pod": with_total(scheduler),
            "control_plane_cpu_ms_per_pod": with_total(control),
            "latency_ms": percentiles(latencies),
            "client": {
                "creators": len(creators),
                "connections": s.connections,
                "create_seconds": round(max((r["seconds"] for r in results), default=0.0), 2),
                "create_failed": sum(r["failed"] for r in results),
                "late_ms_max": max((r["late_ms_max"] for r in results), default=0.0),
                "cpu_ms_per_pod": {
                    "create": round(creator_cpu * 1000 / max(1, s.pods), 3),
                    "watch": round(watch_cpu * 1000 / max(1, s.pods), 3),
                },
                "busy": {"creator_max": round(busiest, 2), "watch": round(watch_cpu / window, 2)},
            },
        }
        if bound < s.pods:
            out["pending"] = await pending_pods(api, namespace)
            out["failed_scheduling"] = await failed_scheduling_sample(api, namespace)
            out["create_errors"] = [e for r in results for e in r["errors"]][:5]
        progress(self.name, _summary(shape, out, s.pods))
        for what, busy in out["client"]["busy"].items():
            if busy > BUSY:
                progress(
                    self.name, f"warning: the {what} client was {busy:.0%} busy: it may have set the pace"
                )
        return out

    async def _await_creators(
        self, creators: list[Creator], watch: Watch, start: float
    ) -> list[dict[str, Any]]:
        waiting = asyncio.gather(*(c.result() for c in creators))
        last_print = time.monotonic()
        while True:
            done, _ = await asyncio.wait([waiting], timeout=0.5)
            if done:
                return list(waiting.result())
            if time.monotonic() - last_print >= 5:
                last_print = time.monotonic()
                progress(
                    self.name,
                    f"t={time.monotonic() - start:.0f} s: created ~{len(watch.seen)}/{self.settings.pods}, "
                    f"bound {len(watch.bound)}",
                )


def _summary(shape: str, out: Mapping[str, Any], pods: int) -> str:
    lat = out["latency_ms"]
    text = (
        f"{shape}: bound {out['bound']}/{pods} in {out['seconds']} s: {out['pods_per_second']} pods/s, "
        f"{out['cpu_ms_per_pod']['total']} ms CPU/pod (+{out['control_plane_cpu_ms_per_pod']['total']} "
        f"API server and etcd), latency p50 {lat['p50']} p90 {lat['p90']} p99 {lat['p99']} "
        f"max {lat['max']} ms"
    )
    if out["bound"] < pods:
        text += f"; {out.get('pending')} pending; FailedScheduling: {out.get('failed_scheduling')}"
    return text


async def run_side(
    name: str, s: Settings, workdir: Path, quiet: asyncio.Task[None] | None = None
) -> tuple[dict[str, dict[str, Any]], asyncio.Task[None]]:
    """Side ``name``'s figures per shape, and the task that stops its control plane. ``quiet``: the
    other side's control plane stopping, awaited before the first measurement (not before this
    side's own start, which it overlaps)."""
    plane = ControlPlane(
        kube=s.kube, dir=workdir / name, parts=("scheduler",) if name == "kube_scheduler" else ()
    )
    side = Side(name, s, plane)
    results: dict[str, dict[str, Any]] = {}
    try:
        await side.up()
        if quiet is not None:
            await quiet
        for i, shape in enumerate(s.shapes):
            results[shape] = await side.measure(shape)
            if i + 1 < len(s.shapes):
                assert side.api is not None
                await delete_pods(side.api, f"bench-{shape}")
                await asyncio.sleep(1.0)
    except BaseException:
        await side.down()
        await asyncio.to_thread(plane.down)
        raise
    await side.down()
    return results, asyncio.create_task(asyncio.to_thread(plane.down), name=f"down-{name}")


def parameters(s: Settings, shape: str) -> dict[str, Any]:
    return {
        "nodes": s.nodes,
        "pods": s.pods,
        "shape": shape,
        "rate": s.rate,
        "schedulers": s.schedulers,
        "binders": s.binders,
        "binder_workers": s.binder_workers,
        "clients": s.creators,
        "connections": s.connections,
        "kube": str(s.kube),
        "ksched_credentials": KSCHED_CREDENTIALS,
    }


async def compare(s: Settings) -> list[dict[str, Any]]:
    """Both sides, one after the other; one report per shape (``ok``: both bound every pod)."""
    workdir = s.workdir or Path(tempfile.mkdtemp(prefix="ksched-compare-"))
    by_side: dict[str, dict[str, dict[str, Any]]] = {}
    if s.sides_at_once:
        async with asyncio.TaskGroup() as group:
            tasks = {name: group.create_task(run_side(name, s, workdir)) for name in SIDES}
        for name, task in tasks.items():
            by_side[name], down = task.result()
            await down
    else:
        down = None
        try:
            for name in SIDES:
                by_side[name], down = await run_side(name, s, workdir, quiet=down)
        finally:
            if down is not None:
                await down
    reports = []
    for shape in s.shapes:
        report = parameters(s, shape)
        for name in SIDES:
            report[name] = by_side[name][shape]
        report["ok"] = all(report[name]["bound"] == s.pods for name in SIDES)
        reports.append(report)
    if s.workdir is None:
        if all(r["ok"] for r in reports):
            shutil.rmtree(workdir, ignore_errors=True)
        else:
            print(f"logs kept in {workdir}", flush=True)
    return reports


def main(s: Settings) -> int:
    """Run, print one JSON line per shape (the last lines); 1 when a side left pods unbound."""
    reports = asyncio.run(compare(s))
    failures = [
        f"{LABELS[name]} ({r['shape']}): {r[name]['bound']}/{s.pods} bound, "
        f"{r[name].get('pending')} pending; FailedScheduling: {r[name].get('failed_scheduling')}; "
        f"create errors: {r[name].get('create_errors')}"
        for r in reports
        for name in SIDES
        if r[name]["bound"] < s.pods
    ]
    for failure in failures:
        print(f"FAILED: {failure}", file=sys.stderr, flush=True)
    for report in reports:
        print(json.dumps(report), flush=True)
    return 1 if failures else 0
