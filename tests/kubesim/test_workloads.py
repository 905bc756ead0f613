"""kubesim's workload controllers (ksched_kubesim.workloads) and garbage collector: Deployments make
ReplicaSets make pods, StatefulSets make ordered pods and revisions, Jobs make pods and complete;
scaling, rollouts and deletion (background, orphan, foreground); the /scale subresource and the
tables kubectl prints. tests/kubesim/test_workloads_vs_real.py compares the same objects with the real
kube-controller-manager's."""

from __future__ import annotations

import copy
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
from ksched_kubesim import KubeSim, KubeSimConfig, LifecycleSettings
from ksched_kubesim.errors import ApiError
from ksched_kubesim.registry import DeleteOptions
from ksched_kubesim.resources import BY_KEY

from tests.polling import until

APPS = "apps/v1"
NS = "default"
TEMPLATE: dict[str, Any] = {
    "metadata": {"labels": {"app": "web"}},
    "spec": {
        "containers": [
            {"name": "c", "image": "registry.k8s.io/pause:3.10", "resources": {"requests": {"cpu": "100m"}}}
        ]
    },
}


@pytest.fixture
async def sim() -> AsyncIterator[KubeSim]:
    config = KubeSimConfig(nodes=2, lifecycle=LifecycleSettings(pod_start_delay=0.05, time_scale=0.01))
    async with KubeSim(config) as running:
        yield running


def deployment(name: str = "web", replicas: int = 2, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": APPS,
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": NS},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": "web"}},
            "template": copy.deepcopy(TEMPLATE),
            **spec,
        },
    }


def pods(sim: KubeSim, **labels: str) -> list[dict[str, Any]]:
    return [
        p
        for p in sim.list_objects("Pod", "v1", NS)
        if labels.items() <= (p["metadata"].get("labels") or {}).items()
    ]


def live(sim: KubeSim, **labels: str) -> list[dict[str, Any]]:
    return [p for p in pods(sim, **labels) if not p["metadata"].get("deletionTimestamp")]


def replica_sets(sim: KubeSim) -> dict[str, dict[str, Any]]:
    return {rs["metadata"]["name"]: rs for rs in sim.list_objects("ReplicaSet", APPS, NS)}


def bind_all(sim: KubeSim) -> int:
    """Bind every unscheduled live pod (the scheduler's part); how many were bound."""
    bound = 0
    for i, pod in enumerate(sim.list_objects("Pod", "v1", NS)):
        if not pod["spec"].get("nodeName") and not pod["metadata"].get("deletionTimestamp"):
            sim.bind(NS, pod["metadata"]["name"], f"node-{i % 2:04d}")
            bound += 1
    return bound


def set_phase(sim: KubeSim, name: str, phase: str) -> None:
    pod = sim.get("Pod", name, NS)
    assert pod is not None
    pod["status"]["phase"] = phase
    sim.update(pod, "status")


async def settled(sim: KubeSim, check: Any, what: str, timeout: float = 10.0) -> Any:
    """Bind what the controllers create until ``check`` holds."""

    def step() -> Any:
        bind_all(sim)
        return check()

    return await until(step, timeout=timeout, what=what)


# --- Deployments -----------------------------------------------------------------------------------


async def test_a_deployment_makes_a_replica_set_named_by_its_template_hash(sim: KubeSim) -> None:
    sim.create(deployment())
    await until(lambda: len(pods(sim)) == 2, what="two pods")
    (rs,) = replica_sets(sim).values()
    d = sim.get("Deployment", "web", NS, APPS)
    assert d is not None
    # the same template as tests/kubesim/test_workload_hash.py: the real controller's name
    assert rs["metadata"]["name"] == "web-798d5ddbbb"
    assert rs["metadata"]["labels"] == {"app": "web", "pod-template-hash": "798d5ddbbb"}
    assert rs["spec"]["selector"] == {"matchLabels": {"app": "web", "pod-template-hash": "798d5ddbbb"}}
    assert rs["metadata"]["annotations"] == {
        "deployment.kubernetes.io/desired-replicas": "2",
        "deployment.kubernetes.io/max-replicas": "3",
        "deployment.kubernetes.io/revision": "1",
    }
    assert rs["metadata"]["ownerReferences"] == [
        {
            "apiVersion": APPS,
            "kind": "Deployment",
            "name": "web",
            "uid": d["metadata"]["uid"],
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    for pod in pods(sim):
        assert pod["metadata"]["generateName"] == "web-798d5ddbbb-"
        assert pod["metadata"]["name"].startswith("web-798d5ddbbb-") and len(pod["metadata"]["name"]) == 20
        assert pod["metadata"]["labels"] == {"app": "web", "pod-template-hash": "798d5ddbbb"}
        assert pod["metadata"]["ownerReferences"][0]["kind"] == "ReplicaSet"
        assert pod["spec"]["enableServiceLinks"] is True  # pod defaults, not the template's
    assert "enableServiceLinks" not in rs["spec"]["template"]["spec"]
    assert d["metadata"]["annotations"] == {"deployment.kubernetes.io/revision": "1"}
    assert d["metadata"]["generation"] == 1


async def test_a_deployment_reports_availability_once_its_pods_run(sim: KubeSim) -> None:
    sim.create(deployment())

    def status() -> dict[str, Any]:
        d = sim.get("Deployment", "web", NS, APPS)
        assert d is not None
        return dict(d["status"])

    done = await settled(sim, lambda: status().get("availableReplicas") == 2 and status(), "available")
    assert {k: v for k, v in done.items() if k != "conditions"} == {
        "observedGeneration": 1,
        "replicas": 2,
        "updatedReplicas": 2,
        "readyReplicas": 2,
        "availableReplicas": 2,
        "terminatingReplicas": 0,
    }
    await until(
        lambda: (
            [c["reason"] for c in status()["conditions"]]
            == ["MinimumReplicasAvailable", "NewReplicaSetAvailable"]
        )
    )
    available, progressing = status()["conditions"]
    assert available["message"] == "Deployment has minimum availability."
    assert progressing["message"] == 'ReplicaSet "web-798d5ddbbb" has successfully progressed.'
    rs = replica_sets(sim)["web-798d5ddbbb"]
    assert rs["status"] == {
        "replicas": 2,
        "fullyLabeledReplicas": 2,
        "readyReplicas": 2,
        "availableReplicas": 2,
        "terminatingReplicas": 0,
        "observedGeneration": 1,
    }


async def test_scaling_a_deployment_scales_its_replica_set(sim: KubeSim) -> None:
    sim.create(deployment(replicas=1))
    await until(lambda: len(pods(sim)) == 1)
    d = sim.get("Deployment", "web", NS, APPS)
    assert d is not None
    d["spec"]["replicas"] = 4
    sim.update(d)
    await until(lambda: len(live(sim)) == 4, what="four pods")
    bind_all(sim)
    d = sim.get("Deployment", "web", NS, APPS)
    assert d is not None
    d["spec"]["replicas"] = 1
    sim.update(d)
    await until(lambda: len(live(sim)) == 1, what="one pod left")
    assert replica_sets(sim)["web-798d5ddbbb"]["spec"]["replicas"] == 1
    assert (
        replica_sets(sim)["web-798d5ddbbb"]["metadata"]["annotations"][
            "deployment.kubernetes.io/desired-replicas"
        ]
        == "1"
    )


async def test_a_template_change_rolls_out_a_new_replica_set(sim: KubeSim) -> None:
    sim.create(deployment(replicas=4))
    await settled(
        sim, lambda: len([p for p in pods(sim) if p["status"]["phase"] == "Running"]) == 4, "running"
    )
    d = sim.get("Deployment", "web", NS, APPS)
    assert d is not None
    d["spec"]["template"]["spec"]["containers"][0]["image"] = "registry.k8s.io/pause:3.9"
    sim.update(d)

    def rolled() -> bool:
        sets = replica_sets(sim)
        new = [rs for name, rs in sets.items() if name != "web-798d5ddbbb"]
        return (
            len(new) == 1
            and new[0]["status"].get("availableReplicas") == 4
            and sets["web-798d5ddbbb"]["spec"]["replicas"] == 0
        )

    await settled(sim, rolled, "the rollout", timeout=20)
    sets = replica_sets(sim)
    (new_name,) = [name for name in sets if name != "web-798d5ddbbb"]
    assert sets[new_name]["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "2"
    assert sets["web-798d5ddbbb"]["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "1"
    d = sim.get("Deployment", "web", NS, APPS)
    assert d is not None and d["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "2"
    await until(lambda: all(p["metadata"]["labels"]["pod-template-hash"] == new_name[4:] for p in live(sim)))


async def test_recreate_replaces_every_pod_before_starting_new_ones(sim: KubeSim) -> None:
    sim.create(deployment(replicas=2, strategy={"type": "Recreate"}))
    await settled(
        sim, lambda: len([p for p in pods(sim) if p["status"]["phase"] == "Running"]) == 2, "running"
    )
    d = sim.get("Deployment", "web", NS, APPS)
    assert d is not None
    assert d["spec"]["strategy"] == {"type": "Recreate"}
    d["spec"]["template"]["spec"]["containers"][0]["image"] = "registry.k8s.io/pause:3.9"
    sim.update(d)
    await until(lambda: replica_sets(sim)["web-798d5ddbbb"]["spec"]["replicas"] == 0, what="old scaled down")
    assert len(replica_sets(sim)) == 1, "no new ReplicaSet while old pods run"
    await until(lambda: len(replica_sets(sim)) == 2, timeout=15, what="the new ReplicaSet after the old pods")
    assert not [p for p in pods(sim) if p["metadata"]["labels"]["pod-template-hash"] == "798d5ddbbb"]


# --- StatefulSets ----------------------------------------------------------------------------------


def stateful_set(replicas: int = 3, **spec: Any) -> dict[str, Any]:
    template = copy.deepcopy(TEMPLATE)
    template["metadata"]["labels"] = {"app": "db"}
    template["spec"]["containers"][0]["resources"]["requests"]["memory"] = "128Mi"
    return {
        "apiVersion": APPS,
        "kind": "StatefulSet",
        "metadata": {"name": "db", "namespace": NS},
        "spec": {
            "serviceName": "db",
            "replicas": replicas,
            "selector": {"matchLabels": {"app": "db"}},
            "template": template,
            **spec,
        },
    }


async def test_a_stateful_set_creates_its_pods_in_order(sim: KubeSim) -> None:
    claim = {
        "metadata": {"name": "data"},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
    }
    sim.create(stateful_set(volumeClaimTemplates=[claim]))
    await until(lambda: len(pods(sim)) == 1, what="db-0")
    (revision,) = sim.list_objects("ControllerRevision", APPS, NS)
    assert revision["metadata"]["name"] == "db-6976cd5d88"  # the real controller's for this template
    assert revision["metadata"]["labels"] == {"app": "db", "controller.kubernetes.io/hash": "6976cd5d88"}
    pod = pods(sim)[0]
    assert pod["metadata"]["name"] == "db-0" and pod["metadata"]["generateName"] == "db-"
    assert pod["metadata"]["labels"] == {
        "app": "db",
        "apps.kubernetes.io/pod-index": "0",
        "controller-revision-hash": "db-6976cd5d88",
        "statefulset.kubernetes.io/pod-name": "db-0",
    }
    assert (pod["spec"]["hostname"], pod["spec"]["subdomain"]) == ("db-0", "db")
    assert pod["spec"]["volumes"][0] == {"name": "data", "persistentVolumeClaim": {"claimName": "data-db-0"}}
    pvc = sim.get("PersistentVolumeClaim", "data-db-0", NS)
    assert pvc is not None and pvc["metadata"]["labels"] == {"app": "db"}
    await settled(
        sim, lambda: {p["metadata"]["name"] for p in pods(sim)} == {"db-0", "db-1", "db-2"}, "db-0..2"
    )
    s = await until(
        lambda: (s := sim.get("StatefulSet", "db", NS, APPS)) and s["status"].get("readyReplicas") == 3 and s
    )
    assert s["status"] == {
        "observedGeneration": 1,
        "replicas": 3,
        "readyReplicas": 3,
        "currentReplicas": 3,
        "updatedReplicas": 3,
        "currentRevision": "db-6976cd5d88",
        "updateRevision": "db-6976cd5d88",
        "collisionCount": 0,
        "availableReplicas": 3,
    }
    s["spec"]["replicas"] = 1
    sim.update(s)
    await until(
        lambda: [p["metadata"]["name"] for p in live(sim)] == ["db-0"], what="scaled down from the top"
    )


async def test_a_stateful_set_template_change_replaces_pods_from_the_top(sim: KubeSim) -> None:
    sim.create(stateful_set(replicas=2, podManagementPolicy="Parallel"))
    await settled(
        sim, lambda: len([p for p in pods(sim) if p["status"]["phase"] == "Running"]) == 2, "running"
    )
    s = sim.get("StatefulSet", "db", NS, APPS)
    assert s is not None
    s["spec"]["template"]["spec"]["containers"][0]["image"] = "registry.k8s.io/pause:3.9"
    sim.update(s)

    def updated() -> bool:
        current = sim.get("StatefulSet", "db", NS, APPS)
        status = (current or {}).get("status") or {}
        revision = status.get("currentRevision")
        return (
            revision == status.get("updateRevision") != "db-6976cd5d88" and status.get("readyReplicas") == 2
        )

    await settled(sim, updated, "the update", timeout=20)
    assert len(sim.list_objects("ControllerRevision", APPS, NS)) == 2
    assert all(p["spec"]["containers"][0]["image"].endswith("3.9") for p in live(sim))


# --- Jobs ------------------------------------------------------------------------------------------


def job(name: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": NS},
        "spec": {
            "template": {
                "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}
            },
            **spec,
        },
    }


async def test_a_job_runs_its_pods_to_completion(sim: KubeSim) -> None:
    created = sim.create(job("calc", completions=3, parallelism=2))
    uid = created["metadata"]["uid"]
    assert created["spec"]["selector"] == {"matchLabels": {"batch.kubernetes.io/controller-uid": uid}}
    assert created["metadata"]["labels"]["job-name"] == "calc"
    await until(lambda: len(pods(sim, **{"job-name": "calc"})) == 2, what="two pods")
    pod = pods(sim)[0]
    assert pod["metadata"]["finalizers"] == ["batch.kubernetes.io/job-tracking"]
    assert pod["metadata"]["generateName"] == "calc-"
    assert pod["metadata"]["labels"]["batch.kubernetes.io/controller-uid"] == uid
    for _ in range(3):
        name = (await until(lambda: [p for p in live(sim) if p["status"]["phase"] != "Succeeded"]))[0][
            "metadata"
        ]["name"]
        set_phase(sim, name, "Succeeded")

    def finished() -> dict[str, Any] | None:
        j = sim.get("Job", "calc", NS, "batch/v1")
        return j if j and j["status"].get("completionTime") else None

    j = await until(finished, what="completion")
    assert j["status"]["succeeded"] == 3
    assert [c["type"] for c in j["status"]["conditions"]] == ["SuccessCriteriaMet", "Complete"]
    await until(
        lambda: all(not p["metadata"].get("finalizers") for p in pods(sim)), what="finalizers removed"
    )


async def test_an_indexed_job_gives_each_pod_its_index(sim: KubeSim) -> None:
    sim.create(job("idx", completions=2, parallelism=2, completionMode="Indexed"))
    await until(lambda: len(pods(sim)) == 2)
    by_index = {
        p["metadata"]["annotations"]["batch.kubernetes.io/job-completion-index"]: p for p in pods(sim)
    }
    assert set(by_index) == {"0", "1"}
    pod = by_index["1"]
    assert pod["metadata"]["generateName"] == "idx-1-"
    assert pod["metadata"]["labels"]["batch.kubernetes.io/job-completion-index"] == "1"
    assert pod["spec"]["hostname"] == "idx-1"
    assert pod["spec"]["containers"][0]["env"] == [
        {
            "name": "JOB_COMPLETION_INDEX",
            "valueFrom": {
                "fieldRef": {
                    "apiVersion": "v1",
                    "fieldPath": "metadata.labels['batch.kubernetes.io/job-completion-index']",
                }
            },
        }
    ]
    set_phase(sim, pod["metadata"]["name"], "Succeeded")
    await until(
        lambda: (j := sim.get("Job", "idx", NS, "batch/v1")) and j["status"].get("completedIndexes") == "1"
    )


async def test_a_job_past_its_backoff_limit_fails(sim: KubeSim) -> None:
    sim.create(job("flaky", backoffLimit=1))
    for _ in range(2):
        name = (await until(lambda: [p for p in live(sim) if p["status"]["phase"] == "Pending"]))[0][
            "metadata"
        ]["name"]
        set_phase(sim, name, "Failed")
    j = await until(
        lambda: (j := sim.get("Job", "flaky", NS, "batch/v1")) and j["status"].get("conditions") and j
    )
    assert [(c["type"], c["reason"]) for c in j["status"]["conditions"]] == [
        ("FailureTarget", "BackoffLimitExceeded"),
        ("Failed", "BackoffLimitExceeded"),
    ]
    assert j["status"]["failed"] == 2


# --- garbage collection ----------------------------------------------------------------------------


async def test_deleting_a_deployment_deletes_its_replica_sets_and_pods(sim: KubeSim) -> None:
    sim.create(deployment())
    await until(lambda: len(pods(sim)) == 2)
    assert sim.delete("Deployment", "web", NS, APPS)
    await until(lambda: not replica_sets(sim) and not pods(sim), what="everything collected")


async def test_an_orphaning_delete_keeps_the_dependents(sim: KubeSim) -> None:
    sim.create(deployment())
    await until(lambda: len(pods(sim)) == 2)
    rt = BY_KEY["deployments.apps"]
    sim.registry.delete(rt, NS, "web", DeleteOptions(propagation="Orphan"))
    await until(lambda: sim.get("Deployment", "web", NS, APPS) is None, what="the deployment gone")
    (rs,) = replica_sets(sim).values()
    assert "ownerReferences" not in rs["metadata"]
    assert len(pods(sim)) == 2
    # a new deployment with the same template adopts the ReplicaSet
    sim.create(deployment())
    await until(lambda: "ownerReferences" in replica_sets(sim)["web-798d5ddbbb"]["metadata"], what="adopted")
    assert len(replica_sets(sim)) == 1


async def test_a_foreground_delete_waits_for_the_dependents(sim: KubeSim) -> None:
    sim.create(deployment())
    await settled(sim, lambda: len([p for p in pods(sim) if p["spec"].get("nodeName")]) == 2, "bound")
    rt = BY_KEY["deployments.apps"]
    sim.registry.delete(rt, NS, "web", DeleteOptions(propagation="Foreground"))
    d = sim.get("Deployment", "web", NS, APPS)
    assert d is not None and d["metadata"]["finalizers"] == ["foregroundDeletion"]
    await until(
        lambda: sim.get("Deployment", "web", NS, APPS) is None, timeout=15, what="deleted after its pods"
    )
    assert not pods(sim) and not replica_sets(sim)


async def test_a_job_deleted_without_a_policy_orphans_its_pods(sim: KubeSim) -> None:
    sim.create(job("calc"))
    await until(lambda: len(pods(sim)) == 1)
    sim.delete("Job", "calc", NS, "batch/v1")
    await until(lambda: sim.get("Job", "calc", NS, "batch/v1") is None, what="the job gone")
    await until(
        lambda: (
            not pods(sim)[0]["metadata"].get("finalizers")
            and not pods(sim)[0]["metadata"].get("ownerReferences")
        )
    )


# --- API -------------------------------------------------------------------------------------------


async def test_scale_subresource_and_tables(sim: KubeSim) -> None:
    sim.create(deployment())
    headers = {"Authorization": f"Bearer {sim.token}"}
    path = f"{sim.url}/apis/apps/v1/namespaces/{NS}/deployments/web/scale"
    async with aiohttp.ClientSession(headers=headers) as http:
        async with http.get(path) as resp:
            scale = await resp.json()
        assert scale["kind"] == "Scale" and scale["apiVersion"] == "autoscaling/v1"
        assert scale["spec"] == {"replicas": 2}
        assert scale["status"]["selector"] == "app=web"
        patch = {"spec": {"replicas": 3}}
        ctype = {"Content-Type": "application/merge-patch+json"}
        async with http.patch(path, json=patch, headers=ctype) as resp:
            assert resp.status == 200 and (await resp.json())["spec"] == {"replicas": 3}
        await until(lambda: len(pods(sim)) == 3)
        accept = {"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"}
        async with http.get(f"{sim.url}/apis/apps/v1/namespaces/{NS}/replicasets", headers=accept) as resp:
            table = await resp.json()
        assert [c["name"] for c in table["columnDefinitions"]] == [
            "Name",
            "Desired",
            "Current",
            "Ready",
            "Age",
            "Containers",
            "Images",
            "Selector",
        ]
        assert table["rows"][0]["cells"][:3] == ["web-798d5ddbbb", 3, 3]


async def test_openapi_lists_the_workload_kinds_for_kubectl(sim: KubeSim) -> None:
    """kubectl validates server-side when the group version's document has the kind's PATCH operation
    with ``fieldValidation``; the document's hash (kubectl's cache key) follows what is served."""
    headers = {"Authorization": f"Bearer {sim.token}"}
    async with aiohttp.ClientSession(headers=headers) as http:
        async with http.get(f"{sim.url}/openapi/v3") as resp:
            index = (await resp.json())["paths"]
        for gv, kinds in (("apis/apps/v1", {"Deployment", "StatefulSet"}), ("apis/batch/v1", {"Job"})):
            async with http.get(sim.url + index[gv]["serverRelativeURL"]) as resp:
                doc = await resp.json()
            patched = {
                op["patch"]["x-kubernetes-group-version-kind"]["kind"]
                for op in doc["paths"].values()
                if any(p["name"] == "fieldValidation" for p in op["patch"]["parameters"])
            }
            assert kinds <= patched


async def test_a_selector_that_does_not_match_the_template_is_invalid(sim: KubeSim) -> None:
    bad = deployment()
    bad["spec"]["selector"] = {"matchLabels": {"app": "other"}}
    with pytest.raises(ApiError) as caught:
        sim.create(bad)
    assert caught.value.code == 422
    assert "spec.template.metadata.labels: Invalid value" in caught.value.body["message"]
    assert "`selector` does not match template `labels`" in caught.value.body["message"]
    never = job("never")
    never["spec"]["template"]["spec"]["restartPolicy"] = "Always"
    with pytest.raises(ApiError) as caught:
        sim.create(never)
    assert 'spec.template.spec.restartPolicy: Unsupported value: "Always"' in caught.value.body["message"]
