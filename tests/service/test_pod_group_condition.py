"""The PodGroupScheduled condition as upstream's ``updatePodGroupCondition`` and apimachinery's
``SetStatusCondition`` write it: set once, the transition time moving only with the status, never
back from True to False; and written through kubesim's podgroups/status."""

from __future__ import annotations

import asyncio
from typing import Any

from ksched_kubesim import KubeSim

from ksched.client.config import api_client
from ksched.features import FeatureGates
from ksched.reporting.reporter import Reporter, set_pod_group_condition
from ksched.service.tasks import TaskGroup
from tests.fixtures.kubesim import fast_config

T0, T1 = "2026-11-25T12:00:00Z", "2026-11-25T12:01:00Z"
UNSCHEDULABLE = ("False", "Unschedulable", "pod group is unschedulable")
SCHEDULED = ("True", "Scheduled", "")


def test_the_first_condition_is_added() -> None:
    assert set_pod_group_condition([], UNSCHEDULABLE, T0) == [
        {
            "type": "PodGroupScheduled",
            "status": "False",
            "lastTransitionTime": T0,
            "reason": "Unschedulable",
            "message": "pod group is unschedulable",
        }
    ]


def test_the_transition_time_moves_with_the_status_only() -> None:
    [first] = set_pod_group_condition([], UNSCHEDULABLE, T0) or []
    assert set_pod_group_condition([first], UNSCHEDULABLE, T1) is None  # nothing changes
    [same_status] = set_pod_group_condition([first], ("False", "SchedulerError", "boom"), T1) or []
    assert same_status["lastTransitionTime"] == T0 and same_status["reason"] == "SchedulerError"
    [scheduled] = set_pod_group_condition([first], SCHEDULED, T1) or []
    assert scheduled["lastTransitionTime"] == T1 and scheduled["status"] == "True"


def test_a_true_condition_is_never_set_back_to_false() -> None:
    [scheduled] = set_pod_group_condition([], SCHEDULED, T0) or []
    assert set_pod_group_condition([scheduled], UNSCHEDULABLE, T1) is None


async def test_the_reporter_writes_the_status_subresource(tmp_path: Any) -> None:
    sim = KubeSim(fast_config(feature_gates=FeatureGates.parse("GenericWorkload=true")))
    await sim.start()
    api = await api_client(str(sim.write_kubeconfig(tmp_path / "kubeconfig")))
    try:
        sim.create(
            {
                "apiVersion": "scheduling.k8s.io/v1alpha2",
                "kind": "PodGroup",
                "metadata": {"name": "pg", "namespace": "default"},
                "spec": {"schedulingPolicy": {"gang": {"minCount": 2}}},
            }
        )
        reporter = Reporter(api, TaskGroup())
        reporter.pod_group_scheduled("default", "pg", *UNSCHEDULABLE)
        await reporter.drain()
        reporter.pod_group_scheduled("default", "pg", *SCHEDULED)
        await reporter.drain()
        reporter.pod_group_scheduled("default", "pg", *UNSCHEDULABLE)  # never back to False
        reporter.pod_group_scheduled("default", "missing", *SCHEDULED)  # no such PodGroup: nothing
        # a commit's True, the informer's to write, not written yet: a later cycle's False waits for it
        sim.create(
            {
                "apiVersion": "scheduling.k8s.io/v1alpha2",
                "kind": "PodGroup",
                "metadata": {"name": "committed", "namespace": "default"},
                "spec": {"schedulingPolicy": {"gang": {"minCount": 1}}},
            }
        )
        reporter.pod_group_committed("default", "committed", uid="u1")
        reporter.pod_group_scheduled("default", "committed", *UNSCHEDULABLE, uid="u1")
        # a PodGroup created again under a committed group's name is another object: its False goes
        again = sim.create(
            {
                "apiVersion": "scheduling.k8s.io/v1alpha2",
                "kind": "PodGroup",
                "metadata": {"name": "again", "namespace": "default"},
                "spec": {"schedulingPolicy": {"gang": {"minCount": 3}}},
            }
        )
        reporter.pod_group_committed("default", "again", uid="deleted-before")
        reporter.pod_group_scheduled("default", "again", *UNSCHEDULABLE, uid=again["metadata"]["uid"])
        await reporter.drain()
        [recreated] = (
            sim.get("PodGroup", "again", "default", api_version="scheduling.k8s.io/v1alpha2") or {}
        )["status"]["conditions"]
        assert (recreated["status"], recreated["reason"], recreated["message"]) == UNSCHEDULABLE
        committed = sim.get("PodGroup", "committed", "default", api_version="scheduling.k8s.io/v1alpha2")
        assert not ((committed or {}).get("status") or {}).get("conditions")
        await asyncio.sleep(0)
        group = sim.get("PodGroup", "pg", "default", api_version="scheduling.k8s.io/v1alpha2") or {}
        [condition] = group["status"]["conditions"]
        assert (condition["status"], condition["reason"], condition["message"]) == SCHEDULED
        assert reporter.failures == 0
    finally:
        await api.close()
        await sim.stop()
