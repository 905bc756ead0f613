"""``scheduler_preemption_attempts_total`` and ``scheduler_preemption_victims`` as upstream counts
them: an attempt at each call of DefaultPreemption's PostFilter, whatever it finds
(``default_preemption.go``'s deferred increment); victims once the executor starts a preemption, not
when every victim is being deleted already (``executor.go``)."""

from __future__ import annotations

from ksched_scheduler.cycle import UNSCHEDULABLE, CycleOutcome, SchedulingCycle
from ksched_scheduler.nominations import NominationTracker
from ksched_scheduler.preemption import PreemptionRunner
from prometheus_client import REGISTRY

from ksched.config import default_config
from ksched.config.profile import build_frameworks
from ksched.framework.algorithm import ScheduleAlgorithm
from ksched.framework.cycle_state import CycleState
from ksched.framework.nominator import Nominator
from ksched.framework.podinfo import PodInfo
from ksched.framework.runtime import Framework
from ksched.framework.snapshot import Snapshot
from ksched.framework.testing import make_node, make_pod, make_snapshot
from ksched.plugins.defaultpreemption import PreemptionResult
from ksched.service.tasks import TaskGroup


def sample(name: str) -> float:
    return REGISTRY.get_sample_value(name) or 0.0


def test_every_post_filter_call_is_a_preemption_attempt() -> None:
    node = make_node("n1", allocatable={"cpu": "2", "memory": "4Gi", "pods": "110"})
    busy = make_pod("busy", requests={"cpu": "2"}, node_name="n1", priority=10)
    snapshot = make_snapshot([node], [busy])
    cycle = SchedulingCycle(
        build_frameworks(default_config(), snapshot), snapshot, ScheduleAlgorithm(seed=1), Nominator()
    )
    before = sample("scheduler_preemption_attempts_total")
    assert cycle.run(make_pod("fits", requests={"cpu": "0"})).kind != UNSCHEDULABLE
    assert sample("scheduler_preemption_attempts_total") == before  # PostFilter did not run
    lower = cycle.run(make_pod("lower", requests={"cpu": "1"}, priority=1))  # nothing it may preempt
    assert lower.kind == UNSCHEDULABLE and not lower.nominated_node
    assert sample("scheduler_preemption_attempts_total") == before + 1
    higher = cycle.run(make_pod("higher", requests={"cpu": "1"}, priority=100))
    assert higher.nominated_node == "n1"
    assert sample("scheduler_preemption_attempts_total") == before + 2


def outcome_with(pod: object, result: PreemptionResult) -> CycleOutcome:
    pi = PodInfo(pod)  # type: ignore[arg-type]
    return CycleOutcome(
        UNSCHEDULABLE, pi, Framework("default-scheduler", Snapshot()), CycleState(), post_filter=result
    )


def test_victims_are_observed_once_a_preemption_starts() -> None:
    runner = PreemptionRunner(None, None, NominationTracker(Nominator()), TaskGroup())
    preemptor = make_pod("preemptor", priority=100)
    live = make_pod("live", priority=1, node_name="n1")
    terminating = make_pod("terminating", priority=1, node_name="n1")
    terminating.metadata.deletion_timestamp = "2026-12-07T20:23:26Z"
    count, total = sample("scheduler_preemption_victims_count"), sample("scheduler_preemption_victims_sum")
    gone = PreemptionResult(nominated_node_name="n1", victims=[PodInfo(terminating)])
    runner.after_failure(outcome_with(preemptor, gone))
    assert sample("scheduler_preemption_victims_count") == count  # no preemption started
    both = PreemptionResult(nominated_node_name="n1", victims=[PodInfo(terminating), PodInfo(live)])
    runner.after_failure(outcome_with(preemptor, both))
    assert sample("scheduler_preemption_victims_count") == count + 1
    assert sample("scheduler_preemption_victims_sum") == total + 2  # every victim of the candidate
