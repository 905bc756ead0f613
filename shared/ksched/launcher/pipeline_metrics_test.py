"""The drop-in's merged /metrics: sums, replica labels, what is left out, valid text."""

from __future__ import annotations

from collections import Counter
from collections.abc import AsyncIterator

import pytest
from aiohttp import web
from prometheus_client import CollectorRegistry, Gauge, generate_latest
from prometheus_client.metrics_core import Metric
from prometheus_client.parser import text_string_to_metric_families

from ksched.launcher.pipeline_metrics import Child, PipelineMetrics, merge

SCHEDULER = """\
# HELP python_info Python platform information
# TYPE python_info gauge
python_info{implementation="CPython",major="3",minor="11",patchlevel="7",version="3.11.7"} 1.0
# HELP process_cpu_seconds_total Total user and system CPU time spent in seconds.
# TYPE process_cpu_seconds_total counter
process_cpu_seconds_total 1.5
# HELP leader_election_master_status Whether this instance is the leader
# TYPE leader_election_master_status gauge
# HELP scheduler_schedule_attempts_total Number of attempts to schedule pods
# TYPE scheduler_schedule_attempts_total counter
scheduler_schedule_attempts_total{profile="default-scheduler",result="scheduled"} {scheduled}
scheduler_schedule_attempts_total{profile="default-scheduler",result="unschedulable"} 1.0
# HELP scheduler_preemption_attempts_total Total preemption attempts
# TYPE scheduler_preemption_attempts_total counter
scheduler_preemption_attempts_total 0.0
# HELP scheduler_preemption_attempts_created Total preemption attempts
# TYPE scheduler_preemption_attempts_created gauge
scheduler_preemption_attempts_created 1.7e+09
# HELP scheduler_scheduling_attempt_duration_seconds Scheduling attempt latency
# TYPE scheduler_scheduling_attempt_duration_seconds histogram
scheduler_scheduling_attempt_duration_seconds_bucket{profile="p",result="scheduled",le="0.001"} 1.0
scheduler_scheduling_attempt_duration_seconds_bucket{profile="p",result="scheduled",le="+Inf"} {scheduled}
scheduler_scheduling_attempt_duration_seconds_count{profile="p",result="scheduled"} {scheduled}
scheduler_scheduling_attempt_duration_seconds_sum{profile="p",result="scheduled"} 0.5
# HELP ksched_snapshot_generation the replica's generation
# TYPE ksched_snapshot_generation gauge
ksched_snapshot_generation 10.0
"""

QUEUE = """\
# HELP scheduler_pending_pods Number of pending pods
# TYPE scheduler_pending_pods gauge
scheduler_pending_pods{queue="active"} 2.0
scheduler_pending_pods{queue="unschedulable"} 1.0
# HELP ksched_bus_bad_messages_total malformed messages
# TYPE ksched_bus_bad_messages_total counter
ksched_bus_bad_messages_total{subject_kind="feed"} 1.0
"""


def families(text: str) -> list[Metric]:
    return list(text_string_to_metric_families(text))


def scheduler(scheduled: int) -> str:
    return SCHEDULER.replace("{scheduled}", f"{scheduled}.0")


def samples(registry_text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    out: dict[tuple[str, tuple[tuple[str, str], ...]], float] = {}
    for family in text_string_to_metric_families(registry_text):
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def exposition(collector: PipelineMetrics) -> str:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(collector)
    return generate_latest(registry).decode()


def test_counters_and_histograms_are_summed_replica_gauges_labelled_the_rest_left_out() -> None:
    merged = merge(
        [
            (Child("queue", "queue", 1), families(QUEUE)),
            (Child("scheduler-0", "scheduler", 2), families(scheduler(3))),
            (Child("scheduler-1", "scheduler", 3), families(scheduler(4))),
        ]
    )
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Fixed(merged))
    text = generate_latest(registry).decode()
    got = samples(text)
    attempts = "scheduler_schedule_attempts_total"
    assert got[(attempts, (("profile", "default-scheduler"), ("result", "scheduled")))] == 7
    assert got[(attempts, (("profile", "default-scheduler"), ("result", "unschedulable")))] == 2
    duration = "scheduler_scheduling_attempt_duration_seconds"
    assert got[(f"{duration}_bucket", (("le", "0.001"), ("profile", "p"), ("result", "scheduled")))] == 2
    assert got[(f"{duration}_count", (("profile", "p"), ("result", "scheduled")))] == 7
    assert got[(f"{duration}_sum", (("profile", "p"), ("result", "scheduled")))] == 1.0
    assert got[("ksched_snapshot_generation", (("replica", "scheduler-0"),))] == 10
    assert got[("ksched_snapshot_generation", (("replica", "scheduler-1"),))] == 10
    assert got[("scheduler_pending_pods", (("queue", "active"),))] == 2  # one queue: as it exports it
    assert got[("ksched_bus_bad_messages_total", (("subject_kind", "feed"),))] == 1
    assert not [name for name, _ in got if name.startswith(("process_", "python_")) or "_created" in name]
    assert "leader_election_master_status" not in text
    types = Counter(line.split()[2] for line in text.splitlines() if line.startswith("# TYPE"))
    helps = Counter(line.split()[2] for line in text.splitlines() if line.startswith("# HELP"))
    assert max(types.values()) == 1 and types == helps


class _Fixed:
    def __init__(self, metrics: list[Metric]) -> None:
        self.metrics = metrics

    def collect(self) -> list[Metric]:
        return self.metrics


@pytest.fixture
async def children() -> AsyncIterator[tuple[list[Child], dict[str, str | None]]]:
    """Two scheduler replicas on loopback; ``texts[name]`` is what each serves (None: HTTP 500)."""
    texts: dict[str, str | None] = {"scheduler-0": scheduler(1), "scheduler-1": scheduler(2)}
    runners: list[web.AppRunner] = []
    found: list[Child] = []
    for name in list(texts):

        async def handler(request: web.Request, name: str = name) -> web.Response:
            text = texts[name]
            return web.Response(text=text) if text is not None else web.Response(status=500)

        app = web.Application()
        app.router.add_get("/metrics", handler)
        runner = web.AppRunner(app)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = runner.addresses[0][1]
        runners.append(runner)
        found.append(Child(name, "scheduler", port))
    try:
        yield found, texts
    finally:
        for runner in runners:
            await runner.cleanup()


async def test_the_launchers_own_series_come_first_and_a_silent_child_keeps_its_last_values(
    children: tuple[list[Child], dict[str, str | None]],
) -> None:
    found, texts = children
    own = CollectorRegistry()
    Gauge("leader_election_master_status", "leader", ["name"], registry=own).labels("kube-scheduler").set(1)
    Gauge("ksched_snapshot_generation", "the launcher's own wins", registry=own).set(99)
    listed: list[Child] = []
    metrics = PipelineMetrics(lambda: listed, own=own)
    await metrics.refresh()
    assert "scheduler_schedule_attempts_total" not in exposition(metrics)  # no pipeline: own only
    listed[:] = found
    await metrics.refresh()
    key = ("scheduler_schedule_attempts_total", (("profile", "default-scheduler"), ("result", "scheduled")))
    assert samples(exposition(metrics))[key] == 3
    texts["scheduler-1"] = None  # answers 500 now: its last values stay, the sum does not drop
    texts["scheduler-0"] = scheduler(5)
    await metrics.refresh()
    text = exposition(metrics)
    assert samples(text)[key] == 7
    assert samples(text)[("leader_election_master_status", (("name", "kube-scheduler"),))] == 1
    assert samples(text)[("ksched_snapshot_generation", ())] == 99
    assert ("ksched_snapshot_generation", (("replica", "scheduler-0"),)) not in samples(text)
    listed[:] = []  # the pipeline stopped
    await metrics.refresh()
    assert "scheduler_schedule_attempts_total" not in exposition(metrics)
