"""Helpers for end-to-end tests: every service is a separate process (ksched.launcher.Stack);
the test talks to kubesim only through kubernetes_asyncio over HTTP."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Callable
from typing import Any

from kubernetes_asyncio import client, config
from kubernetes_asyncio.client import ApiClient

from ksched.launcher.stack import Stack, StackOptions


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


@contextlib.asynccontextmanager
async def running_stack(options: StackOptions) -> AsyncIterator[Stack]:
    """A Stack started with ``options``, stopped on the way out."""
    stack = Stack(options)
    await stack.start()
    try:
        yield stack
    finally:
        await stack.stop()


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


async def create_nodes(api: ApiClient, nodes: list[dict[str, Any]]) -> None:
    v1 = client.CoreV1Api(api)
    for n in nodes:
        await v1.create_node(n)


async def create_pods(api: ApiClient, pods: list[dict[str, Any]], concurrency: int = 32) -> None:
    v1 = client.CoreV1Api(api)
    sem = asyncio.Semaphore(concurrency)

    async def one(p: dict[str, Any]) -> None:
        async with sem:
            await v1.create_namespaced_pod(p["metadata"].get("namespace", "default"), p)

    await asyncio.gather(*(one(p) for p in pods))


async def create_namespace(api: ApiClient, name: str) -> None:
    await client.CoreV1Api(api).create_namespace(
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
    )


async def pod_nodes(api: ApiClient, namespace: str = "default") -> dict[str, str]:
    """name -> spec.nodeName ('' when unbound) for every pod in ``namespace``."""
    v1 = client.CoreV1Api(api)
    resp = await v1.list_namespaced_pod(namespace, _preload_content=False)  # raw: thousands of pods
    try:
        doc = json.loads(await resp.read())
    finally:
        resp.release()
    return {p["metadata"]["name"]: p["spec"].get("nodeName") or "" for p in doc["items"]}


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
