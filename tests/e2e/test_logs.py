"""End to end: with ``--log-format json`` every service writes one JSON object per line, and the
lines written while a pod is handled carry its pod, node, profile and trace id: the scheduler's
"Pod assumed on node" and the binder's "Successfully bound pod to node" name the node the pod was
bound to and the same trace id."""

from __future__ import annotations

import json
from typing import Any

import pytest
from kubernetes_asyncio.client import ApiClient

from ksched.launcher.stack import Stack
from tests.e2e.testing import (
    create_nodes,
    create_pods,
    eventually,
    node,
    pod,
    pod_nodes,
    stack_fixture,
)

pytestmark = pytest.mark.e2e

PODS = ("logged-0", "logged-1", "logged-2")
ASSUMED = "Pod assumed on node"
BOUND = "Successfully bound pod to node"


stack = stack_fixture(
    "logs-stack", pod_start_delay=0.1, time_scale=0.01, log_level="DEBUG", log_format="json"
)


def json_lines(stack: Stack, name: str) -> list[dict[str, Any]]:
    """The service's log as JSON objects; a line that is not one fails the test (names the line)."""
    docs = []
    for line in stack.procs[name].log_path.read_text(errors="replace").splitlines():
        if not line.strip():
            continue
        try:
            docs.append(json.loads(line))
        except json.JSONDecodeError:
            pytest.fail(f"{name} wrote a line that is not JSON: {line!r}")
    return docs


def about(docs: list[dict[str, Any]], pod_key: str, msg: str) -> list[dict[str, Any]]:
    return [d for d in docs if d.get("pod") == pod_key and str(d.get("msg", "")).startswith(msg)]


async def test_scheduled_pods_log_lines_carry_pod_node_profile_and_trace_id(
    stack: Stack, api: ApiClient
) -> None:
    await create_nodes(api, [node("log-node-a", cpu="2"), node("log-node-b", cpu="2")])
    await create_pods(api, [pod(name) for name in PODS])

    async def all_bound() -> dict[str, str] | None:
        placed = await pod_nodes(api)
        return placed if all(placed.get(name) for name in PODS) else None

    placed = await eventually(all_bound, timeout=60)

    async def binder_logged_all() -> bool:
        docs = json_lines(stack, "binder-0")
        return all(about(docs, f"default/{name}", BOUND) for name in PODS)

    await eventually(binder_logged_all, timeout=10)
    scheduler, binder = json_lines(stack, "scheduler-0"), json_lines(stack, "binder-0")
    for name in PODS:
        key = f"default/{name}"
        [assumed] = about(scheduler, key, ASSUMED)
        [bound] = about(binder, key, BOUND)
        for doc, service in ((assumed, "scheduler"), (bound, "binder")):
            assert doc["service"] == service
            assert doc["node"] == placed[name], doc
            assert doc["profile"] == "default-scheduler", doc
        assert assumed["trace_id"] and assumed["trace_id"] == bound["trace_id"]
        attempts = about(scheduler, key, "Attempting to schedule pod")
        assert attempts and all(a["trace_id"] == assumed["trace_id"] for a in attempts)
        assert all("node" not in a for a in attempts), "the node is only known once chosen"
    for docs, service in ((scheduler, "scheduler"), (binder, "binder")):
        assert all(d.get("service") == service for d in docs)
    # lines about no pod in particular (startup, connections) carry no pod's fields
    assert any("pod" not in d and "trace_id" not in d for d in scheduler)
