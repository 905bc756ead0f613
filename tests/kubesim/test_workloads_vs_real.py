"""kubesim's workload controllers against the real kube-controller-manager 1.36.2 (the session's
``kube136`` control plane): the same Deployment, StatefulSet (with a volume claim template) and Jobs
(NonIndexed and Indexed) are created on both, and what the controllers wrote is compared field by
field with the volatile values masked (uids, resourceVersions, timestamps, the random suffixes of
generated names): ReplicaSet and ControllerRevision names (the hashes), labels, annotations,
ownerReferences, the pods' specs with their defaults, and the status of every workload, first with
the pods pending, then with them Running and Ready (their status written as a kubelet would), then
with the Jobs' pods Succeeded."""

from __future__ import annotations

import difflib
import json
import re
import uuid
from collections.abc import AsyncIterator
from typing import Any

import msgspec
import pytest
from ksched_kubesim import KubeSim

from ksched.launcher.controlplane import ControlPlane
from tests.fixtures.kubesim import Raw, client_for, fast_config, strip_volatile
from tests.polling import until

CONTAINER = {
    "name": "c",
    "image": "registry.k8s.io/pause:3.10",
    "ports": [{"name": "http", "containerPort": 80}],
    "env": [{"name": "POD", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}],
    "resources": {"requests": {"cpu": "0.25", "memory": "128Mi"}, "limits": {"memory": "1.5Gi"}},
    "readinessProbe": {"httpGet": {"path": "/", "port": "http"}},
}


def _template(app: str, **spec: Any) -> dict[str, Any]:
    return {
        "metadata": {"labels": {"app": app}, "annotations": {"note": "a<b&c"}},
        "spec": {"containers": [CONTAINER], "tolerations": [{"key": "k", "operator": "Exists"}], **spec},
    }


OBJECTS: list[tuple[str, dict[str, Any]]] = [
    (
        "apis/apps/v1/namespaces/{ns}/deployments",
        {
            "metadata": {"name": "web", "annotations": {"team": "blue"}},
            "spec": {
                "replicas": 2,
                "selector": {"matchLabels": {"app": "web"}},
                "template": _template("web"),
            },
        },
    ),
    (
        "apis/apps/v1/namespaces/{ns}/statefulsets",
        {
            "metadata": {"name": "db"},
            "spec": {
                "serviceName": "db",
                "replicas": 2,
                "selector": {"matchLabels": {"app": "db"}},
                "template": _template("db"),
                "volumeClaimTemplates": [
                    {
                        "metadata": {"name": "data"},
                        "spec": {
                            "accessModes": ["ReadWriteOnce"],
                            "resources": {"requests": {"storage": "1Gi"}},
                        },
                    }
                ],
            },
        },
    ),
    (
        "apis/batch/v1/namespaces/{ns}/jobs",
        {
            "metadata": {"name": "calc"},
            "spec": {
                "completions": 2,
                "parallelism": 2,
                "template": _template("calc", restartPolicy="Never"),
            },
        },
    ),
    (
        "apis/batch/v1/namespaces/{ns}/jobs",
        {
            "metadata": {"name": "idx"},
            "spec": {
                "completions": 2,
                "parallelism": 2,
                "completionMode": "Indexed",
                "template": _template("idx", restartPolicy="Never"),
            },
        },
    ),
]
KINDS = (
    "apis/apps/v1/namespaces/{ns}/deployments",
    "apis/apps/v1/namespaces/{ns}/replicasets",
    "apis/apps/v1/namespaces/{ns}/statefulsets",
    "apis/apps/v1/namespaces/{ns}/controllerrevisions",
    "apis/batch/v1/namespaces/{ns}/jobs",
    "api/v1/namespaces/{ns}/pods",
    "api/v1/namespaces/{ns}/persistentvolumeclaims",
)
#: generated names: ``<prefix>-`` and five characters of the upstream alphabet
_GENERATED = re.compile(r"^(.+-)[bcdfghjklmnpqrstvwxz2456789]{5}$")
_MORE_VOLATILE = {"lastUpdateTime", "completionTime"}


class Side:
    """One cluster: raw API access and a namespace of its own."""

    def __init__(self, raw: Raw, namespace: str) -> None:
        self.raw = raw
        self.ns = namespace

    async def request(self, method: str, path: str, body: Any = None, ctype: str = "application/json") -> Any:
        resp = await self.raw.request(method, "/" + path.format(ns=self.ns), body=body, content_type=ctype)
        assert resp.status < 300, f"{method} {path}: {resp.status} {resp.body.decode()}"
        return resp.json()

    async def items(self, kind: str) -> list[dict[str, Any]]:
        return list((await self.request("GET", kind))["items"])

    async def snapshot(self) -> dict[str, list[Any]]:
        """Every object of the namespace, masked, per kind."""
        out: dict[str, list[Any]] = {}
        for kind in KINDS:
            items = [_masked(item) for item in await self.items(kind)]
            out[kind.rsplit("/", 1)[1]] = sorted(items, key=lambda o: msgspec.json.encode(o, order="sorted"))
        return out

    async def set_pod_status(self, name: str, status: dict[str, Any]) -> None:
        await self.request(
            "PATCH",
            f"api/v1/namespaces/{{ns}}/pods/{name}/status",
            {"status": status},
            "application/merge-patch+json",
        )


def _masked(obj: Any) -> Any:
    obj = strip_volatile(obj)
    meta = obj.get("metadata") or {}
    if "generateName" in meta and _GENERATED.match(meta.get("name", "")):
        meta["name"] = meta["generateName"] + "*****"
    return _mask_values(obj)


def _mask_values(value: Any) -> Any:
    if isinstance(value, dict):
        return {
            k: "*" if k in _MORE_VOLATILE or k.endswith("controller-uid") else _mask_values(v)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_mask_values(v) for v in value]
    return value


@pytest.fixture
async def sides(
    kube136: ControlPlane, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[tuple[Side, Side]]:
    namespace = f"wl{uuid.uuid4().hex[:6]}"
    async with KubeSim(fast_config()) as sim:
        kubeconfig = sim.write_kubeconfig(tmp_path_factory.mktemp("workloads") / "kubeconfig")
        async with (
            await client_for(kubeconfig) as sim_api,
            await client_for(kube136.admin_kubeconfig) as real_api,
        ):
            pair = (Side(Raw(sim_api), namespace), Side(Raw(real_api), namespace))
            for side in pair:
                await side.request("POST", "api/v1/namespaces", {"metadata": {"name": namespace}})
            try:
                yield pair
            finally:
                await pair[1].request("DELETE", f"api/v1/namespaces/{namespace}")


async def _settle(side: Side, check: Any, what: str) -> dict[str, list[Any]]:
    """The side's snapshot once ``check`` (of the raw objects) holds."""

    async def ready() -> bool:
        return bool(check({kind.rsplit("/", 1)[1]: await side.items(kind) for kind in KINDS}))

    await until(ready, timeout=30, interval=0.2, what=what)
    return await side.snapshot()


def _status(objs: dict[str, list[Any]], kind: str, name: str) -> dict[str, Any]:
    found = [o for o in objs[kind] if o["metadata"]["name"] == name]
    return dict(found[0].get("status") or {}) if found else {}


def _pending(objs: dict[str, list[Any]]) -> bool:
    """Every controller's first step written: 2+1+2+2 pods and the statuses that count them."""
    return (
        len(objs["pods"]) == 7
        and _status(objs, "deployments", "web").get("replicas") == 2
        and len(_status(objs, "deployments", "web").get("conditions") or []) == 2
        and _status(objs, "statefulsets", "db").get("replicas") == 1
        and all(_status(objs, "jobs", j).get("active") == 2 for j in ("calc", "idx"))
        and all(rs.get("status", {}).get("replicas") == 2 for rs in objs["replicasets"])
    )


def _compare(sim: dict[str, list[Any]], real: dict[str, list[Any]], stage: str) -> None:
    for kind in KINDS:
        key = kind.rsplit("/", 1)[1]
        if key == "pods":  # the pods' status is the kubelet's: here kubesim's or the test's
            sim[key] = [{k: v for k, v in p.items() if k != "status"} for p in sim[key]]
            real[key] = [{k: v for k, v in p.items() if k != "status"} for p in real[key]]
        if sim[key] != real[key]:
            before, after = (json.dumps(s[key], indent=1, sort_keys=True).splitlines() for s in (real, sim))
            diff = "\n".join(difflib.unified_diff(before, after, "real", "kubesim", lineterm="", n=2))
            raise AssertionError(f"{stage}: {key} differ:\n{diff}")


async def _run_pods(side: Side, names: set[str], stamp: str) -> set[str]:
    """Mark the pending pods Running and Ready; the names done."""
    done = set()
    for pod in await side.items("api/v1/namespaces/{ns}/pods"):
        name = pod["metadata"]["name"]
        if name in names or pod.get("status", {}).get("phase") != "Pending":
            continue
        condition = {"type": "Ready", "status": "True", "lastTransitionTime": stamp}
        await side.set_pod_status(name, {"phase": "Running", "conditions": [condition]})
        done.add(name)
    return done


async def test_the_workload_controllers_write_what_the_real_ones_write(sides: tuple[Side, Side]) -> None:
    sim, real = sides
    for side in sides:
        for path, body in OBJECTS:
            await side.request("POST", path, body)
    stages = {}
    for name, side in (("kubesim", sim), ("real", real)):
        stages[name] = await _settle(side, _pending, f"{name}: the controllers' first writes")
    _compare(stages["kubesim"], stages["real"], "pods pending")
    names = {rs["metadata"]["name"] for rs in stages["real"]["replicasets"]}
    assert re.fullmatch(r"web-[bcdfghjklmnpqrstvwxz2456789]{8,10}", names.pop()), "a pod-template-hash name"

    stamp = "2026-01-01T00:00:00Z"
    for name, side in (("kubesim", sim), ("real", real)):
        started: set[str] = set()

        async def running(side: Side = side, started: set[str] = started) -> bool:
            started |= await _run_pods(side, started, stamp)
            objs = {kind.rsplit("/", 1)[1]: await side.items(kind) for kind in KINDS}
            return (
                _status(objs, "deployments", "web").get("availableReplicas") == 2
                and _status(objs, "statefulsets", "db").get("availableReplicas") == 2
                and all(_status(objs, "jobs", j).get("ready") == 2 for j in ("calc", "idx"))
                and any(
                    c.get("reason") == "NewReplicaSetAvailable"
                    for c in _status(objs, "deployments", "web").get("conditions") or []
                )
            )

        await until(running, timeout=30, interval=0.2, what=f"{name}: pods running")
        stages[name] = await side.snapshot()
    _compare(stages["kubesim"], stages["real"], "pods running")

    for name, side in (("kubesim", sim), ("real", real)):
        for pod in await side.items("api/v1/namespaces/{ns}/pods"):
            if "job-name" in pod["metadata"].get("labels", {}):
                await side.set_pod_status(pod["metadata"]["name"], {"phase": "Succeeded"})

        async def complete(side: Side = side) -> bool:
            objs = {kind.rsplit("/", 1)[1]: await side.items(kind) for kind in KINDS}
            return all(
                _status(objs, "jobs", j).get("completionTime")
                and not [p for p in objs["pods"] if p["metadata"].get("finalizers")]
                for j in ("calc", "idx")
            )

        await until(complete, timeout=30, interval=0.2, what=f"{name}: jobs complete")
        stages[name] = await side.snapshot()
    _compare(stages["kubesim"], stages["real"], "jobs complete")
