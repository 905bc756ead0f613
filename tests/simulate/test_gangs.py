"""``ksched simulate`` with pod groups (docs/gang.md): the capture session of a real 1.36.2 cluster
(15g-15k: a gang that fits, one with room for 2 of its 3 pods, a pod naming a missing PodGroup)
replayed offline; the same through scheduler-plugins' Coscheduling PodGroup; and without the gates."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ksched.api.files import decode_objects
from ksched.config import default_config
from ksched.config.profile import build_frameworks
from ksched.features import FeatureGates
from ksched.framework.algorithm import ScheduleAlgorithm
from ksched.framework.testing import RefusesNode
from ksched.simulate.cli import main
from ksched.simulate.cluster import build_cluster
from ksched.simulate.runner import Simulation

GATES = "GenericWorkload=true,GangScheduling=true"
FILTER_MESSAGE = (
    "0/2 nodes are available: 2 Insufficient cpu. no new claims to deallocate, preemption: 0/2 nodes are "
    "available: 2 No preemption victims found for incoming pod."
)
GROUP_MESSAGE = (
    "pod group is unschedulable, waiting for minCount pods from a gang to be scheduled, one or more plugins "
    "asked to wait and no plugin rejected pod"
)


def node(name: str) -> dict[str, Any]:
    resources = {"cpu": "2", "memory": "4Gi", "pods": "110"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "status": {"allocatable": resources, "capacity": resources},
    }


def member(name: str, group: str, coscheduling: bool, cpu: str | None = "1") -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "gangs", "uid": f"uid-{name}"}
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "w:1"}]}
    if cpu:
        spec["containers"][0]["resources"] = {"requests": {"cpu": cpu}}
    if coscheduling:
        meta["labels"] = {"scheduling.x-k8s.io/pod-group": group}
    else:
        spec["schedulingGroup"] = {"podGroupName": group}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


def pod_group(name: str, min_count: int, coscheduling: bool) -> dict[str, Any]:
    meta = {"name": name, "namespace": "gangs"}
    if coscheduling:
        spec: dict[str, Any] = {"minMember": min_count}
        return {
            "apiVersion": "scheduling.x-k8s.io/v1alpha1",
            "kind": "PodGroup",
            "metadata": meta,
            "spec": spec,
        }
    spec = {"schedulingPolicy": {"gang": {"minCount": min_count}}}
    return {"apiVersion": "scheduling.k8s.io/v1alpha2", "kind": "PodGroup", "metadata": meta, "spec": spec}


def cluster(tmp_path: Path, coscheduling: bool = False) -> Path:
    """The capture session's cluster (JSON is YAML): two nodes of 2 CPUs, gangs of 1-CPU pods."""
    items = [node("gang-node-0"), node("gang-node-1"), pod_group("fits", 2, coscheduling)]
    items.append(pod_group("too-big", 3, coscheduling))
    items += [member(f"fits-{i}", "fits", coscheduling) for i in range(2)]
    items += [member(f"too-big-{i}", "too-big", coscheduling) for i in range(3)]
    items.append(member("orphan", "missing", coscheduling, cpu=None))
    path = tmp_path / "cluster.yaml"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
    return path


def simulate(path: Path, capsys: pytest.CaptureFixture[str], *gates: str) -> dict[str, dict[str, Any]]:
    assert main(["--cluster", str(path), "--output", "json", *gates]) == 0
    return {p["pod"]: p for p in json.loads(capsys.readouterr().out)["pods"]}


@pytest.mark.parametrize("coscheduling", [False, True], ids=["v1alpha2", "coscheduling"])
def test_groups_are_placed_all_or_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], coscheduling: bool
) -> None:
    pods = simulate(cluster(tmp_path, coscheduling), capsys, "--feature-gates", GATES)
    fits = [pods[f"gangs/fits-{i}"] for i in range(2)]
    assert sorted(p["node"] for p in fits) == ["gang-node-0", "gang-node-1"]
    assert fits[0]["podGroup"] == {
        "name": "gangs/fits",
        "scheduled": True,
        "condition": {"type": "PodGroupScheduled", "status": "True", "reason": "Scheduled", "message": ""},
    }
    too_big = [pods[f"gangs/too-big-{i}"] for i in range(3)]
    assert all(p["node"] is None for p in too_big)
    assert sorted(p["message"] for p in too_big) == sorted([GROUP_MESSAGE, GROUP_MESSAGE, FILTER_MESSAGE])
    assert too_big[0]["podGroup"]["condition"] == {
        "type": "PodGroupScheduled",
        "status": "False",
        "reason": "Unschedulable",
        "message": "pod group is unschedulable",
    }
    orphan = pods["gangs/orphan"]
    assert orphan["gatedBy"] == "GangScheduling"
    assert orphan["message"] == 'waiting for pods\'s pod group "missing" to appear in scheduling queue'


def test_without_the_gates_members_are_scheduled_one_by_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pods = simulate(cluster(tmp_path), capsys)
    placed = [name for name, p in pods.items() if p["node"]]
    assert len(placed) == 5 and all("podGroup" not in p for p in pods.values())  # all but one of too-big


def test_the_table_names_the_group_outcome(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--cluster", str(cluster(tmp_path)), "--feature-gates", GATES]) == 0
    out = capsys.readouterr().out
    assert "pod group gangs/fits: PodGroupScheduled=True (Scheduled)" in out
    assert (
        "pod group gangs/too-big: PodGroupScheduled=False (Unschedulable: pod group is unschedulable)" in out
    )


@pytest.mark.parametrize("gates", [[], ["--feature-gates", GATES]], ids=["gates off", "gates on"])
def test_pods_without_uids_each_get_an_outcome(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], gates: list[str]
) -> None:
    """Files written by hand often carry no uids: every pod is still reported, in queue order."""
    pods = [member(f"p{i}", "train", coscheduling=False) for i in range(3)]
    for p in pods:
        del p["metadata"]["uid"]
        del p["spec"]["schedulingGroup"]
    path = tmp_path / "cluster.yaml"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": [node("n"), *pods]}))
    assert list(simulate(path, capsys, *gates)) == ["gangs/p0", "gangs/p1", "gangs/p2"]


def preempting_gang(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], size: int
) -> dict[str, dict[str, Any]]:
    """``ksched simulate`` of a gang of ``size`` members of 1.2 CPUs and a higher priority, minCount
    ``size``, on two 2-CPU nodes, gang-node-0 holding a low pod of 1.5 CPUs."""
    low = member("low", "none", False, cpu="1500m")
    del low["spec"]["schedulingGroup"]
    low["spec"].update(nodeName="gang-node-0", priority=0)
    members = [member(f"m{i}", "g", False, cpu="1200m") for i in range(size)]
    for m in members:
        m["spec"]["priority"] = 1000
    items = [node("gang-node-0"), node("gang-node-1"), pod_group("g", size, False), low, *members]
    path = tmp_path / "cluster.yaml"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
    return simulate(path, capsys, "--feature-gates", GATES)


def test_a_member_that_needed_victims_in_a_group_left_unschedulable_is_not_nominated(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A gang of three members of 1.2 CPUs and a higher priority, minCount 3, on two 2-CPU nodes, one
    with a low pod of 1.5 CPUs: the first member fits on the free node, the second only by preempting
    the low pod, the third nowhere (the second, of its own priority, is no victim). The group is not
    schedulable and waits for no preemption: upstream's member cycle ran the preemption already
    (PostFilter's actuatePodPreemption evicts the victim), and its end clears the nomination
    (clearNominatedNode), as seed 4101, case 17 of ``ksched differential``'s ``gangs`` found."""
    out = preempting_gang(tmp_path, capsys, 3)
    preempting = [p for p in out.values() if p.get("victims")]
    assert len(preempting) == 1, out
    assert preempting[0]["victims"] == ["gangs/low"] and preempting[0]["nominated"] is None
    assert preempting[0]["message"] == GROUP_MESSAGE
    assert out["gangs/m0"]["podGroup"]["condition"]["status"] == "False"


def test_members_that_fit_while_their_group_waits_for_a_preemption_are_nominated_where_assumed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The same nodes with two members, minCount 2: the first fits on the free node, the second only
    by preempting the low pod; the group waits for that preemption, and upstream nominates the member
    that fit where it was assumed (seed 4102, cases 5, 26 and 38 of ``ksched differential``'s
    ``gangs``)."""
    out = preempting_gang(tmp_path, capsys, 2)
    assert out["gangs/m0"]["nominated"] == "gang-node-1" and out["gangs/m0"]["victims"] == []
    assert out["gangs/m1"]["nominated"] == "gang-node-0" and out["gangs/m1"]["victims"] == ["gangs/low"]
    waiting = "pod group is unschedulable, pod group is waiting for preemption to complete"
    assert out["gangs/m0"]["podGroup"]["condition"]["message"] == waiting


def test_a_preempting_member_whose_reserve_fails_ends_with_that_failure_and_no_nomination() -> None:
    """The two-member gang of :func:`preempting_gang`, Reserve rejecting every pod on gang-node-0: the
    member that preempted there ends, as upstream's ``podGroupPodSchedulingAlgorithm`` ends it, with
    the FitError of that one node and no nomination; its victim, evicted already, stays reported."""
    low = member("low", "none", False, cpu="1500m")
    del low["spec"]["schedulingGroup"]
    low["spec"].update(nodeName="gang-node-0", priority=0)
    gang = [member(f"m{i}", "g", False, cpu="1200m") for i in range(2)]
    for m in gang:
        m["spec"]["priority"] = 1000
    items = [node("gang-node-0"), node("gang-node-1"), pod_group("g", 2, False), low, *gang]
    objects = decode_objects([(f"obj {i}", o) for i, o in enumerate(items)])
    gates = FeatureGates.parse(GATES)
    cluster = build_cluster(objects, ["default-scheduler"])
    frameworks = build_frameworks(default_config(gates=gates), cluster.snapshot)
    frameworks["default-scheduler"].plugins.reserve.append(RefusesNode("gang-node-0"))
    simulation = Simulation(cluster, frameworks, ScheduleAlgorithm(seed=1), group_scheduling=True)
    outcomes = {o.pod: o for o in simulation.run()}
    preempting = outcomes["gangs/m1"]
    assert preempting.message == "0/1 nodes are available: 1 node is being drained."
    assert preempting.nominated is None and preempting.victims == ["gangs/low"] and preempting.node is None
