"""scheduling.k8s.io/v1alpha2 as the real 1.36.2 API server serves it with GenericWorkload on (captures
15a-15f, 15k): discovery, Workload and PodGroup defaults, validation errors, a pod naming its group;
and nothing of it with the gate off, as upstream."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
from ksched_kubesim import KubeSim, KubeSimConfig, LifecycleSettings

from ksched.features import FeatureGates
from tests.kubesim.test_captures import Replay

GATES = FeatureGates.parse("GenericWorkload=true,GangScheduling=true")
PODGROUPS = "/apis/scheduling.k8s.io/v1alpha2/namespaces/gangs/podgroups"


@pytest.fixture
async def replay() -> AsyncIterator[Replay]:
    config = KubeSimConfig(lifecycle=LifecycleSettings(enabled=False), feature_gates=GATES)
    async with KubeSim(config) as sim, aiohttp.ClientSession() as session:
        yield Replay(session, sim)


async def test_workload_api_matches_the_captures(replay: Replay) -> None:
    r = replay
    await r.call("POST", "/api/v1/namespaces", body={"metadata": {"name": "gangs"}})
    for name in ("15a", "15b", "15c", "15d", "15e", "15f"):
        await r.check(name)


async def test_pod_naming_a_missing_group_is_accepted(replay: Replay) -> None:
    r = replay
    await r.call("POST", "/api/v1/namespaces", body={"metadata": {"name": "gangs"}})
    orphan = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "orphan"},
        "spec": {
            "schedulingGroup": {"podGroupName": "missing"},
            "containers": [{"name": "c", "image": "w:1"}],
        },
    }
    status, _, _ = await r.call("POST", "/api/v1/namespaces/gangs/pods", body=orphan)
    assert status == 201
    await r.check("15k")


def _group(name: str, policy: dict[str, Any]) -> dict[str, Any]:
    return {"metadata": {"name": name}, "spec": {"schedulingPolicy": policy}}


async def _status_of(r: Replay, method: str, path: str, body: Any) -> tuple[int, Any]:
    status, _, got = await r.call(method, path, body=body)
    return status, got


@pytest.mark.parametrize(
    ("policy", "message"),
    [
        ({}, 'spec.schedulingPolicy: Invalid value: "": must specify one of: `basic`, `gang`'),
        ({"gang": {}}, "spec.schedulingPolicy.gang.minCount: Required value"),
        (
            {"gang": {"minCount": -2}},
            "spec.schedulingPolicy.gang.minCount: Invalid value: -2: must be greater than or equal to 1",
        ),
    ],
)
async def test_pod_group_policy_errors(replay: Replay, policy: dict[str, Any], message: str) -> None:
    await replay.call("POST", "/api/v1/namespaces", body={"metadata": {"name": "gangs"}})
    status, got = await _status_of(replay, "POST", PODGROUPS, _group("bad", policy))
    assert status == 422
    assert got["message"] == f'PodGroup.scheduling.k8s.io "bad" is invalid: {message}'


async def test_pod_group_spec_is_immutable_and_status_takes_conditions(replay: Replay) -> None:
    r = replay
    await r.call("POST", "/api/v1/namespaces", body={"metadata": {"name": "gangs"}})
    _, created = await _status_of(r, "POST", PODGROUPS, _group("pg", {"gang": {"minCount": 2}}))
    changed = {**created, "spec": {**created["spec"], "schedulingPolicy": {"gang": {"minCount": 3}}}}
    status, got = await _status_of(r, "PUT", f"{PODGROUPS}/pg", changed)
    assert status == 422
    assert got["message"].endswith("spec.schedulingPolicy: Invalid value: null: field is immutable")
    condition = {
        "type": "PodGroupScheduled",
        "status": "True",
        "lastTransitionTime": "2026-11-25T12:01:59Z",
        "reason": "Scheduled",
        "message": "",
    }
    status, got = await _status_of(
        r, "PUT", f"{PODGROUPS}/pg/status", {**created, "status": {"conditions": [condition]}}
    )
    assert status == 200 and got["status"]["conditions"] == [condition]
    status, got = await _status_of(
        r,
        "PUT",
        f"{PODGROUPS}/pg/status",
        {**got, "status": {"conditions": [{**condition, "status": "Maybe"}]}},
    )
    assert status == 422 and "status.conditions[0].status: Unsupported value" in got["message"]


async def test_the_alpha_api_is_not_served_with_the_gate_off() -> None:
    config = KubeSimConfig(lifecycle=LifecycleSettings(enabled=False))
    async with KubeSim(config) as sim, aiohttp.ClientSession() as session:
        r = Replay(session, sim)
        status, _, _ = await r.call("GET", "/apis/scheduling.k8s.io/v1alpha2")
        assert status == 404
        status, _, _ = await r.call("GET", PODGROUPS)
        assert status == 404
        _, _, groups = await r.call("GET", "/apis/scheduling.k8s.io")
        assert [v["version"] for v in groups["versions"]] == ["v1"]


async def test_discovery_lists_the_alpha_version_with_the_gate_on(replay: Replay) -> None:
    _, _, group = await replay.call("GET", "/apis/scheduling.k8s.io")
    assert [v["version"] for v in group["versions"]] == ["v1", "v1alpha2"]
    assert group["preferredVersion"]["version"] == "v1"
    _, _, groups = await replay.call("GET", "/apis")
    assert "scheduling.x-k8s.io" in [g["name"] for g in groups["groups"]]


async def test_coscheduling_pod_groups_are_served_as_a_crd(replay: Replay) -> None:
    r = replay
    await r.call("POST", "/api/v1/namespaces", body={"metadata": {"name": "gangs"}})
    body = {
        "apiVersion": "scheduling.x-k8s.io/v1alpha1",
        "kind": "PodGroup",
        "metadata": {"name": "pg"},
        "spec": {"minMember": 3},
    }
    status, _, got = await r.call(
        "POST", "/apis/scheduling.x-k8s.io/v1alpha1/namespaces/gangs/podgroups", body=body
    )
    assert status == 201 and got["spec"]["minMember"] == 3
