"""``ksched bench chaos``: faults injected one after another, in an order drawn from a seed, while
pods are created; then the pipeline must have bound every pod exactly once and overcommitted no node.

The stack runs every service replicated (two informers and two queues under leader election with
short lease timings, two scheduler replicas, two binders), kubesim over HTTP and nats-server with
JetStream on disk, or (``nats_servers=3``) a 3-server JetStream cluster with three replicas of every
stream, where one server is also lost with its disk and replaced by an empty one later. Each fault
is repaired as Kubernetes would repair it (a killed process is started again, as the kubelet
restarts a container) and its recovery time measured: from the repair to all services ready and a
new pod bound. The report is a table and JSON (docs/ha.md "Chaos").
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import tempfile
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import msgspec
from kubernetes_asyncio import client
from kubernetes_asyncio.client import ApiClient

from ksched.aio import cancel_and_wait
from ksched.api.collections import Collection
from ksched.api.core import Event, Node, Pod
from ksched.apimachinery.quantity import milli_value, value
from ksched.launcher.stack import Stack, StackOptions
from ksched.service.kube import api_client
from ksched.service.listing import list_all

NAMESPACE = "chaos"
LEASE = {"leaseDuration": "6s", "renewDeadline": "4s", "retryPeriod": "1s"}
QUEUE_LEASE_SECONDS = 6
POD_CPU_MILLI = 100


@dataclass
class ChaosOptions:
    nodes: int = 5000
    pods: int = 20000
    seed: int = 1
    faults: Sequence[str] = ()
    """Fault names (default: every one of :data:`FAULTS`, each once), shuffled with ``seed``."""
    settle: float = 2.0
    """Seconds between one fault's recovery and the next fault."""
    recovery_timeout: float = 120.0
    bound_timeout: float = 600.0
    workdir: Path | None = None
    nats_servers: int = 1
    """1: one nats-server; 3: a JetStream cluster (deploy/'s shape), which adds ``lose-nats-server``
    and applies the other NATS faults to one server drawn with the seed."""


@dataclass
class FaultRecord:
    fault: str
    target: str
    at: float
    """Seconds from the start of the workload to the fault."""
    repaired_after: float
    """Seconds from the fault to its repair (the restart, SIGCONT ...)."""
    recovered_after: float | None
    """Seconds from the repair to every service ready and one more pod bound (None: not within the
    timeout; 0 when nothing was left to bind)."""
    bound_during: int = 0
    """Pods bound from the fault to its repair."""


@dataclass
class ChaosReport:
    seed: int
    nodes: int
    pods: int
    bound: int = 0
    double_bound: int = 0
    double_bound_examples: list[str] = field(default_factory=list)
    """Up to 10 of the double-bound pods with the events that show it."""
    overcommitted_nodes: int = 0
    lost: int = 0
    """Pods neither bound nor carrying a FailedScheduling event."""
    seconds: float = 0.0
    faults: list[FaultRecord] = field(default_factory=list)
    restarts: dict[str, int] = field(default_factory=dict)
    """Services started again after they exited on their own (as their kubelet would), by name: a
    leader that lost its Lease exits with status 75 to come back as a standby."""

    @property
    def ok(self) -> bool:
        return self.double_bound == 0 and self.overcommitted_nodes == 0 and self.lost == 0

    def to_json(self) -> bytes:
        return msgspec.json.format(msgspec.json.encode({**asdict(self), "ok": self.ok}), indent=2)

    def table(self) -> str:
        rows = [
            f"{'fault':<27} {'target':<16} {'at s':>7} {'repaired s':>10} {'bound meanwhile':>15} "
            f"{'recovered s':>11}"
        ]
        for f in self.faults:
            recovered = "-" if f.recovered_after is None else f"{f.recovered_after:.1f}"
            rows.append(
                f"{f.fault:<27} {f.target:<16} {f.at:>7.1f} {f.repaired_after:>10.1f} {f.bound_during:>15} "
                f"{recovered:>11}"
            )
        rows.append("")
        if self.restarts:
            restarted = ", ".join(f"{name} {count}" for name, count in sorted(self.restarts.items()))
            rows.append(f"exited on their own and restarted: {restarted}")
        rows.append(
            f"pods {self.pods}, bound {self.bound}, double-bound {self.double_bound}, overcommitted nodes "
            f"{self.overcommitted_nodes}, lost {self.lost}; {self.seconds:.0f} s, seed {self.seed}: "
            + ("OK" if self.ok else "FAILED")
        )
        return "\n".join(rows) + "\n"


# --- faults -----------------------------------------------------------------------------------------

Fault = Callable[[Stack, ApiClient, random.Random], Awaitable[str]]


async def _holder(api: ApiClient, service: str) -> str:
    """The process name (its ``--id``) holding ``service``'s Lease; identities are ``<id>_<random>``."""
    lease = await client.CoordinationV1Api(api).read_namespaced_lease(f"ksched-{service}", "kube-system")
    identity: str = lease.spec.holder_identity or ""
    return identity.rsplit("_", 1)[0]


def _kill(service: str, leader: bool) -> Fault:
    async def fault(stack: Stack, api: ApiClient, rng: random.Random) -> str:
        holder = await _holder(api, service)
        names = [n for n in stack.procs if n.startswith(f"{service}-")]
        running = [n for n in names if stack.procs[n].running] or names
        candidates = [n for n in running if (n == holder) == leader] or running
        name = rng.choice(candidates)
        await stack.kill(name)
        await stack.restart(name)
        return name

    return fault


def _kill_replica(service: str) -> Fault:
    async def fault(stack: Stack, api: ApiClient, rng: random.Random) -> str:
        name = rng.choice(stack.replicas(service))
        await stack.kill(name)
        await stack.restart(name)
        return name

    return fault


def _nats_server(stack: Stack, rng: random.Random) -> tuple[str, int]:
    """``nats-server``, or one server of a cluster drawn with ``rng`` (name, index)."""
    if stack.cluster is None:
        return "nats-server", 0
    index = rng.randrange(stack.cluster.size)
    return f"nats-server-{index}", index


async def _restart_nats(stack: Stack, api: ApiClient, rng: random.Random) -> str:
    name, index = _nats_server(stack, rng)
    await stack.restart_nats(index=index)
    return name


async def _pause_nats(stack: Stack, api: ApiClient, rng: random.Random) -> str:
    name, _ = _nats_server(stack, rng)
    await stack.pause(name, 5.0)
    return name


async def _lose_nats(stack: Stack, api: ApiClient, rng: random.Random) -> str:
    """SIGKILL one server of the cluster and delete its store; it stays lost until the next chunk of
    pods was created and scheduled on the other two (:data:`FOLLOW_UPS` replaces it then)."""
    if stack.cluster is None:
        raise ValueError("lose-nats-server needs a NATS cluster (--nats-servers 3)")
    name, index = _nats_server(stack, rng)
    await stack.cluster.lose(index)
    return name


async def _replace_nats(stack: Stack, target: str) -> None:
    """A new server in the lost one's place: same name and ports, an empty store to catch up."""
    assert stack.cluster is not None
    await stack.cluster.start_server(int(target.rpartition("-")[2]))


async def _pause_scheduler(stack: Stack, api: ApiClient, rng: random.Random) -> str:
    name = rng.choice(stack.replicas("scheduler"))
    await stack.pause(name, QUEUE_LEASE_SECONDS + 3.0)  # past the queue's lease on its popped pods
    return name


async def _restart_kubesim(stack: Stack, api: ApiClient, rng: random.Random) -> str:
    stack.hang_up("kubesim")
    await asyncio.sleep(1.5)  # kubesim's --restart-downtime (1 s) and its start
    return "kubesim"


FAULTS: dict[str, Fault] = {
    "kill-informer-leader": _kill("informer", leader=True),
    "kill-informer-standby": _kill("informer", leader=False),
    "kill-queue-leader": _kill("queue", leader=True),
    "kill-queue-standby": _kill("queue", leader=False),
    "kill-scheduler": _kill_replica("scheduler"),
    "kill-binder": _kill_replica("binder"),
    "restart-nats-server": _restart_nats,
    "pause-nats-server": _pause_nats,
    "pause-scheduler-past-lease": _pause_scheduler,
    "restart-kubesim": _restart_kubesim,
    "lose-nats-server": _lose_nats,
}

CLUSTER_ONLY = frozenset({"lose-nats-server"})
"""Faults that need ``nats_servers`` > 1."""

FollowUp = Callable[[Stack, str], Awaitable[None]]
FOLLOW_UPS: dict[str, tuple[str, FollowUp]] = {"lose-nats-server": ("replace-nats-server", _replace_nats)}
"""A fault whose damage stays through the next chunk of pods, and what ends it then (recorded as a
fault of its own, with the same target)."""


def default_faults(nats_servers: int) -> list[str]:
    """Every fault that applies to a stack with ``nats_servers`` NATS servers."""
    return [name for name in FAULTS if nats_servers > 1 or name not in CLUSTER_ONLY]


# --- the run ----------------------------------------------------------------------------------------


def _pod(i: int) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": f"c-{i:05d}", "namespace": NAMESPACE},
        "spec": {
            "containers": [
                {
                    "name": "c",
                    "image": "pause",
                    "resources": {"requests": {"cpu": f"{POD_CPU_MILLI}m", "memory": "64Mi"}},
                }
            ]
        },
    }


async def _create(api: ApiClient, pods: Sequence[dict[str, Any]], concurrency: int = 32) -> None:
    """Create ``pods``, retrying each through API errors and kubesim restarts."""
    queue = list(pods)
    path = f"/api/v1/namespaces/{NAMESPACE}/pods"

    async def worker() -> None:
        while queue:
            body = queue.pop()
            for attempt in range(100):
                try:
                    await api.call_api(path, "POST", body=body, auth_settings=["BearerToken"])
                    break
                except Exception as exc:  # connection refused while kubesim restarts, 409 after a retry
                    if getattr(exc, "status", None) == 409:
                        break
                    await asyncio.sleep(min(0.1 * (attempt + 1), 1.0))

    await asyncio.gather(*(worker() for _ in range(concurrency)))


PODS = Collection("Pod", f"/api/v1/namespaces/{NAMESPACE}/pods", Pod)
EVENTS = Collection("Event", f"/apis/events.k8s.io/v1/namespaces/{NAMESPACE}/events", Event)


async def _bound(api: ApiClient) -> int:
    for attempt in range(50):
        try:
            pods, _ = await list_all(api, PODS, Pod, page_size=5000)
            return sum(1 for p in pods if p.spec.node_name)
        except Exception:  # kubesim restarting
            await asyncio.sleep(0.2 * (attempt + 1))
    raise RuntimeError("cannot list pods")


async def _all_ready(stack: Stack) -> bool:
    async with aiohttp.ClientSession() as session:
        for proc in stack.procs.values():
            if not proc.running or not proc.http_port:
                continue
            with contextlib.suppress(aiohttp.ClientError, asyncio.TimeoutError):
                async with session.get(
                    stack.http_url(proc.name) + "/readyz", timeout=aiohttp.ClientTimeout(total=2)
                ) as r:
                    if r.status == 200:
                        continue
            return False
    return True


async def _recovery(stack: Stack, api: ApiClient, created: int, timeout: float) -> float | None:
    """Seconds until every service is ready and one more pod is bound (or all ``created`` are)."""
    start = time.monotonic()
    baseline = await _bound(api)
    while time.monotonic() - start < timeout:
        if await _all_ready(stack):
            bound = await _bound(api)
            if bound > baseline or bound >= created:
                return time.monotonic() - start
        await asyncio.sleep(0.25)
    return None


async def _verify(api: ApiClient, report: ChaosReport) -> None:
    pods, _ = await list_all(api, PODS, Pod, page_size=5000)
    nodes, _ = await list_all(api, Collection("Node", "/api/v1/nodes", Node), Node, page_size=5000)
    events, _ = await list_all(api, EVENTS, dict[str, Any], page_size=5000)
    report.bound = sum(1 for p in pods if p.spec.node_name)
    doubled = double_bound(events)
    report.double_bound = len(doubled)
    report.double_bound_examples = [
        f"{e['regarding']['name']}: {e.get('reason')} {e.get('note')}"
        for e in events
        if e["regarding"]["name"] in sorted(doubled)[:10]
    ]
    failed = {e["regarding"]["name"] for e in events if e.get("reason") == "FailedScheduling"}
    report.lost = sum(1 for p in pods if not p.spec.node_name and p.metadata.name not in failed)
    report.lost += report.pods - len(pods)  # a pod that vanished is lost too
    per_node: dict[str, tuple[int, int]] = {}
    for p in pods:
        if p.spec.node_name:
            cpu, count = per_node.get(p.spec.node_name, (0, 0))
            per_node[p.spec.node_name] = (cpu + POD_CPU_MILLI, count + 1)
    allocatable = {n.metadata.name: n.status.allocatable for n in nodes}
    report.overcommitted_nodes = sum(
        1
        for name, (cpu, count) in per_node.items()
        if cpu > milli_value(allocatable.get(name, {}).get("cpu", "0"))
        or count > value(allocatable.get(name, {}).get("pods", "0"))
    )


def double_bound(events: Sequence[dict[str, Any]]) -> set[str]:
    """Pods bound twice, from the scheduler's events.k8s.io Events: kubesim (like the API server)
    refuses a binding for a bound pod, so a second decision for another node is a FailedScheduling
    "already assigned"; a second binding to the same node would be a second Scheduled event, i.e. a
    series on the aggregated one."""
    scheduled = Counter(e["regarding"]["name"] for e in events if e.get("reason") == "Scheduled")
    out = {name for name, n in scheduled.items() if n > 1}
    out |= {e["regarding"]["name"] for e in events if e.get("reason") == "Scheduled" and e.get("series")}
    out |= {
        e["regarding"]["name"]
        for e in events
        if e.get("reason") == "FailedScheduling" and "already assigned" in (e.get("note") or "")
    }
    return out


def chosen_faults(options: ChaosOptions) -> list[str]:
    """The faults to inject (before the shuffle); ValueError naming an unknown or inapplicable one."""
    names = list(options.faults or default_faults(options.nats_servers))
    unknown = [n for n in names if n not in FAULTS]
    if unknown:
        raise ValueError(f"unknown fault(s) {', '.join(unknown)}; known: {', '.join(FAULTS)}")
    if options.nats_servers < 2 and CLUSTER_ONLY.intersection(names):
        raise ValueError(f"{', '.join(sorted(CLUSTER_ONLY.intersection(names)))} needs --nats-servers 3")
    return names


async def _followed(follow_up: FollowUp, stack: Stack, target: str) -> str:
    await follow_up(stack, target)
    return target


@dataclass
class _Injector:
    """Injects faults one at a time and records each one's repair and recovery in the report."""

    stack: Stack
    api: ApiClient
    report: ChaosReport
    options: ChaosOptions
    log: Callable[[str], None]
    started: float
    created: int = 0
    """Pods created so far."""
    lasting: list[tuple[FaultRecord, int]] = field(default_factory=list)
    """Faults of :data:`FOLLOW_UPS` not ended yet, with the pods bound when they struck."""
    lifecycle: asyncio.Lock = field(default_factory=asyncio.Lock)
    """Held by a fault and by the kubelet's restarts: one process action at a time."""

    async def kubelet(self) -> None:
        """Start again, as a kubelet would, every service that exited on its own."""
        while True:
            await asyncio.sleep(0.5)
            async with self.lifecycle:
                for name in await self.stack.restart_exited():
                    self.report.restarts[name] = self.report.restarts.get(name, 0) + 1
                    self.log(f"{name} exited on its own; restarted")

    async def inject(self, name: str, fault: Awaitable[str]) -> FaultRecord:
        """Run ``fault`` (a coroutine not started yet) and record it."""
        at = time.monotonic()
        before = await _bound(self.api)
        async with self.lifecycle:
            target = await fault
        repaired = time.monotonic()
        during = await _bound(self.api) - before
        recovered = await _recovery(self.stack, self.api, self.created, self.options.recovery_timeout)
        record = FaultRecord(name, target, at - self.started, repaired - at, recovered, during)
        self.report.faults.append(record)
        self.log(
            f"{name} ({target}): repaired after {record.repaired_after:.1f} s ({during} pods bound "
            "meanwhile), recovered after " + ("-" if recovered is None else f"{recovered:.1f} s")
        )
        if name in FOLLOW_UPS:
            self.lasting.append((record, before))
        await asyncio.sleep(self.options.settle)
        return record

    async def end_lasting(self) -> None:
        """End the lasting faults once pods created since were scheduled without what they took away;
        their record then says how long the damage lasted and how many pods were bound meanwhile."""
        while self.lasting:
            record, bound_then = self.lasting.pop(0)
            await _recovery(self.stack, self.api, self.created, self.options.recovery_timeout)
            record.bound_during = await _bound(self.api) - bound_then
            record.repaired_after = time.monotonic() - self.started - record.at
            name, follow_up = FOLLOW_UPS[record.fault]
            await self.inject(name, _followed(follow_up, self.stack, record.target))


async def run(options: ChaosOptions, log: Callable[[str], None] = print) -> ChaosReport:
    names = chosen_faults(options)
    rng = random.Random(options.seed)
    rng.shuffle(names)
    workdir = options.workdir or Path(tempfile.mkdtemp(prefix="ksched-chaos-"))
    workdir.mkdir(parents=True, exist_ok=True)
    config = workdir / "config.yaml"
    config.write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
        "leaderElection: {leaderElect: true, " + ", ".join(f"{k}: {v}" for k, v in LEASE.items()) + "}\n"
    )
    stack = Stack(
        StackOptions(
            workdir=workdir,
            nodes=options.nodes,
            config=str(config),
            informers=2,
            queues=2,
            schedulers=2,
            binders=2,
            binder_workers=16,
            pod_start_delay=3600,
            time_scale=0.01,
            queue_lease_duration=f"{QUEUE_LEASE_SECONDS}s",
            nats_servers=options.nats_servers,
        )
    )
    report = ChaosReport(options.seed, options.nodes, options.pods)
    await stack.start(timeout=180)
    try:
        api = await api_client(stack.kubeconfig, component="ksched-chaos")
        async with api:
            await api.call_api(
                "/api/v1/namespaces",
                "POST",
                body={"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}},
                auth_settings=["BearerToken"],
            )
            pods = [_pod(i) for i in range(options.pods)]
            chunks = [pods[i :: len(names) + 1] for i in range(len(names) + 1)]
            started = time.monotonic()
            injector = _Injector(stack, api, report, options, log, started)
            kubelet = asyncio.create_task(injector.kubelet(), name="chaos-kubelet")
            try:
                for name, chunk in zip(names, chunks, strict=False):
                    await _create(api, chunk)
                    injector.created += len(chunk)
                    await injector.end_lasting()  # this chunk was created without the lost server
                    await injector.inject(name, FAULTS[name](stack, api, rng))
                await _create(api, chunks[-1])
                injector.created += len(chunks[-1])
                await injector.end_lasting()
                deadline = time.monotonic() + options.bound_timeout
                while time.monotonic() < deadline and await _bound(api) < options.pods:
                    await asyncio.sleep(1.0)
            finally:
                await cancel_and_wait(kubelet)
            report.seconds = time.monotonic() - started
            await _verify(api, report)
    finally:
        await stack.stop()
    return report
