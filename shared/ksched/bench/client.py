"""``ksched bench client``: the client CPU one API request costs, per HTTP client (docs/client.md).

Four ways to reach the API server, each doing the same requests against the same server:

* ``call_api``: kubernetes_asyncio's ``ApiClient.call_api`` as shipped (its aiohttp session trusts
  the environment), undecoded responses (``_preload_content=False``);
* ``aiohttp``: an aiohttp session of our own (``trust_env=False``), undecoded responses;
* ``httpx-h2``: httpx with HTTP/2 (``trust_env=False``), what client-go speaks to the API server;
* ``http1``: :class:`ksched.client.http1.Http1Pool` for requests, aiohttp for the watch stream (it
  does not stream).

Operations, ``--requests`` each, ``--concurrency`` in flight: ``binding`` (a Binding of a pod created
beforehand, as the binder sends it), ``event`` (an events.k8s.io/v1 Event), ``list`` (a page of 500 pods)
and ``watch`` (one watch from resourceVersion 0 delivering ``--requests`` pods as ADDED events, read
line by line).
The figure is the client process's CPU (``time.process_time``: every thread) over the operation,
divided by the requests; the server runs in another process. ``--rounds`` rounds alternate the
clients' order; the figure printed is each client's median over the rounds (min-max beside it).

ksched bench client --kubesim                     # kubesim (--tls) in a child process
ksched bench client --kube ../shared/kube-1.36    # a real control plane started for the run
ksched bench client --kubeconfig FILE             # any API server (it creates a namespace)

``--election`` measures leader election instead: ksched's ``ElectionThread`` and kubernetes_asyncio's
``leaderelection`` (a LeaseLock), each leading a Lease (lease 4 s, renew deadline 3 s, retry 2 s)
while the event loop of its process is held for ``--burn`` seconds (pure Python, as a relist of
20,000 pods holds it). A thread with a loop of its own reads the Lease every 20 ms; the figures are
the longest time the Lease went unrenewed and whether the elector still called itself leader after
the Lease had expired (a standby may then lead too).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import copy
import importlib
import importlib.util
import itertools
import json
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any, Protocol

import aiohttp
import msgspec
from kubernetes_asyncio import config as kconfig
from kubernetes_asyncio.client import ApiClient, Configuration
from yarl import URL

from ksched.aio import cancel_and_wait
from ksched.client.http1 import Http1Pool
from ksched.client.rest import Client, ssl_context

_JSON = msgspec.json.Encoder()
CLIENTS = ("call_api", "aiohttp", "httpx-h2", "http1")
OPERATIONS = ("binding", "event", "list", "watch")


class Transport(Protocol):
    """One candidate client: a request read whole, and a stream of lines."""

    async def request(self, method: str, path: str, body: bytes | None) -> tuple[int, bytes]: ...

    def lines(self, path: str) -> contextlib.AbstractAsyncContextManager[AsyncIterator[bytes]]: ...

    async def close(self) -> None: ...


class CallApi:
    def __init__(self, cfg: Configuration) -> None:
        self.api = ApiClient(configuration=cfg)

    async def request(self, method: str, path: str, body: bytes | None) -> tuple[int, bytes]:
        resp = await self.api.call_api(
            path,
            method,
            body=None if body is None else json.loads(body),  # call_api serialises a body itself
            header_params={"Accept": "application/json", "Content-Type": "application/json"},
            auth_settings=["BearerToken"],
            _preload_content=False,
        )
        try:
            return resp.status, await resp.read()
        finally:
            resp.release()

    @contextlib.asynccontextmanager
    async def lines(self, path: str) -> AsyncIterator[AsyncIterator[bytes]]:
        resp = await self.api.call_api(
            path,
            "GET",
            header_params={"Accept": "application/json"},
            auth_settings=["BearerToken"],
            _preload_content=False,
        )
        try:
            yield resp.content.__aiter__()
        finally:
            resp.release()

    async def close(self) -> None:
        await self.api.close()


class Aiohttp:
    def __init__(self, cfg: Configuration, headers: dict[str, str], connections: int) -> None:
        self.host: str = cfg.host or ""
        self.headers = headers
        connector = aiohttp.TCPConnector(ssl=ssl_context(cfg) or False, limit=connections)
        self.session = aiohttp.ClientSession(connector=connector, trust_env=False, read_bufsize=2**21)

    async def request(self, method: str, path: str, body: bytes | None) -> tuple[int, bytes]:
        async with self.session.request(method, self.host + path, data=body, headers=self.headers) as resp:
            return resp.status, await resp.read()

    @contextlib.asynccontextmanager
    async def lines(self, path: str) -> AsyncIterator[AsyncIterator[bytes]]:
        async with self.session.get(self.host + path, headers=self.headers) as resp:
            yield resp.content.__aiter__()

    async def close(self) -> None:
        await self.session.close()


class Httpx:
    def __init__(self, cfg: Configuration, headers: dict[str, str], connections: int) -> None:
        httpx: Any = importlib.import_module("httpx")  # not a dependency: pip install 'httpx[http2]'
        self.client = httpx.AsyncClient(
            base_url=cfg.host or "",
            http2=True,
            verify=ssl_context(cfg) or False,
            trust_env=False,
            headers=headers,
            limits=httpx.Limits(max_connections=connections),
            timeout=60.0,
        )

    async def request(self, method: str, path: str, body: bytes | None) -> tuple[int, bytes]:
        resp = await self.client.request(method, path, content=body)
        return resp.status_code, resp.content

    @contextlib.asynccontextmanager
    async def lines(self, path: str) -> AsyncIterator[AsyncIterator[bytes]]:
        async with self.client.stream("GET", path) as resp:
            yield _split_lines(resp.aiter_raw())

    async def close(self) -> None:
        await self.client.aclose()


class Http1:
    """Http1Pool for requests; the watch on aiohttp (the pool does not stream)."""

    def __init__(self, cfg: Configuration, headers: dict[str, str], connections: int) -> None:
        url = URL(cfg.host or "")
        assert url.host is not None
        port = url.port or (443 if url.scheme == "https" else 80)
        self.pool = Http1Pool(url.host, port, ssl_context(cfg), max_connections=connections)
        self.headers = headers
        self.stream = Aiohttp(cfg, headers, 2)

    async def request(self, method: str, path: str, body: bytes | None) -> tuple[int, bytes]:
        return await self.pool.request(method, path, self.headers, body, 60.0)

    def lines(self, path: str) -> contextlib.AbstractAsyncContextManager[AsyncIterator[bytes]]:
        return self.stream.lines(path)

    async def close(self) -> None:
        await self.pool.close()
        await self.stream.close()


async def _split_lines(chunks: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
    buffer = b""
    async for chunk in chunks:
        *lines, buffer = (buffer + chunk).split(b"\n")
        for line in lines:
            yield line


async def make(name: str, cfg: Configuration, connections: int) -> Transport:
    if name == "call_api":
        cfg.connection_pool_maxsize = connections
        return CallApi(cfg)
    headers = await Client(cfg).headers()  # what ksched's client sends: User-Agent, token
    if name == "aiohttp":
        return Aiohttp(cfg, headers, connections)
    if name == "httpx-h2":
        return Httpx(cfg, headers, connections)
    return Http1(cfg, headers, connections)


# --- the workload ------------------------------------------------------------------------------


def _pod(namespace: str, name: str) -> bytes:
    return _JSON.encode(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace, "labels": {"bench": "client"}},
            "spec": {
                "schedulerName": "nobody",
                "containers": [{"name": "c", "image": "registry.k8s.io/pause"}],
            },
        }
    )


def _binding(namespace: str, name: str) -> bytes:
    return _JSON.encode(
        {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {"name": name, "namespace": namespace},
            "target": {"apiVersion": "v1", "kind": "Node", "name": "bench-node"},
        }
    )


def _event(namespace: str, name: str) -> bytes:
    now = time.strftime("%Y-%m-%dT%H:%M:%S.000000Z", time.gmtime())
    return _JSON.encode(
        {
            "apiVersion": "events.k8s.io/v1",
            "kind": "Event",
            "metadata": {"name": name, "namespace": namespace},
            "eventTime": now,
            "reportingController": "ksched-bench",
            "reportingInstance": "ksched-bench-1",
            "action": "Binding",
            "reason": "Scheduled",
            "type": "Normal",
            "note": f"Successfully assigned {namespace}/{name} to bench-node",
            "regarding": {"apiVersion": "v1", "kind": "Pod", "namespace": namespace, "name": name},
        }
    )


async def _all(
    send: Callable[[int], Awaitable[tuple[int, bytes]]], count: int, concurrency: int, ok: tuple[int, ...]
) -> None:
    """``send(0..count-1)``, ``concurrency`` at a time; a status outside ``ok`` stops the run."""
    queue = iter(range(count))

    async def worker() -> None:
        for i in queue:
            status, body = await send(i)
            if status not in ok:
                raise RuntimeError(f"HTTP {status}: {body[:200]!r}")

    await asyncio.gather(*(worker() for _ in range(concurrency)))


class Workload:
    def __init__(self, namespace: str, requests: int, concurrency: int) -> None:
        self.ns = namespace
        self.requests = requests
        self.concurrency = concurrency

    async def prepare(self, setup: Transport, pods: int) -> None:
        """The namespace, a node to bind to and ``pods`` unbound pods (at least ``requests``: the
        watch from resourceVersion 0 starts with every pod as ADDED)."""
        await setup.request("POST", "/api/v1/namespaces", _JSON.encode({"metadata": {"name": self.ns}}))
        node = {"metadata": {"name": "bench-node"}, "spec": {}}
        await setup.request("POST", "/api/v1/nodes", _JSON.encode(node))
        path = f"/api/v1/namespaces/{self.ns}/pods"
        await _all(lambda i: setup.request("POST", path, _pod(self.ns, f"p-{i}")), pods, 16, (201,))

    async def run(self, op: str, client: Transport, first_pod: int) -> None:
        n, c, ns = self.requests, self.concurrency, self.ns
        if op == "binding":
            await _all(
                lambda i: client.request(
                    "POST",
                    f"/api/v1/namespaces/{ns}/pods/p-{first_pod + i}/binding",
                    _binding(ns, f"p-{first_pod + i}"),
                ),
                n,
                c,
                (201,),
            )
        elif op == "event":
            path = f"/apis/events.k8s.io/v1/namespaces/{ns}/events"
            tag = uuid.uuid4().hex[:8]
            await _all(lambda i: client.request("POST", path, _event(ns, f"e-{tag}-{i}")), n, c, (201,))
        elif op == "list":
            path = f"/api/v1/namespaces/{ns}/pods?limit=500"
            await _all(lambda i: client.request("GET", path, None), max(1, n // 10), c, (200,))
        else:
            path = f"/api/v1/namespaces/{ns}/pods?watch=true&resourceVersion=0&timeoutSeconds=60"
            seen = 0
            async with client.lines(path) as lines:
                async for line in lines:
                    if not line.strip():
                        continue
                    if not line.startswith(b'{"type":"ADDED"'):
                        raise RuntimeError(f"watch: {line[:200]!r}")
                    seen += 1
                    if seen >= n:
                        break
            if seen < n:
                raise RuntimeError(f"the watch delivered {seen} of {n} events")


def per_request(op: str, n: int) -> int:
    return max(1, n // 10) if op == "list" else n


async def measure(
    cfg_for: Callable[[], Awaitable[Configuration]], args: argparse.Namespace
) -> dict[str, Any]:
    clients = [c for c in CLIENTS if c in args.clients]
    if "httpx-h2" in clients and not (importlib.util.find_spec("httpx") and importlib.util.find_spec("h2")):
        print("httpx-h2 left out: pip install 'httpx[http2]' to measure it", file=sys.stderr)
        clients.remove("httpx-h2")
    ops = [o for o in OPERATIONS if o in args.ops]
    work = Workload(f"bench-client-{uuid.uuid4().hex[:6]}", args.requests, args.concurrency)
    setup = await make("http1", await cfg_for(), 16)
    bindings = len(clients) * args.rounds if "binding" in ops else 0
    await work.prepare(setup, max(500, args.requests, bindings * args.requests))
    await setup.close()
    figures: dict[tuple[str, str], list[float]] = {}
    walls: dict[tuple[str, str], list[float]] = {}
    next_pod = 0
    for round_ in range(args.rounds):
        order = clients[round_ % len(clients) :] + clients[: round_ % len(clients)]
        for name in order:
            client = await make(name, await cfg_for(), args.concurrency)
            try:
                await work.run("list", client, 0)  # connections open, caches warm: not measured
                for op in ops:
                    started, wall = time.process_time(), time.perf_counter()
                    await work.run(op, client, next_pod)
                    spent = time.process_time() - started
                    walls.setdefault((name, op), []).append(time.perf_counter() - wall)
                    if op == "binding":
                        next_pod += args.requests
                    ms = spent * 1000 / per_request(op, args.requests)
                    figures.setdefault((name, op), []).append(ms)
            finally:
                await client.close()
    result: dict[str, Any] = {
        "requests": args.requests,
        "concurrency": args.concurrency,
        "rounds": args.rounds,
    }
    for (name, op), values in figures.items():
        result[f"{op}.{name}.ms"] = round(statistics.median(values), 3)
        result[f"{op}.{name}.range"] = f"{min(values):.3f}-{max(values):.3f}"
        result[f"{op}.{name}.wall_s"] = round(statistics.median(walls[(name, op)]), 3)
    return result


@contextlib.contextmanager
def _server(args: argparse.Namespace) -> Any:
    """The kubeconfig of the API server to measure against (started here unless --kubeconfig)."""
    if args.kubeconfig:
        yield args.kubeconfig
        return
    if args.kube:
        from ksched.launcher.controlplane import ControlPlane

        plane = ControlPlane(kube=Path(args.kube), dir=Path(tempfile.mkdtemp(prefix="bench-client-")))
        plane.up()
        try:
            yield str(plane.admin_kubeconfig)
        finally:
            plane.down()
        return
    folder = Path(tempfile.mkdtemp(prefix="bench-client-"))
    kubeconfig = folder / "kubeconfig"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "ksched_kubesim",
            "--listen",
            "127.0.0.1:0",
            "--tls",
            "--no-lifecycle",
            "--write-kubeconfig",
            str(kubeconfig),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while not kubeconfig.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        yield str(kubeconfig)
    finally:
        proc.terminate()
        proc.wait(10)


# --- leader election under a busy loop ----------------------------------------------------------

LEASE_DURATION, RENEW_DEADLINE, RETRY_PERIOD = 4, 3, 2
"""The shortest timings kubernetes_asyncio's elector accepts (whole seconds, a retry period of at
least 1 s), proportioned like kube-scheduler's 15/10/2."""


class LeaseObserver:
    """Reads a Lease every ``interval`` s from a thread and event loop of its own; records when its
    renewTime changed (monotonic seconds)."""

    def __init__(self, cfg: Configuration, name: str, interval: float = 0.02) -> None:
        self.cfg = cfg
        self.path = f"/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/{name}"
        self.interval = interval
        self.renewals: list[float] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=lambda: asyncio.run(self._run()), daemon=True)

    async def _run(self) -> None:
        last = ""
        async with Client(self.cfg, connections=1) as api:
            while not self._stop.is_set():
                status, body = await api.request("GET", self.path)
                if status == 200:
                    renewed = (msgspec.json.decode(body).get("spec") or {}).get("renewTime") or ""
                    if renewed != last:
                        last = renewed
                        self.renewals.append(time.monotonic())
                await asyncio.sleep(self.interval)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(10)

    def longest_gap(self, since: float, until: float) -> float:
        """The longest time without a renewal seen in [since, until]."""
        times = [since, *(t for t in self.renewals if since < t < until), until]
        return max(b - a for a, b in itertools.pairwise(times))


def _burn(seconds: float) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        sum(range(200))


async def _election_run(kind: str, cfg: Configuration, burn: float) -> dict[str, Any]:
    name = f"bench-election-{uuid.uuid4().hex[:6]}"
    leading = asyncio.Event()
    stopped: list[float] = []
    observer = LeaseObserver(copy.copy(cfg), name)
    stop_election: Callable[[], Awaitable[None]]
    if kind == "ksched":
        from ksched.client.leader import ElectionConfig, ElectionThread

        api = Client(cfg, connections=2)
        thread = ElectionThread(
            api,
            ElectionConfig(
                name=name,
                identity="bench",
                namespace="kube-system",
                lease_duration=LEASE_DURATION,
                renew_deadline=RENEW_DEADLINE,
                retry_period=RETRY_PERIOD,
            ),
            on_stopped_leading_now=lambda: stopped.append(time.monotonic()),
        )
        thread.start()

        def is_leader() -> bool:
            return thread.is_leader

        async def stop_ksched() -> None:
            await thread.stop()
            await api.close()

        await asyncio.wait_for(thread.wait_leader(), 10)
        stop_election = stop_ksched
    else:
        from kubernetes_asyncio.leaderelection import electionconfig, leaderelection
        from kubernetes_asyncio.leaderelection.resourcelock.leaselock import LeaseLock

        k8s = ApiClient(configuration=cfg)
        state = {"leader": False}

        async def started() -> None:
            state["leader"] = True
            leading.set()

        async def ended() -> None:
            state["leader"] = False
            stopped.append(time.monotonic())

        config = electionconfig.Config(
            LeaseLock(name, "kube-system", "bench", k8s),
            LEASE_DURATION,
            RENEW_DEADLINE,
            RETRY_PERIOD,
            started,
            ended,
        )
        task = asyncio.create_task(leaderelection.LeaderElection(config).run())

        def is_leader() -> bool:
            return state["leader"]

        async def stop_library() -> None:
            with contextlib.suppress(Exception):
                await cancel_and_wait(task)
            await k8s.close()

        await asyncio.wait_for(leading.wait(), 10)
        stop_election = stop_library
    observer.start()
    await asyncio.sleep(1.0)
    began = time.monotonic()
    _burn(burn)
    ended_at = time.monotonic()
    await asyncio.sleep(LEASE_DURATION)
    observer.stop()
    gap = observer.longest_gap(began - 0.5, ended_at + LEASE_DURATION)
    still = is_leader()
    await stop_election()
    expired = gap > LEASE_DURATION
    return {
        "longest_unrenewed_s": round(gap, 2),
        "lease_expired": expired,
        "stepped_down": bool(stopped),
        "leader_after_expiry": expired and still and not stopped,
    }


async def election(
    cfg_for: Callable[[], Awaitable[Configuration]], burn: float, rounds: int
) -> dict[str, Any]:
    result: dict[str, Any] = {
        "burn_s": burn,
        "lease_duration_s": LEASE_DURATION,
        "renew_deadline_s": RENEW_DEADLINE,
        "retry_period_s": RETRY_PERIOD,
    }
    for i in range(rounds):
        for kind in ("ksched", "kubernetes_asyncio") if i % 2 == 0 else ("kubernetes_asyncio", "ksched"):
            for key, value in (await _election_run(kind, await cfg_for(), burn)).items():
                result.setdefault(f"{kind}.{key}", []).append(value)
    return result


def main(argv: Sequence[str]) -> int:
    p = argparse.ArgumentParser(prog="ksched bench client", description=__doc__.split("\n\n")[0])
    where = p.add_mutually_exclusive_group()
    where.add_argument("--kubeconfig", help="an API server that is up")
    where.add_argument("--kube", help="start a real control plane from this folder (../shared/kube-1.36)")
    where.add_argument("--kubesim", action="store_true", help="start kubesim (the default)")
    p.add_argument("--requests", type=int, default=500, help="requests per operation (list: a tenth)")
    p.add_argument("--concurrency", type=int, default=16)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--clients", nargs="+", default=list(CLIENTS), choices=CLIENTS)
    p.add_argument("--ops", nargs="+", default=list(OPERATIONS), choices=OPERATIONS)
    p.add_argument("--election", action="store_true", help="measure leader election under a busy loop")
    p.add_argument("--burn", type=float, default=9.0, help="--election: seconds the loop is held")
    p.add_argument("--json", action="store_true")
    args = p.parse_args(list(argv))
    with _server(args) as kubeconfig:

        async def cfg_for() -> Configuration:
            cfg = Configuration()
            await kconfig.load_kube_config(config_file=kubeconfig, client_configuration=cfg)
            return cfg

        import uvloop

        if args.election:
            result = uvloop.run(election(cfg_for, args.burn, args.rounds))
        else:
            result = uvloop.run(measure(cfg_for, args))
    if args.json:
        print(json.dumps(result))
    else:
        for key, value in result.items():
            print(f"{key}={value}")
    return 0
