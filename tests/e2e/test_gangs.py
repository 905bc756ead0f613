"""Gang scheduling end to end (issue 19; docs/gang.md): every service a process, two scheduler replicas
and two binders on kubesim, GenericWorkload and GangScheduling on.

(a) a group of 8 lands whole; (b) two groups of 6 on room for one: exactly one lands, the other stays
pending with upstream's condition, holding nothing, and lands when room appears; (c) the same with a
kill -9 of each service while the groups are decided; (d) the replica that decided a group killed
right after its commit: the group still ends PodGroupScheduled=True."""

from __future__ import annotations

import asyncio
import json
import signal
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from ksched_scheduler.service import AFTER_GROUP_COMMIT
from kubernetes_asyncio import client
from kubernetes_asyncio.client import ApiClient

from ksched.launcher.stack import Stack, StackOptions
from ksched.service.faults import FAULTS_ENV
from tests import kube
from tests.deploy.rbac import grants_of
from tests.deploy.test_manifests import GANG_GRANTS, render_with_gangs
from tests.e2e.test_rbac import SERVICES, calls_by_service
from tests.e2e.testing import (
    UNDER_LOAD,
    all_bound,
    create_namespace,
    create_nodes,
    create_pods,
    eventually,
    node,
    pod,
    pod_nodes,
    running_stack,
)

pytestmark = pytest.mark.e2e

GATES = "GenericWorkload=true,GangScheduling=true"
GROUP_API = ("scheduling.k8s.io", "v1alpha2")


@pytest.fixture(scope="module")
def hooks(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The fault points' directory (ksched.service.faults): a test arms one by creating its file."""
    return tmp_path_factory.mktemp("hooks")


@pytest.fixture(scope="module")
async def stack(tmp_path_factory: pytest.TempPathFactory, hooks: Path) -> AsyncIterator[Stack]:
    async with running_stack(
        StackOptions(
            workdir=tmp_path_factory.mktemp("gangs"),
            schedulers=2,
            binders=2,
            feature_gates=GATES,
            extra_env={FAULTS_ENV: str(hooks)},
            **UNDER_LOAD,
        )
    ) as s:
        yield s


async def create_gang(api: ApiClient, ns: str, name: str, size: int, pool: str, cpu: str = "1") -> None:
    body = {
        "apiVersion": "scheduling.k8s.io/v1alpha2",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"schedulingPolicy": {"gang": {"minCount": size}}},
    }
    await client.CustomObjectsApi(api).create_namespaced_custom_object(*GROUP_API, ns, "podgroups", body)
    members = [
        pod(
            f"{name}-{i}",
            cpu=cpu,
            namespace=ns,
            nodeSelector={"pool": pool},
            schedulingGroup={"podGroupName": name},
        )
        for i in range(size)
    ]
    await create_pods(api, members)


async def condition(api: ApiClient, ns: str, name: str) -> dict[str, Any] | None:
    group = await client.CustomObjectsApi(api).get_namespaced_custom_object(*GROUP_API, ns, "podgroups", name)
    found = [
        c for c in (group.get("status") or {}).get("conditions") or [] if c["type"] == "PodGroupScheduled"
    ]
    return found[0] if found else None


async def pod_conditions(api: ApiClient, ns: str) -> dict[str, dict[str, Any]]:
    """name -> the PodScheduled condition of every pod of ``ns`` ({} when it has none)."""
    resp = await kube.undecoded(client.CoreV1Api(api).list_namespaced_pod(ns, _preload_content=False))
    try:
        doc = json.loads(await resp.read())
    finally:
        resp.release()
    out = {}
    for p in doc["items"]:
        found = [c for c in p.get("status", {}).get("conditions") or [] if c["type"] == "PodScheduled"]
        out[p["metadata"]["name"]] = found[0] if found else {}
    return out


def bound_per_group(placed: dict[str, str]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for name, node_name in placed.items():
        group = name.rsplit("-", 1)[0]
        counts[group] = counts.get(group, 0) + (1 if node_name else 0)
    return counts


async def test_a_group_of_8_lands_whole(stack: Stack, api: ApiClient) -> None:
    await create_namespace(api, "whole")
    await create_nodes(api, [node(f"whole-{i}", cpu="4", labels={"pool": "whole"}) for i in range(4)])
    await create_gang(api, "whole", "train", 8, "whole")

    await eventually(lambda: all_bound(api, "whole", 8), timeout=60)
    got = await eventually(lambda: condition(api, "whole", "train"), timeout=30)
    assert (got["status"], got["reason"], got["message"]) == ("True", "Scheduled", "")


async def two_groups_for_room_for_one(stack: Stack, api: ApiClient, ns: str, victim: str | None) -> None:
    """Two gangs of 6 on 3 nodes of 2 CPUs (pods of 1 CPU): one lands, the other waits holding nothing
    (whatever service was killed meanwhile), then lands on a second pool of the same size."""
    await create_namespace(api, ns)
    await create_nodes(api, [node(f"{ns}-{i}", cpu="2", labels={"pool": ns}) for i in range(3)])
    await asyncio.gather(create_gang(api, ns, "blue", 6, ns), create_gang(api, ns, "green", 6, ns))
    if victim is not None:
        await stack.kill(victim, signal.SIGKILL)
        await asyncio.sleep(1.0)
        await stack.restart(victim)

    async def one_landed() -> dict[str, int] | None:
        counts = bound_per_group(await pod_nodes(api, ns))
        return counts if sorted(counts.values()) == [0, 6] else None

    counts = await eventually(one_landed, timeout=120, interval=0.5)
    winner = next(g for g, n in counts.items() if n == 6)
    loser = next(g for g, n in counts.items() if n == 0)
    got = await eventually(lambda: condition(api, ns, loser), timeout=60)
    assert (got["status"], got["reason"], got["message"]) == (
        "False",
        "Unschedulable",
        "pod group is unschedulable",
    )

    async def winner_scheduled() -> bool:  # written by the informer from the commit, in the background
        return (await condition(api, ns, winner) or {}).get("status") == "True"

    assert await eventually(winner_scheduled, timeout=30)
    for _ in range(6):  # the loser stays pending and holds nothing while there is no room
        assert bound_per_group(await pod_nodes(api, ns))[loser] == 0
        await asyncio.sleep(0.5)

    # No room is left: each member ends up carrying its filter message (the capture's gang with room
    # for some of its pods gives those the "pod group is unschedulable, waiting for minCount pods"
    # message, which an attempt made while the winner was still landing, or before a killed service
    # was back, shows until the member's next attempt after its backoff).
    async def filter_messages() -> list[dict[str, Any]] | None:
        conditions = await pod_conditions(api, ns)
        waiting = [conditions.get(f"{loser}-{i}", {}) for i in range(6)]
        settled = all(
            c.get("reason") == "Unschedulable"
            and "nodes are available" in c.get("message", "")
            and "Insufficient cpu" in c.get("message", "")
            for c in waiting
        )
        return waiting if settled else None

    await eventually(filter_messages, timeout=60, interval=1.0)
    # Room appears: the loser lands whole.
    await create_nodes(api, [node(f"{ns}-more-{i}", cpu="2", labels={"pool": ns}) for i in range(3)])

    async def both_landed() -> dict[str, int] | None:
        counts = bound_per_group(await pod_nodes(api, ns))
        return counts if counts == {winner: 6, loser: 6} else None

    await eventually(both_landed, timeout=60, interval=0.5)
    await eventually(lambda: _is_true(api, ns, loser), timeout=30)


async def _is_true(api: ApiClient, ns: str, name: str) -> bool:
    return (await condition(api, ns, name) or {}).get("status") == "True"


async def test_two_groups_with_room_for_one(stack: Stack, api: ApiClient) -> None:
    await two_groups_for_room_for_one(stack, api, "rivals", None)


@pytest.mark.parametrize("victim", ["scheduler-0", "binder-0", "queue", "informer"])
async def test_kill_9_while_two_groups_compete(stack: Stack, api: ApiClient, victim: str) -> None:
    await two_groups_for_room_for_one(stack, api, f"kill-{victim}", victim)


async def test_the_outcome_survives_the_replica_killed_right_after_the_commit(
    stack: Stack, api: ApiClient, hooks: Path
) -> None:
    """A gang that did not fit (PodGroupScheduled=False/Unschedulable) gets room; the replica whose
    commit the informer accepts is killed (-9) at once, before anything else of it happens: every
    member is bound all the same and the PodGroup ends PodGroupScheduled=True/Scheduled (written from
    the commit record, not by the replica)."""
    ns = "outcome"
    await create_namespace(api, ns)
    await create_nodes(api, [node(f"{ns}-0", cpu="2", labels={"pool": ns})])
    await create_gang(api, ns, "train", 4, ns)
    got = await eventually(lambda: condition(api, ns, "train"), timeout=60)
    assert (got["status"], got["reason"]) == ("False", "Unschedulable")
    armed = hooks / AFTER_GROUP_COMMIT
    armed.touch()
    victim = ""
    try:
        await create_nodes(api, [node(f"{ns}-1", cpu="2", labels={"pool": ns})])

        async def killed() -> str | None:
            return next(
                (n for n, p in stack.procs.items() if n.startswith("scheduler") and not p.running), None
            )

        victim = await eventually(killed, timeout=60)
        assert not armed.exists()  # it fired: the replica died right after an accepted commit
        log = stack.procs[victim].log_path.read_text(errors="replace")
        assert f"fault point {AFTER_GROUP_COMMIT}: killing this process" in log

        async def all_bound() -> bool:
            return bound_per_group(await pod_nodes(api, ns)) == {"train": 4}

        await eventually(all_bound, timeout=60, interval=0.5)
        await eventually(lambda: _is_true(api, ns, "train"), timeout=30)
        got = await condition(api, ns, "train")
        assert got is not None and (got["status"], got["reason"], got["message"]) == ("True", "Scheduled", "")
    finally:
        armed.unlink(missing_ok=True)
        if victim:
            await stack.restart(victim)


async def test_a_coscheduling_pod_group_lands_whole(stack: Stack, api: ApiClient) -> None:
    """scheduler-plugins' PodGroup (``minMember``) and its pod label, through the adapter."""
    await create_namespace(api, "legacy")
    await create_nodes(api, [node(f"legacy-{i}", cpu="2", labels={"pool": "legacy"}) for i in range(2)])
    body = {
        "apiVersion": "scheduling.x-k8s.io/v1alpha1",
        "kind": "PodGroup",
        "metadata": {"name": "job", "namespace": "legacy"},
        "spec": {"minMember": 5},
    }
    await client.CustomObjectsApi(api).create_namespaced_custom_object(
        "scheduling.x-k8s.io", "v1alpha1", "legacy", "podgroups", body
    )
    members = [
        pod(f"job-{i}", cpu="1", namespace="legacy", nodeSelector={"pool": "legacy"}) for i in range(5)
    ]
    for member in members:
        member["metadata"]["labels"] = {"scheduling.x-k8s.io/pod-group": "job"}
    await create_pods(api, members)
    await asyncio.sleep(3)
    assert bound_per_group(await pod_nodes(api, "legacy")) == {"job": 0}  # 5 pods, room for 4: none
    await create_nodes(api, [node("legacy-2", cpu="2", labels={"pool": "legacy"})])

    async def all_bound() -> bool:
        return bound_per_group(await pod_nodes(api, "legacy")) == {"job": 5}

    await eventually(all_bound, timeout=60, interval=0.5)


async def test_every_alpha_api_call_is_granted_by_the_gang_component(
    stack: Stack, api: ApiClient, tmp_path: Path
) -> None:
    """What the services called of the alpha API (kubesim counts calls per client) is granted by
    deploy/base with components/gang-scheduling, and the component's grants are all used."""
    await create_namespace(api, "rbac-gangs")
    await create_nodes(api, [node("rbac-gangs-0", cpu="4", labels={"pool": "rbac-gangs"})])
    await create_gang(api, "rbac-gangs", "small", 2, "rbac-gangs")
    await create_gang(api, "rbac-gangs", "big", 2, "rbac-gangs", cpu="3")  # never fits: False
    got = await eventually(lambda: condition(api, "rbac-gangs", "small"), timeout=60)
    assert got["status"] == "True"  # the informer's write
    got = await eventually(lambda: condition(api, "rbac-gangs", "big"), timeout=60)
    assert got["status"] == "False"  # a replica's write
    calls = await calls_by_service(api)
    resources = render_with_gangs(tmp_path)
    alpha = {"scheduling.k8s.io", "scheduling.x-k8s.io"}
    for service in SERVICES:
        granted = grants_of(resources, f"ksched-{service}")
        assert calls[service] - granted == set(), f"ksched-{service} calls what its ServiceAccount may not"
        used = {c for c in calls[service] if c[0] in alpha and c[1] != "priorityclasses"}
        assert used == GANG_GRANTS[service], service
