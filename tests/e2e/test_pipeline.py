"""End to end: kubesim + NATS + informer + queue + scheduler(s) + binder, each its own process."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import yaml
from kubernetes_asyncio import client
from kubernetes_asyncio.client import ApiClient

from ksched.launcher.stack import Stack, StackOptions
from tests.e2e.testing import (
    create_nodes,
    create_pods,
    eventually,
    node,
    pod,
    pod_nodes,
    running_stack,
)

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
async def stack(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Stack]:
    async with running_stack(
        StackOptions(
            workdir=tmp_path_factory.mktemp("stack"),
            schedulers=1,
            pod_start_delay=0.1,
            time_scale=0.01,
            # every cycle records plugin durations (upstream samples 10 %), so the metrics test sees them
            extra_env={"KSCHED_PLUGIN_METRICS_SAMPLE_PERCENT": "100"},
        )
    ) as s:
        yield s


async def test_pods_bound_where_simulate_predicts(stack: Stack, api: ApiClient, tmp_path: Path) -> None:
    zones = {"a": "zone-a", "b": "zone-b", "c": "zone-c"}
    nodes = [
        node("big", cpu="8", labels={"topology.kubernetes.io/zone": zones["a"], "disk": "ssd"}),
        node("mid", cpu="4", labels={"topology.kubernetes.io/zone": zones["b"]}),
        node(
            "small",
            cpu="2",
            labels={"topology.kubernetes.io/zone": zones["c"]},
            taints=[{"key": "dedicated", "value": "batch", "effect": "NoSchedule"}],
        ),
    ]
    await create_nodes(api, nodes)
    workload = [
        pod("needs-ssd", cpu="1", nodeSelector={"disk": "ssd"}),
        pod(
            "tolerates",
            cpu="500m",
            tolerations=[{"key": "dedicated", "operator": "Equal", "value": "batch", "effect": "NoSchedule"}],
            affinity={
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [
                            {
                                "matchExpressions": [
                                    {
                                        "key": "topology.kubernetes.io/zone",
                                        "operator": "In",
                                        "values": [zones["c"]],
                                    }
                                ]
                            }
                        ]
                    }
                }
            },
        ),
        pod(
            "in-b",
            cpu="3",
            affinity={
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [
                            {
                                "matchExpressions": [
                                    {
                                        "key": "topology.kubernetes.io/zone",
                                        "operator": "In",
                                        "values": [zones["b"]],
                                    }
                                ]
                            }
                        ]
                    }
                }
            },
        ),
    ]
    # What ksched simulate decides for the same cluster.
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": nodes + workload}))
    out = await asyncio.to_thread(
        subprocess.run,
        [sys.executable, "-m", "ksched.cli", "simulate", "--cluster", str(cluster), "--output", "json"],
        capture_output=True,
        text=True,
        check=True,
    )
    predicted = {p["pod"].split("/")[1]: p["node"] for p in json.loads(out.stdout)["pods"]}
    assert predicted == {"needs-ssd": "big", "tolerates": "small", "in-b": "mid"}
    await create_pods(api, workload)

    async def bound() -> dict[str, str] | None:
        placed = await pod_nodes(api)
        ours = {k: v for k, v in placed.items() if k in predicted}
        return ours if all(ours.values()) and len(ours) == len(predicted) else None

    assert await eventually(bound, timeout=30) == predicted


async def test_unschedulable_pod_reports_then_schedules_when_a_node_arrives(
    stack: Stack, api: ApiClient
) -> None:
    v1 = client.CoreV1Api(api)
    await create_pods(api, [pod("huge", cpu="64", namespace="default")])

    async def condition() -> str | None:
        p = await v1.read_namespaced_pod("huge", "default")
        for c in p.status.conditions or []:
            if c.type == "PodScheduled" and c.status == "False" and c.reason == "Unschedulable":
                return str(c.message)
        return None

    message = await eventually(condition, timeout=30)
    assert message.startswith("0/") and "Insufficient cpu" in message

    async def failed_event() -> bool:
        events = await client.EventsV1Api(api).list_namespaced_event("default")
        return any(e.reason == "FailedScheduling" and e.regarding.name == "huge" for e in events.items)

    assert await eventually(failed_event, timeout=30)
    await create_nodes(api, [node("giant", cpu="128", memory="512Gi")])

    async def scheduled() -> bool:
        return (await pod_nodes(api)).get("huge") == "giant"

    assert await eventually(scheduled, timeout=60)


def plugin_runs(plugin: str, point: str, status: str = "Success") -> str:
    return (
        f'scheduler_plugin_execution_duration_seconds_count{{extension_point="{point}",'
        f'plugin="{plugin}",status="{status}"}}'
    )


def evaluations(plugin: str, point: str) -> str:
    return (
        f'scheduler_plugin_evaluation_total{{extension_point="{point}",'
        f'plugin="{plugin}",profile="default-scheduler"}}'
    )


def sample_value(text: str, series: str) -> float | None:
    """The value of ``series`` (name and labels, as exposed) in a Prometheus text page."""
    for line in text.splitlines():
        if line.startswith(series + " "):
            return float(line.split()[-1])
    return None


async def test_metrics_after_a_run(stack: Stack, api: ApiClient) -> None:
    import aiohttp

    await create_nodes(api, [node("metrics-node", cpu="1")])  # runs alone too (-k metrics)
    await create_pods(api, [pod("metrics-probe", cpu="10m"), pod("metrics-unfit", cpu="1000")])

    async def bound() -> bool:
        return bool((await pod_nodes(api)).get("metrics-probe"))

    assert await eventually(bound, timeout=30)
    unfit = 'scheduler_unschedulable_pods{plugin="NodeResourcesFit",profile="default-scheduler"}'
    fit_filtered = evaluations("NodeResourcesFit", "Filter")
    expected = {
        "scheduler-0": [
            'scheduler_schedule_attempts_total{profile="default-scheduler",result="scheduled"}',
            'scheduler_framework_extension_point_duration_seconds_count{extension_point="Filter",'
            'profile="default-scheduler",status="Success"}',
            plugin_runs("NodeResourcesFit", "PreFilter"),
            plugin_runs("NodeResourcesFit", "Filter"),
            plugin_runs("NodeResourcesFit", "Filter", "UnschedulableAndUnresolvable"),
            plugin_runs("DefaultPreemption", "PostFilter", "Unschedulable"),
            'scheduler_plugin_execution_duration_seconds_bucket{extension_point="Filter",le="1e-05",'
            'plugin="NodeResourcesFit",status="Success"}',
            "ksched_snapshot_generation",
            fit_filtered,
            evaluations("NodeResourcesFit", "PreFilter"),
            evaluations("TaintToleration", "PreScore"),  # at 0 if no cycle had two feasible nodes
            evaluations("ImageLocality", "Score"),
            # upstream's buckets: 1 ms x 2^i (15) for the attempt and algorithm, 0.1 ms x 2^i (12) for
            # extension points
            'scheduler_scheduling_algorithm_duration_seconds_bucket{le="16.384"}',
            'scheduler_scheduling_attempt_duration_seconds_bucket{le="0.001",profile="default-scheduler",'
            'result="scheduled"}',
            'scheduler_framework_extension_point_duration_seconds_bucket{extension_point="Filter",'
            'le="0.2048",profile="default-scheduler",status="Success"}',
        ],
        "queue": [
            'scheduler_pending_pods{queue="active"}',
            "scheduler_queue_incoming_pods_total{",
            'scheduler_event_handling_duration_seconds_count{event="UnschedulablePodAdd"}',
            'scheduler_event_handling_duration_seconds_count{event="UnschedulablePodDelete"}',
            'scheduler_event_handling_duration_seconds_count{event="AssignedPodAdd"}',
            'scheduler_inflight_events{event="PodPopped"}',
            plugin_runs("SchedulingGates", "PreEnqueue"),
            unfit,
            'scheduler_framework_extension_point_duration_seconds_count{extension_point="PreEnqueue",'
            'profile="default-scheduler",status="Success"}',
        ],
        "informer": ['scheduler_cache_size{type="nodes"}', 'ksched_assume_total{result="accepted"}'],
        "binder-0": [
            'ksched_binder_bindings_total{result="bound"}',
            "scheduler_pod_scheduling_attempts_count",
            'scheduler_pod_scheduling_sli_duration_seconds_count{attempts="1"}',
            plugin_runs("DefaultBinder", "Bind"),
            'scheduler_pod_scheduling_sli_duration_seconds_bucket{attempts="1",le="0.01"}',
            "scheduler_pod_scheduled_after_flush_total",  # nothing here waits out the 5 min flush: 0
        ],
    }
    async with aiohttp.ClientSession() as session:

        async def metrics(service: str) -> str:
            async with session.get(stack.http_url(service) + "/metrics") as resp:
                return await resp.text()

        async def unfit_counted() -> bool:  # between two attempts (not while in flight)
            return (sample_value(await metrics("queue"), unfit) or 0) >= 1

        assert await eventually(unfit_counted, timeout=30)
        for service, names in expected.items():
            text = await metrics(service)
            for name in names:
                assert name in text, f"{service}: {name} missing"
            if service == "scheduler-0":  # counted on every cycle, not sampled
                assert (sample_value(text, fit_filtered) or 0) >= 2  # both pods filtered on metrics-node
            if service == "binder-0":
                assert sample_value(text, "scheduler_pod_scheduled_after_flush_total") == 0
            async with session.get(stack.http_url(service) + "/readyz") as resp:
                assert resp.status == 200
    await client.CoreV1Api(api).delete_namespaced_pod("metrics-unfit", "default")
