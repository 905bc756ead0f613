"""``ksched bench chaos``: faults injected one after another, in an order drawn from a seed, while
pods are created; then the pipeline must have bound every pod exactly once and overcommitted no node.

The stack runs every service replicated (two informers and two queues under leader election with
short lease timings, two scheduler replicas, two binders), kubesim over HTTP and nats-server with
JetStream on disk, or (``nats_servers=3``) a 3-server JetStream cluster with three replicas of every
stream, where one server is also lost with its disk and replaced by an empty one later. Each fault
is repaired as Kubernetes would repair it (a killed process is started again, as the kubelet
restarts a container) and its recovery time measured: from the repair to all services ready and a
new pod bound. The report is a table and JSON (docs/ha.md "Chaos").

With ``kube`` (``--kube PATH``, a folder laid out as ``../shared/kube-1.36``) the API server is a real
kube-apiserver 1.36.2 with etcd, started for the run by :class:`ControlPlane`, instead of kubesim; the
services run as ``system:kube-scheduler`` (``scheduler.kubeconfig``) with deploy/'s RBAC added, so
their requests go through API Priority and Fairness like kube-scheduler's. The API server runs with
low in-flight limits (``--max-requests-inflight``, ``--max-mutating-requests-inflight``) and a short
etcd compaction interval, and four faults only a real server has join: kube-apiserver killed and
started again with the same flags, ports and etcd; etcd compacted through its own API; the API
server flooded until it answers 429; the API server stopped (SIGSTOP) for a few seconds.

Some pods carry hard constraints (a required pod anti-affinity, a DoNotSchedule topology spread
over hostnames); the final placement is checked against every one of them.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import random
import re
import ssl
import tempfile
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import msgspec

from ksched.aio import cancel_and_wait
from ksched.api.collections import NODES, Collection
from ksched.api.core import Node, Pod
from ksched.api.kinds import lookup
from ksched.apimachinery.quantity import milli_value, value
from ksched.bench import compare
from ksched.client.config import api_client
from ksched.client.pager import list_all
from ksched.client.rest import Client
from ksched.launcher.controlplane import ControlPlane
from ksched.launcher.stack import Stack, StackOptions

NAMESPACE = "chaos"
LEASE = {"leaseDuration": "6s", "renewDeadline": "4s", "retryPeriod": "1s"}
QUEUE_LEASE_SECONDS = 6
POD_CPU_MILLI = 100
HOSTNAME = "kubernetes.io/hostname"
API_PAUSE_SECONDS = 3.0
"""How long ``pause-apiserver`` stops the API server: under the renew deadline (4 s), so a leader
should ride it out."""
FLOOD_SECONDS = 5.0
FLOOD_REQUESTS = 48
"""``overload-apiserver``: this many LISTs of every pod at once, for FLOOD_SECONDS, from the same user
(and so the same priority level) as the services."""
KUBE_APISERVER_ARGS = (
    "--enable-priority-and-fairness=false --max-requests-inflight=20 --max-mutating-requests-inflight=10 "
    "--etcd-compaction-interval=15s"
)
"""The real API server's flags in a chaos run: at most 20 reads and 10 writes in flight, past them 429
at once (the plain max-in-flight filter: with API Priority and Fairness the same limits queue a
flood of one user instead), etcd compacted every 15 s (default 5 min)."""
EVENTS_SETTLE = 45.0
"""Seconds the run waits, once every pod is bound, for the Scheduled events still to come (the
binders' ack wait, 30 s, and some)."""
API_FAULTS = frozenset({"restart-apiserver", "pause-apiserver", "overload-apiserver"})
"""Faults during which the API is unavailable or refusing: a leader may lose its Lease then, as
kube-scheduler's would."""


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
    kube: Path | None = None
    """A folder laid out as ``../shared/kube-1.36``: a real etcd and kube-apiserver instead of kubesim."""
    spread_tenths: int = 1
    """Tenths of the pods spread over the hostnames (DoNotSchedule, maxSkew 1), 1 to 5 (another tenth
    has a required anti-affinity): more of them make the replicas' decisions conflict more often, so
    the informer's assume check under faults is tried harder."""


@dataclass
class LeaderExit:
    service: str
    at: float
    """Seconds from the start of the workload (when the exit was noticed)."""
    reason: str
    during: str = ""
    """The fault whose window (from it to its recovery) holds the exit, '' for none."""


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
    events_lost: int = 0
    """Pods bound from the previous fault's recovery to this one's (the Scheduled events a killed
    binder held were of pods bound just before the kill) left without a Scheduled event at the end."""


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
    api_server: str = "kubesim"
    violated: int = 0
    """Hard constraints broken by the final placement: pairs of pods of one required anti-affinity
    group on one node, and topology spread constraints whose skew exceeds maxSkew."""
    violated_examples: list[str] = field(default_factory=list)
    events_missing: int = 0
    """Bound pods without a Scheduled event."""
    binder_kills: int = 0
    leader_exits: list[LeaderExit] = field(default_factory=list)
    rejected_429: int = 0
    """Requests the real API server refused with 429 (its ``apiserver_request_total``, summed over
    its lives; the flood's own included), 0 on kubesim."""
    relists_410: int = 0
    """Relists after a 410 Gone (the informers' "too old" log lines)."""

    @property
    def events_lost_per_kill(self) -> float:
        """Scheduled events lost per kill -9 of a service (their faults' ``events_lost``), 0 without kills."""
        kills = [f for f in self.faults if f.fault.startswith("kill-")]
        return sum(f.events_lost for f in kills) / len(kills) if kills else 0.0

    @property
    def starved_leader_exits(self) -> list[LeaderExit]:
        """Leaders that stopped for not renewing while the API was up: their own work starved them. A
        renewal the API server answered with 429 (refusing it under the run's load: its in-flight
        limits) was sent and answered in time, so that leader was not starved."""
        return [
            e
            for e in self.leader_exits
            if "not renewed" in e.reason and "HTTP 429" not in e.reason and e.during not in API_FAULTS
        ]

    @property
    def ok(self) -> bool:
        return (
            self.double_bound == 0
            and self.overcommitted_nodes == 0
            and self.lost == 0
            and self.violated == 0
            and not self.starved_leader_exits
        )

    def to_json(self) -> bytes:
        body = {**asdict(self), "events_lost_per_kill": self.events_lost_per_kill, "ok": self.ok}
        return msgspec.json.format(msgspec.json.encode(body), indent=2)

    def table(self) -> str:
        rows = [
            f"{'fault':<27} {'target':<16} {'at s':>7} {'repaired s':>10} {'bound meanwhile':>15} "
            f"{'recovered s':>11} {'events lost':>11}"
        ]
        for f in self.faults:
            recovered = "-" if f.recovered_after is None else f"{f.recovered_after:.1f}"
            rows.append(
                f"{f.fault:<27} {f.target:<16} {f.at:>7.1f} {f.repaired_after:>10.1f} {f.bound_during:>15} "
                f"{recovered:>11} {f.events_lost:>11}"
            )
        rows.append("")
        if self.restarts:
            restarted = ", ".join(f"{name} {count}" for name, count in sorted(self.restarts.items()))
            rows.append(f"exited on their own and restarted: {restarted}")
        for example in self.violated_examples:
            rows.append(f"violated: {example}")
        for e in self.leader_exits:
            during = e.during or "no fault"
            rows.append(f"leader exit: {e.service} at {e.at:.1f} s (during {during}): {e.reason}")
        rows.append(
            f"API server {self.api_server}: 429 answers {self.rejected_429}, "
            f"relists after 410 {self.relists_410}; "
            f"Scheduled events missing {self.events_missing} (binder kills {self.binder_kills}; "
            f"lost per kill {self.events_lost_per_kill:.1f})"
        )
        rows.append(
            f"pods {self.pods}, bound {self.bound}, double-bound {self.double_bound}, overcommitted nodes "
            f"{self.overcommitted_nodes}, lost {self.lost}, hard constraints violated {self.violated}, "
            f"leader exits {len(self.leader_exits)} ({len(self.starved_leader_exits)} starved); "
            f"{self.seconds:.0f} s, seed {self.seed}: " + ("OK" if self.ok else "FAILED")
        )
        return "\n".join(rows) + "\n"


# --- faults -----------------------------------------------------------------------------------------

Fault = Callable[[Stack, Client, random.Random], Awaitable[str]]


async def _holder(api: Client, service: str) -> str:
    """The process name (its ``--id``) holding ``service``'s Lease; identities are ``<id>_<random>``."""
    lease = await api.get(f"/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/ksched-{service}")
    identity: str = (lease.get("spec") or {}).get("holderIdentity") or ""
    return identity.rsplit("_", 1)[0]


def _kill(service: str, leader: bool) -> Fault:
    async def fault(stack: Stack, api: Client, rng: random.Random) -> str:
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
    async def fault(stack: Stack, api: Client, rng: random.Random) -> str:
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


async def _restart_nats(stack: Stack, api: Client, rng: random.Random) -> str:
    name, index = _nats_server(stack, rng)
    await stack.restart_nats(index=index)
    return name


async def _pause_nats(stack: Stack, api: Client, rng: random.Random) -> str:
    name, _ = _nats_server(stack, rng)
    await stack.pause(name, 5.0)
    return name


async def _lose_nats(stack: Stack, api: Client, rng: random.Random) -> str:
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


async def _pause_scheduler(stack: Stack, api: Client, rng: random.Random) -> str:
    name = rng.choice(stack.replicas("scheduler"))
    await stack.pause(name, QUEUE_LEASE_SECONDS + 3.0)  # past the queue's lease on its popped pods
    return name


async def _restart_kubesim(stack: Stack, api: Client, rng: random.Random) -> str:
    stack.hang_up("kubesim")
    await asyncio.sleep(1.5)  # kubesim's --restart-downtime (1 s) and its start
    return "kubesim"


_PLANE: contextvars.ContextVar[_Plane | None] = contextvars.ContextVar("chaos_plane", default=None)


@dataclass
class _Plane:
    """The real control plane of a ``--kube`` run, and what its API server said before restarts."""

    plane: ControlPlane
    rejected_before: int = 0
    """429 answers counted by API server lives that ended."""

    def rejected_now(self) -> int:
        status, body = self.plane.get("/metrics", timeout=10.0)
        if status != 200:
            return 0
        pattern = re.compile(r'^apiserver_request_total\{[^}]*code="429"[^}]*\} ([0-9.e+]+)$', re.M)
        return int(sum(float(v) for v in pattern.findall(body.decode(errors="replace"))))


def _plane() -> _Plane:
    plane = _PLANE.get()
    if plane is None:
        raise ValueError("this fault needs a real API server (--kube PATH)")
    return plane


async def _restart_apiserver(stack: Stack, api: Client, rng: random.Random) -> str:
    plane = _plane()
    plane.rejected_before += await asyncio.to_thread(plane.rejected_now)
    await asyncio.to_thread(plane.plane.restart, "apiserver")
    return "kube-apiserver"


async def _pause_apiserver(stack: Stack, api: Client, rng: random.Random) -> str:
    plane = _plane().plane
    plane.pause("apiserver")
    try:
        await asyncio.sleep(API_PAUSE_SECONDS)
    finally:
        plane.resume("apiserver")
    return "kube-apiserver"


async def _compact_etcd(stack: Stack, api: Client, rng: random.Random) -> str:
    revision = await asyncio.to_thread(_plane().plane.compact)
    return f"etcd@{revision}"


async def _overload_apiserver(stack: Stack, api: Client, rng: random.Random) -> str:
    """LISTs of every pod, FLOOD_REQUESTS at a time for FLOOD_SECONDS, as the services' own user."""
    plane = _plane().plane
    context = ssl.create_default_context(cafile=str(plane.ca_file))
    pki = plane.dir / "pki"
    context.load_cert_chain(str(pki / "scheduler.crt"), str(pki / "scheduler.key"))
    deadline = time.monotonic() + FLOOD_SECONDS
    url = plane.server + "/api/v1/pods"

    async def flood(session: aiohttp.ClientSession) -> None:
        while time.monotonic() < deadline:
            with contextlib.suppress(aiohttp.ClientError, asyncio.TimeoutError):
                async with session.get(url, ssl=context, timeout=aiohttp.ClientTimeout(total=10)) as r:
                    await r.read()

    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=FLOOD_REQUESTS)) as session:
        await asyncio.gather(*(flood(session) for _ in range(FLOOD_REQUESTS)))
    return "kube-apiserver"


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
    "restart-apiserver": _restart_apiserver,
    "pause-apiserver": _pause_apiserver,
    "compact-etcd": _compact_etcd,
    "overload-apiserver": _overload_apiserver,
}

CLUSTER_ONLY = frozenset({"lose-nats-server"})
"""Faults that need ``nats_servers`` > 1."""
KUBE_ONLY = frozenset({"restart-apiserver", "pause-apiserver", "compact-etcd", "overload-apiserver"})
"""Faults of a real API server (``kube``)."""
KUBESIM_ONLY = frozenset({"restart-kubesim"})

FollowUp = Callable[[Stack, str], Awaitable[None]]
FOLLOW_UPS: dict[str, tuple[str, FollowUp]] = {"lose-nats-server": ("replace-nats-server", _replace_nats)}
"""A fault whose damage stays through the next chunk of pods, and what ends it then (recorded as a
fault of its own, with the same target)."""


def default_faults(nats_servers: int, kube: bool = False) -> list[str]:
    """Every fault that applies to a stack with ``nats_servers`` NATS servers (and a real API server
    when ``kube``)."""
    return [
        name
        for name in FAULTS
        if (nats_servers > 1 or name not in CLUSTER_ONLY)
        and name not in (KUBESIM_ONLY if kube else KUBE_ONLY)
    ]


# --- the run ----------------------------------------------------------------------------------------


SPREAD_SLOTS = (1, 3, 5, 7, 9)
"""The last digits of the pods spread over the hostnames, by :attr:`ChaosOptions.spread_tenths`."""


def _pod(i: int, nodes: int, spread_tenths: int = 1) -> dict[str, Any]:
    """Pod ``c-<i>``; ``spread_tenths`` in ten are spread over the hostnames (DoNotSchedule, maxSkew
    1), one in ten has a required anti-affinity to the pods of its group (groups of at most half the
    nodes)."""
    pod: dict[str, Any] = {
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
    if i % 10 in SPREAD_SLOTS[:spread_tenths]:
        pod["metadata"]["labels"] = {"spread": "s"}
        pod["spec"]["topologySpreadConstraints"] = [
            {
                "maxSkew": 1,
                "topologyKey": HOSTNAME,
                "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": {"matchLabels": {"spread": "s"}},
            }
        ]
    elif i % 10 == 2:
        group = f"a{(i // 10) // max(1, nodes // 2)}"
        pod["metadata"]["labels"] = {"anti": group}
        term = {"labelSelector": {"matchLabels": {"anti": group}}, "topologyKey": HOSTNAME}
        anti = {"requiredDuringSchedulingIgnoredDuringExecution": [term]}
        pod["spec"]["affinity"] = {"podAntiAffinity": anti}
    return pod


async def _create(api: Client, pods: Sequence[dict[str, Any]], concurrency: int = 32) -> None:
    """Create ``pods``, retrying each through API errors and kubesim restarts."""
    queue = list(pods)
    path = f"/api/v1/namespaces/{NAMESPACE}/pods"

    async def worker() -> None:
        while queue:
            body = queue.pop()
            for attempt in range(100):
                try:
                    await api.create(path, body)
                    break
                except Exception as exc:  # connection refused while kubesim restarts, 409 after a retry
                    if getattr(exc, "status", None) == 409:
                        break
                    await asyncio.sleep(min(0.1 * (attempt + 1), 1.0))

    await asyncio.gather(*(worker() for _ in range(concurrency)))


PODS = Collection(lookup("", "Pod"), namespace=NAMESPACE)
EVENTS = Collection(lookup("events.k8s.io", "Event"), namespace=NAMESPACE)


async def _bound(api: Client) -> int:
    return len(await _bound_names(api))


async def _bound_names(api: Client) -> set[str]:
    for attempt in range(50):
        try:
            pods, _ = await list_all(api, PODS, Pod, page_size=5000)
            return {p.metadata.name for p in pods if p.spec.node_name}
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


async def _recovery(stack: Stack, api: Client, created: int, timeout: float) -> float | None:
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


def violations(pods: Sequence[Pod], node_names: Sequence[str]) -> list[str]:
    """The hard constraints the placement of ``pods`` breaks, checked on the final placement: every
    required pod anti-affinity term (no two pods it selects on one node of its topology key, here
    the hostname) and every DoNotSchedule topology spread constraint (max - min of the matching pods
    per hostname over every node at most maxSkew)."""
    out: list[str] = []
    bound = [p for p in pods if p.spec.node_name]
    for p in bound:
        affinity = p.spec.affinity
        anti = affinity.pod_anti_affinity if affinity is not None else None
        for term in anti.required_during_scheduling_ignored_during_execution if anti is not None else ():
            wanted = (term.label_selector.match_labels or {}) if term.label_selector is not None else {}
            for q in bound:
                labels = q.metadata.labels or {}
                if (
                    q is not p
                    and q.spec.node_name == p.spec.node_name
                    and wanted
                    and all(labels.get(k) == v for k, v in wanted.items())
                ):
                    pair = f"{p.metadata.name} and {q.metadata.name}"
                    out.append(f"anti-affinity: {pair} on {p.spec.node_name}")
    seen: set[str] = set()
    for p in bound:
        for c in p.spec.topology_spread_constraints or ():
            if c.when_unsatisfiable != "DoNotSchedule" or c.topology_key != HOSTNAME:
                continue
            wanted = (c.label_selector.match_labels or {}) if c.label_selector is not None else {}
            key = repr(sorted(wanted.items()))
            if key in seen:
                continue
            seen.add(key)
            counts = Counter({n: 0 for n in node_names})
            matching = [
                q for q in bound if all((q.metadata.labels or {}).get(k) == v for k, v in wanted.items())
            ]
            for q in matching:
                counts[q.spec.node_name] += 1
            most, least = max(counts, key=counts.__getitem__), min(counts, key=counts.__getitem__)
            skew = counts[most] - counts[least]
            if skew > c.max_skew:
                there = sorted(q.metadata.name for q in matching if q.spec.node_name == most)
                out.append(
                    f"topology spread {key}: skew {skew} > {c.max_skew}"
                    f" ({counts[most]} on {most}: {', '.join(there)}; {counts[least]} on {least})"
                )
    return out


def _event_lines(events: Sequence[dict[str, Any]], names: set[str]) -> list[str]:
    """The events of the pods ``names``, one line each: pod, time, reason, reporting instance, note."""
    return [
        f"{e['regarding']['name']}: {e.get('eventTime') or e.get('deprecatedLastTimestamp') or ''}"
        f" {e.get('reason')} by {e.get('reportingInstance') or '?'}: {e.get('note')}"
        for e in events
        if e["regarding"]["name"] in names
    ]


async def _events_missing(api: Client) -> int:
    """Bound pods without a Scheduled event (0 when the API cannot be read)."""
    try:
        pods, _ = await list_all(api, PODS, Pod, page_size=5000)
        events, _ = await list_all(api, EVENTS, dict[str, Any], page_size=5000)
    except Exception:  # an API server restarting: ask again
        return 1
    scheduled = {e["regarding"]["name"] for e in events if e.get("reason") == "Scheduled"}
    return sum(1 for p in pods if p.spec.node_name and p.metadata.name not in scheduled)


async def _verify(
    api: Client, report: ChaosReport, bound_in: Sequence[tuple[FaultRecord, set[str]]] = ()
) -> None:
    pods, _ = await list_all(api, PODS, Pod, page_size=5000)
    nodes, _ = await list_all(api, NODES, Node, page_size=5000)
    events, _ = await list_all(api, EVENTS, dict[str, Any], page_size=5000)
    report.bound = sum(1 for p in pods if p.spec.node_name)
    doubled = double_bound(events)
    report.double_bound = len(doubled)
    report.double_bound_examples = _event_lines(events, set(sorted(doubled)[:10]))
    scheduled = {e["regarding"]["name"] for e in events if e.get("reason") == "Scheduled"}
    report.events_missing = sum(1 for p in pods if p.spec.node_name and p.metadata.name not in scheduled)
    for record, names in bound_in:
        record.events_lost = len(names - scheduled)
    broken = violations(pods, [n.metadata.name for n in nodes])
    report.violated = len(broken)
    report.violated_examples = broken[:10]
    if broken:  # who placed the pods named, and when: the events of each
        named = {p.metadata.name for p in pods if any(p.metadata.name in line for line in broken[:10])}
        report.violated_examples += _event_lines(events, named)
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
    kube = options.kube is not None
    names = list(options.faults or default_faults(options.nats_servers, kube))
    unknown = [n for n in names if n not in FAULTS]
    if unknown:
        raise ValueError(f"unknown fault(s) {', '.join(unknown)}; known: {', '.join(FAULTS)}")
    if options.nats_servers < 2 and CLUSTER_ONLY.intersection(names):
        raise ValueError(f"{', '.join(sorted(CLUSTER_ONLY.intersection(names)))} needs --nats-servers 3")
    if not kube and KUBE_ONLY.intersection(names):
        needs = ", ".join(sorted(KUBE_ONLY.intersection(names)))
        raise ValueError(f"{needs} needs a real API server (--kube)")
    if kube and KUBESIM_ONLY.intersection(names):
        needs = ", ".join(sorted(KUBESIM_ONLY.intersection(names)))
        raise ValueError(f"{needs} needs kubesim (no --kube)")
    return names


async def _followed(follow_up: FollowUp, stack: Stack, target: str) -> str:
    await follow_up(stack, target)
    return target


@dataclass
class _Injector:
    """Injects faults one at a time and records each one's repair and recovery in the report."""

    stack: Stack
    api: Client
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
    seen_bound: set[str] = field(default_factory=set)
    """Pods bound by the end of the last fault's recovery."""
    bound_in: list[tuple[FaultRecord, set[str]]] = field(default_factory=list)
    """Each fault with the pods bound from the previous fault's recovery to its own."""

    async def kubelet(self) -> None:
        """Start again, as a kubelet would, every service that exited on its own."""
        while True:
            await asyncio.sleep(0.5)
            async with self.lifecycle:
                exited = self.stack.exited()
                for name in exited:
                    if reason := _lost_leadership(self.stack, name):
                        at = time.monotonic() - self.started
                        self.report.leader_exits.append(LeaderExit(name, at, reason))
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
        now_bound = await _bound_names(self.api)
        self.bound_in.append((record, now_bound - self.seen_bound))
        self.seen_bound = now_bound
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


def _lost_leadership(stack: Stack, name: str) -> str:
    """Why ``name`` last lost its Lease (its log's "lost the leadership" line), '' if it did not."""
    text = stack.log_tail(name, lines=200)
    found = re.findall(r"lost the leadership of lease \S+ \((.*)\); exiting", text)
    return str(found[-1]) if found else ""


def _attribute(report: ChaosReport) -> None:
    """Name the fault whose window (from it to its recovery, plus the settling time) holds each exit."""
    for e in report.leader_exits:
        for f in report.faults:
            end = f.at + f.repaired_after + (f.recovered_after or 0.0) + 3.0
            if f.at <= e.at <= end:
                e.during = f.fault


def _relists(workdir: Path) -> int:
    return sum(
        path.read_text(errors="replace").count("is too old, relisting")
        for path in workdir.glob("informer*.log")
    )


RBAC = "rbac.authorization.k8s.io"


def _ksched_rbac() -> list[dict[str, Any]]:
    """The rules of deploy/base/rbac.yaml's roles, all in one ClusterRole's rules."""
    import yaml

    path = Path(__file__).resolve().parents[3] / "deploy" / "base" / "rbac.yaml"
    rules: list[dict[str, Any]] = []
    for doc in yaml.safe_load_all(path.read_text()):
        if doc and doc.get("kind") in ("ClusterRole", "Role"):
            rules += doc.get("rules") or []
    return rules


async def _start_plane(options: ChaosOptions, workdir: Path, log: Callable[[str], None]) -> ControlPlane:
    """A real control plane for the run, its nodes, and deploy/'s RBAC granted to the user of
    ``scheduler.kubeconfig`` (``system:kube-scheduler``), as whom the services run."""
    assert options.kube is not None
    plane = ControlPlane(options.kube, workdir / "kube", apiserver_args=KUBE_APISERVER_ARGS)
    await asyncio.to_thread(plane.up)
    log(f"kube-apiserver 1.36.2 on {plane.server} ({KUBE_APISERVER_ARGS})")
    api = await api_client(str(plane.admin_kubeconfig), component="ksched-chaos")
    async with api:
        role = {"apiVersion": f"{RBAC}/v1", "kind": "ClusterRole"}
        await compare._request(
            api,
            "POST",
            f"/apis/{RBAC}/v1/clusterroles",
            {**role, "metadata": {"name": "ksched-chaos"}, "rules": _ksched_rbac()},
        )
        binding = {
            "apiVersion": f"{RBAC}/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": "ksched-chaos"},
            "roleRef": {"apiGroup": RBAC, "kind": "ClusterRole", "name": "ksched-chaos"},
            "subjects": [{"apiGroup": RBAC, "kind": "User", "name": "system:kube-scheduler"}],
        }
        await compare._request(api, "POST", f"/apis/{RBAC}/v1/clusterrolebindings", binding)
        await compare.create_nodes(api, options.nodes)
    return plane


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
    plane = await _start_plane(options, workdir, log) if options.kube is not None else None
    stack = Stack(
        StackOptions(
            workdir=workdir,
            nodes=options.nodes if plane is None else 0,
            kubeconfig=str(plane.dir / "scheduler.kubeconfig") if plane is not None else None,
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
    report.api_server = "kubesim" if plane is None else "kube-apiserver 1.36.2"
    report.binder_kills = names.count("kill-binder")
    planes = _Plane(plane) if plane is not None else None
    token = _PLANE.set(planes)
    try:
        await stack.start(timeout=180)
    except BaseException:
        if plane is not None:
            await asyncio.to_thread(plane.down)
        raise
    try:
        admin = stack.kubeconfig if plane is None else str(plane.admin_kubeconfig)
        api = await api_client(admin, component="ksched-chaos")
        async with api:
            await api.create(
                "/api/v1/namespaces",
                {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}},
            )
            pods = [_pod(i, options.nodes, options.spread_tenths) for i in range(options.pods)]
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
                # a killed binder's unacknowledged placements come again after the ack wait (30 s),
                # and their Scheduled events with them
                deadline = time.monotonic() + EVENTS_SETTLE
                while time.monotonic() < deadline and await _events_missing(api):
                    await asyncio.sleep(1.0)
            finally:
                await cancel_and_wait(kubelet)
            report.seconds = time.monotonic() - started
            await _verify(api, report, injector.bound_in)
            _attribute(report)
            report.relists_410 = _relists(workdir)
            if planes is not None:
                report.rejected_429 = planes.rejected_before + await asyncio.to_thread(planes.rejected_now)
    finally:
        _PLANE.reset(token)
        await stack.stop()
        if plane is not None:
            await asyncio.to_thread(plane.down)
    return report
