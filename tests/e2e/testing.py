"""Helpers for end-to-end tests: every service is a separate process (ksched.launcher.Stack);
the test talks to kubesim only through kubernetes_asyncio over HTTP."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import sys
from collections import Counter
from collections.abc import AsyncIterator, Callable, Mapping
from pathlib import Path
from typing import Any, Literal

import aiohttp
import pytest
from kubernetes_asyncio import client, config
from kubernetes_asyncio.client import ApiClient
from prometheus_client.parser import text_string_to_metric_families

from ksched.launcher.stack import Stack, StackOptions
from ksched.service.faults import FAULTS_ENV
from tests import kube
from tests.faults import arm


async def api_for(kubeconfig: str) -> ApiClient:
    return await config.new_client_from_config(config_file=kubeconfig)


@contextlib.asynccontextmanager
async def kube_api(kubeconfig: str) -> AsyncIterator[ApiClient]:
    """An API client for ``kubeconfig``, closed on the way out."""
    api = await api_for(kubeconfig)
    try:
        yield api
    finally:
        await api.close()


REPAIRED = "ksched_queue_repaired_pods_total"


@contextlib.asynccontextmanager
async def running_stack(options: StackOptions) -> AsyncIterator[Stack]:
    """A Stack started with ``options``, stopped on the way out. Its queues compare themselves with the
    informer every 2 s (unless ``options`` say otherwise), and a queue that had to add back a pod it
    lost (``ksched_queue_repaired_pods_total`` above 0) fails the test."""
    if options.repair_interval is None:
        options = dataclasses.replace(options, repair_interval="2s")
    stack = Stack(options)
    await stack.start()
    try:
        yield stack
        queues = [name for name, proc in stack.procs.items() if proc.service == "queue"]
        repaired = {name: await queue_repairs(stack, name) for name in queues}
        assert not any(repaired.values()), f"the queue's safety net had to add back lost pods: {repaired}"
    finally:
        await stack.stop()


UNDER_LOAD: dict[str, Any] = {"binder_workers": 8, "pod_start_delay": 3600, "time_scale": 0.01}
"""Stack options of the tests that schedule hundreds of pods through replicas and crashes: kubesim starts
no bound pod during the test (an hour of simulated time), each binder binds with 8 workers."""


def stack_fixture(
    workdir: str,
    *,
    scope: Literal["module", "function"] = "module",
    faults: Mapping[str, str] | None = None,
    **options: Any,
) -> Callable[..., AsyncIterator[Stack]]:
    """A module's ``stack`` fixture (``stack = stack_fixture(...)``): :func:`running_stack` with
    ``StackOptions(**options)`` in a new temporary folder named ``workdir``; ``faults`` (fault point,
    ``point/namespace/name`` for a pod's → action) armed before the services start."""

    async def stack(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Stack]:
        folder = tmp_path_factory.mktemp(workdir)
        given = dict(options)
        if faults:
            for point, action in faults.items():
                arm(folder / "faults", point, action)
            given["extra_env"] = {**given.get("extra_env", {}), FAULTS_ENV: str(folder / "faults")}
        async with running_stack(StackOptions(workdir=folder, **given)) as s:
            yield s

    return pytest.fixture(stack, scope=scope)


async def queue_repairs(stack: Stack, name: str) -> float:
    """``ksched_queue_repaired_pods_total`` of a running queue (0 for one that is not running)."""
    if not stack.procs[name].running:
        return 0.0
    async with aiohttp.ClientSession() as http, http.get(f"{stack.http_url(name)}/metrics") as r:
        text = await r.text()
    return sum(float(line.split()[-1]) for line in text.splitlines() if line.startswith(REPAIRED + " "))


def node(
    name: str,
    cpu: str = "4",
    memory: str = "8Gi",
    labels: dict[str, str] | None = None,
    taints: list[dict[str, str]] | None = None,
) -> dict[str, Any]:
    spec: dict[str, Any] = {}
    if taints:
        spec["taints"] = taints
    res = {"cpu": cpu, "memory": memory, "pods": "110"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}},
        "spec": spec,
        "status": {"capacity": res, "allocatable": res},
    }


def pod(
    name: str,
    cpu: str = "100m",
    memory: str = "64Mi",
    namespace: str = "default",
    scheduler_name: str | None = None,
    **spec: Any,
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "containers": [
            {
                "name": "c",
                "image": "registry.k8s.io/pause:3.9",
                "resources": {"requests": {"cpu": cpu, "memory": memory}},
            }
        ],
        **spec,
    }
    if scheduler_name:
        body["schedulerName"] = scheduler_name
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace},
        "spec": body,
    }


HOSTNAME = "kubernetes.io/hostname"


def claim(name: str, storage_class: str, size: str) -> Any:
    """A PVC body (typed Any: kubernetes_asyncio takes dicts at run time)."""
    return {
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "storageClassName": storage_class,
            "resources": {"requests": {"storage": size}},
        },
    }


async def create_wffc_storage(
    api: ApiClient, local_class: str, csi_class: str, local_pv: str, pv_node: str
) -> None:
    """Two WaitForFirstConsumer StorageClasses: ``local_class`` without a provisioner, with a 10Gi
    local PV ``local_pv`` pinned to ``pv_node``, and ``csi_class`` provisioned by csi.example.com."""
    for name, provisioner in ((local_class, "kubernetes.io/no-provisioner"), (csi_class, "csi.example.com")):
        storage_class: Any = {
            "metadata": {"name": name},
            "provisioner": provisioner,
            "volumeBindingMode": "WaitForFirstConsumer",
        }
        await client.StorageV1Api(api).create_storage_class(storage_class)
    term = {"matchExpressions": [{"key": HOSTNAME, "operator": "In", "values": [pv_node]}]}
    pv: Any = {
        "metadata": {"name": local_pv},
        "spec": {
            "capacity": {"storage": "10Gi"},
            "accessModes": ["ReadWriteOnce"],
            "storageClassName": local_class,
            "local": {"path": "/mnt/disks/ssd1"},
            "nodeAffinity": {"required": {"nodeSelectorTerms": [term]}},
        },
    }
    await client.CoreV1Api(api).create_persistent_volume(pv)


async def create_nodes(api: ApiClient, nodes: list[dict[str, Any]]) -> None:
    v1 = client.CoreV1Api(api)
    for n in nodes:
        await v1.create_node(kube.body(n))


async def create_pods(api: ApiClient, pods: list[dict[str, Any]], concurrency: int = 32) -> None:
    v1 = client.CoreV1Api(api)
    sem = asyncio.Semaphore(concurrency)

    async def one(p: dict[str, Any]) -> None:
        async with sem:
            await v1.create_namespaced_pod(p["metadata"].get("namespace", "default"), kube.body(p))

    await asyncio.gather(*(one(p) for p in pods))


async def create_namespace(api: ApiClient, name: str) -> None:
    await client.CoreV1Api(api).create_namespace(
        kube.body({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    )


async def create_pool(api: ApiClient, ns: str, nodes: int, cpu: str = "64", memory: str = "256Gi") -> None:
    """Namespace ``ns`` and ``nodes`` nodes ``<ns>-<i>`` labelled ``pool=<ns>``, for :func:`pool_pods`."""
    await create_namespace(api, ns)
    await create_nodes(
        api, [node(f"{ns}-{i}", cpu=cpu, memory=memory, labels={"pool": ns}) for i in range(nodes)]
    )


def pool_pods(ns: str, count: int, cpu: str = "100m") -> list[dict[str, Any]]:
    """``count`` pods ``w-<i>`` of namespace ``ns`` that only fit the nodes of :func:`create_pool`."""
    return [pod(f"w-{i:04d}", cpu=cpu, namespace=ns, nodeSelector={"pool": ns}) for i in range(count)]


async def pod_nodes(api: ApiClient, namespace: str = "default") -> dict[str, str]:
    """name -> spec.nodeName ('' when unbound) for every pod in ``namespace``."""
    v1 = client.CoreV1Api(api)
    resp = await kube.undecoded(
        v1.list_namespaced_pod(namespace, _preload_content=False)
    )  # thousands of pods
    try:
        doc = json.loads(await resp.read())
    finally:
        resp.release()
    return {p["metadata"]["name"]: p["spec"].get("nodeName") or "" for p in doc["items"]}


async def bound_count(api: ApiClient, namespace: str) -> int:
    """How many pods of ``namespace`` are bound."""
    return sum(1 for v in (await pod_nodes(api, namespace)).values() if v)


async def all_bound(api: ApiClient, namespace: str, count: int) -> dict[str, str] | None:
    """:func:`pod_nodes` once ``namespace`` has ``count`` pods, every one bound (None before)."""
    placed = await pod_nodes(api, namespace)
    return placed if len(placed) == count and all(placed.values()) else None


async def eventually(check: Callable[[], Any], timeout: float = 60.0, interval: float = 0.2) -> Any:
    """Await ``check()`` until it returns a truthy value; AssertionError with the last value on timeout."""
    deadline = asyncio.get_running_loop().time() + timeout
    last: Any = None
    while True:
        last = await check()
        if last:
            return last
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"condition not reached in {timeout}s; last value: {last!r}")
        await asyncio.sleep(interval)


async def holder(api: ApiClient, lease: str) -> str:
    """The process name holding ``lease`` (identities are ``<--id>_<random>``), '' if none."""
    obj = await client.CoordinationV1Api(api).read_namespaced_lease(lease, "kube-system")
    identity: str = obj.spec.holder_identity or ""
    return identity.rsplit("_", 1)[0]


async def ready(url: str) -> bool:
    try:
        async with (
            aiohttp.ClientSession() as http,
            http.get(f"{url}/readyz", timeout=aiohttp.ClientTimeout(total=2)) as r,
        ):
            return r.status == 200
    except (aiohttp.ClientError, TimeoutError):
        return False


async def assert_bound_once(api: ApiClient, namespace: str) -> None:
    """No pod of ``namespace`` was bound twice. kubesim refuses a binding for a bound pod with 409, so
    a second decision for another node shows up as a FailedScheduling "already assigned" event; a
    second binding to the same node (accepted as idempotent) would add a second Scheduled event,
    i.e. a series on the one aggregated Event."""
    events = await client.EventsV1Api(api).list_namespaced_event(namespace)
    scheduled = [e for e in events.items if e.reason == "Scheduled"]
    per_pod = Counter(e.regarding.name for e in scheduled)
    assert all(n == 1 for n in per_pod.values()), [k for k, n in per_pod.items() if n > 1]
    assert not [e.regarding.name for e in scheduled if e.series is not None]
    rejected = [
        e.note
        for e in events.items
        if e.reason == "FailedScheduling" and "already assigned" in (e.note or "")
    ]
    assert not rejected, rejected


def process_state(pid: int) -> str | None:
    """The state letter of process ``pid`` in ``/proc`` (``T``: stopped by a signal); None if gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()[0]


def stopped_scheduler(stack: Stack) -> int | None:
    """The pid of a scheduler process stopped by a signal (fault point ``before-assume``), if one is."""
    for proc in stack.procs.values():
        if proc.service == "scheduler" and proc.pid is not None and process_state(proc.pid) == "T":
            return proc.pid
    return None


async def ksched_trace(stack: Stack, *args: str) -> tuple[int, str, str]:
    """``ksched trace *args`` against ``stack``'s bus: exit status, stdout, stderr."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "ksched.cli",
        "trace",
        *args,
        "--nats",
        stack.nats.url,
        "--subject-prefix",
        stack.options.prefix,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


# --- metrics ----------------------------------------------------------------------------------------

Series = tuple[str, tuple[tuple[str, str], ...]]
"""A sample's name and its sorted labels."""


def samples(text: str) -> dict[Series, float]:
    out: dict[Series, float] = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


async def scrape(
    session: aiohttp.ClientSession, stack: Stack, services: tuple[str, ...]
) -> dict[Series, float]:
    """Every series of ``services`` (each service's name as label ``service``, so the same series
    of two services stay apart)."""
    out: dict[Series, float] = {}
    for service in services:
        async with session.get(stack.http_url(service) + "/metrics") as resp:
            text = await resp.text()
        for (name, labels), value in samples(text).items():
            out[(name, (("service", service), *labels))] = value
    return out


def moved(name: str, before: dict[Series, float], seen: list[dict[Series, float]]) -> bool:
    """Whether a series of metric ``name`` (a counter's ``_total``, a gauge, a histogram's
    ``_count``) had another value in one of the ``seen`` scrapes than in ``before`` (0 if absent)."""
    names = {name, f"{name}_count"}
    return any(
        value != before.get(series, 0.0)
        for scrape in seen
        for series, value in scrape.items()
        if series[0] in names
    )
