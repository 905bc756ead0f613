"""Helpers shared by the contract tests."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

from kubernetes_asyncio import client
from kubernetes_asyncio.client import ApiClient

from tests import kube
from tests.fixtures.kubesim import Cluster


def unique(base: str) -> str:
    return f"{base}-{uuid.uuid4().hex[:6]}"


def pod_manifest(name: str, **spec: Any) -> dict[str, Any]:
    labels = spec.pop("labels", None)
    body: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, **({"labels": labels} if labels else {})},
        "spec": {
            "containers": [
                {
                    "name": "c",
                    "image": "registry.k8s.io/pause:3.10",
                    "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}},
                }
            ],
            **spec,
        },
    }
    return body


def node_manifest(cluster: Cluster, base: str, zone: str = "zone-1", **status: Any) -> dict[str, Any]:
    name = cluster.name(base)
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {
                **cluster.labels(),
                "kubernetes.io/hostname": name,
                "topology.kubernetes.io/zone": zone,
            },
        },
        "spec": {"taints": [{"key": "ksched.dev/contract", "value": "true", "effect": "NoSchedule"}]},
        "status": {
            "capacity": {"cpu": "8", "memory": "32Gi", "pods": "110"},
            **status,
        },
    }


async def create_pod(api: ApiClient, namespace: str, name: str, **spec: Any) -> Any:
    return await client.CoreV1Api(api).create_namespaced_pod(namespace, kube.body(pod_manifest(name, **spec)))


async def bind(api: ApiClient, namespace: str, pod: str, node: str) -> Any:
    """Bind through kubernetes_asyncio (raw response: its Binding deserialisation is broken)."""
    binding = {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": pod},
        "target": {"kind": "Node", "name": node},
    }
    resp = await kube.undecoded(
        client.CoreV1Api(api).create_namespaced_pod_binding(
            pod, namespace, kube.body(binding), _preload_content=False
        )
    )
    try:
        return resp.status, await resp.json()
    finally:
        resp.release()


async def eventually(
    check: Callable[[], Awaitable[bool]], within: float = 5.0, interval: float = 0.02
) -> bool:
    deadline = time.monotonic() + within
    while True:
        if await check():
            return True
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(interval)
