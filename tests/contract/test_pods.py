"""Pod create/read/update: server defaults, admission effects and error Status objects."""

from __future__ import annotations

import pytest
from kubernetes_asyncio import client
from kubernetes_asyncio.client import ApiClient
from kubernetes_asyncio.client.exceptions import ApiException

from tests import kube
from tests.contract.testing import create_pod, node_manifest, pod_manifest, unique
from tests.fixtures.kubesim import Cluster, Raw

pytestmark = pytest.mark.contract

DEFAULT_TOLERATIONS = [
    {
        "key": "node.kubernetes.io/not-ready",
        "operator": "Exists",
        "effect": "NoExecute",
        "tolerationSeconds": 300,
    },
    {
        "key": "node.kubernetes.io/unreachable",
        "operator": "Exists",
        "effect": "NoExecute",
        "tolerationSeconds": 300,
    },
]


async def test_minimal_pod_gets_the_server_defaults(raw: Raw, cluster: Cluster) -> None:
    name = unique("defaults")
    resp = await raw.request("POST", f"/api/v1/namespaces/{cluster.namespace}/pods", body=pod_manifest(name))
    assert resp.status == 201
    pod = resp.json()
    assert pod["kind"] == "Pod" and pod["apiVersion"] == "v1"
    meta, spec, status = pod["metadata"], pod["spec"], pod["status"]
    assert meta["generation"] == 1 and meta["uid"] and meta["resourceVersion"] and meta["creationTimestamp"]
    assert meta["namespace"] == cluster.namespace
    container = spec["containers"][0]
    assert container["terminationMessagePath"] == "/dev/termination-log"
    assert container["terminationMessagePolicy"] == "File"
    assert container["imagePullPolicy"] == "IfNotPresent"
    assert spec["restartPolicy"] == "Always"
    assert spec["terminationGracePeriodSeconds"] == 30
    assert spec["dnsPolicy"] == "ClusterFirst"
    assert spec["securityContext"] == {}
    assert spec["schedulerName"] == "default-scheduler"
    assert spec["enableServiceLinks"] is True
    assert spec["preemptionPolicy"] == "PreemptLowerPriority"
    assert spec["priority"] == 0
    assert spec["tolerations"] == DEFAULT_TOLERATIONS
    assert status == {"phase": "Pending", "qosClass": "Burstable"}


async def test_untagged_image_pulls_always_and_no_resources_is_best_effort(
    raw: Raw, cluster: Cluster
) -> None:
    body = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": unique("latest")},
        "spec": {"containers": [{"name": "c", "image": "nginx", "ports": [{"containerPort": 80}]}]},
    }
    pod = (await raw.request("POST", f"/api/v1/namespaces/{cluster.namespace}/pods", body=body)).json()
    container = pod["spec"]["containers"][0]
    assert container["imagePullPolicy"] == "Always"
    assert container["resources"] == {}
    assert container["ports"] == [{"containerPort": 80, "protocol": "TCP"}]
    assert pod["status"]["qosClass"] == "BestEffort"


async def test_limits_only_default_requests_and_make_guaranteed(api: ApiClient, cluster: Cluster) -> None:
    body = pod_manifest(unique("guaranteed"))
    body["spec"]["containers"][0]["resources"] = {"limits": {"cpu": "1", "memory": "1Gi"}}
    pod = await client.CoreV1Api(api).create_namespaced_pod(cluster.namespace, kube.body(body))
    assert pod.spec.containers[0].resources.requests == {"cpu": "1", "memory": "1Gi"}
    assert pod.status.qos_class == "Guaranteed"


async def test_quantities_are_canonicalised(api: ApiClient, cluster: Cluster) -> None:
    body = pod_manifest(unique("quantities"))
    body["spec"]["containers"][0]["resources"] = {
        "requests": {"cpu": "0.5", "memory": "1.5Gi"},
        "limits": {"cpu": "1000m", "memory": "2048Mi"},
    }
    pod = await client.CoreV1Api(api).create_namespaced_pod(cluster.namespace, kube.body(body))
    assert pod.spec.containers[0].resources.requests == {"cpu": "500m", "memory": "1536Mi"}
    assert pod.spec.containers[0].resources.limits == {"cpu": "1", "memory": "2Gi"}


async def test_user_tolerations_come_first_and_explicit_ones_are_not_duplicated(
    api: ApiClient, cluster: Cluster
) -> None:
    tolerations = [
        {"key": "dedicated", "operator": "Equal", "value": "batch", "effect": "NoSchedule"},
        {
            "key": "node.kubernetes.io/unreachable",
            "operator": "Exists",
            "effect": "NoExecute",
            "tolerationSeconds": 5,
        },
    ]
    pod = await create_pod(api, cluster.namespace, unique("tol"), tolerations=tolerations)
    got = [(t.key, t.effect, t.toleration_seconds) for t in pod.spec.tolerations]
    assert got == [
        ("dedicated", "NoSchedule", None),
        ("node.kubernetes.io/unreachable", "NoExecute", 5),
        ("node.kubernetes.io/not-ready", "NoExecute", 300),
    ]


async def test_scheduling_gates_give_a_gated_condition(raw: Raw, cluster: Cluster) -> None:
    body = pod_manifest(unique("gated"), schedulingGates=[{"name": "example.com/gate"}])
    pod = (await raw.request("POST", f"/api/v1/namespaces/{cluster.namespace}/pods", body=body)).json()
    [condition] = pod["status"]["conditions"]
    assert condition["type"] == "PodScheduled" and condition["status"] == "False"
    assert condition["reason"] == "SchedulingGated"
    assert condition["message"] == "Scheduling is blocked due to non-empty scheduling gates"
    assert condition["lastProbeTime"] is None and condition["lastTransitionTime"]


async def test_match_label_keys_are_merged_into_selectors(raw: Raw, cluster: Cluster) -> None:
    term = {
        "labelSelector": {"matchLabels": {"app": "web"}},
        "topologyKey": "kubernetes.io/hostname",
        "matchLabelKeys": ["pod-template-hash"],
        "mismatchLabelKeys": ["tier"],
    }
    body = pod_manifest(
        unique("mlk"),
        labels={"app": "web", "pod-template-hash": "abc123", "tier": "fe"},
        affinity={"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}},
        topologySpreadConstraints=[
            {
                "maxSkew": 1,
                "topologyKey": "topology.kubernetes.io/zone",
                "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": {"matchLabels": {"app": "web"}},
                "matchLabelKeys": ["pod-template-hash", "absent"],
            }
        ],
    )
    pod = (await raw.request("POST", f"/api/v1/namespaces/{cluster.namespace}/pods", body=body)).json()
    [tsc] = pod["spec"]["topologySpreadConstraints"]
    assert tsc["labelSelector"] == {
        "matchLabels": {"app": "web"},
        "matchExpressions": [{"key": "pod-template-hash", "operator": "In", "values": ["abc123"]}],
    }
    assert tsc["matchLabelKeys"] == ["pod-template-hash", "absent"]
    [anti] = pod["spec"]["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert anti["labelSelector"]["matchExpressions"] == [
        {"key": "pod-template-hash", "operator": "In", "values": ["abc123"]},
        {"key": "tier", "operator": "NotIn", "values": ["fe"]},
    ]


async def test_pod_created_on_a_node_copies_its_topology_labels(api: ApiClient, cluster: Cluster) -> None:
    core = client.CoreV1Api(api)
    node = node_manifest(cluster, unique("topo"), zone="zone-7")
    node["metadata"]["labels"]["topology.kubernetes.io/region"] = "region-9"
    await core.create_node(kube.body(node))
    pod = await create_pod(api, cluster.namespace, unique("onnode"), nodeName=node["metadata"]["name"])
    assert pod.metadata.labels["topology.kubernetes.io/zone"] == "zone-7"
    assert pod.metadata.labels["topology.kubernetes.io/region"] == "region-9"


async def test_generate_name(api: ApiClient, cluster: Cluster) -> None:
    body = pod_manifest("")
    body["metadata"] = {"generateName": "gen-"}
    pod = await client.CoreV1Api(api).create_namespaced_pod(cluster.namespace, kube.body(body))
    assert pod.metadata.name.startswith("gen-") and len(pod.metadata.name) == len("gen-") + 5


# --- errors ----------------------------------------------------------------------------------------


async def test_create_twice_is_409_already_exists(raw: Raw, cluster: Cluster) -> None:
    name = unique("twice")
    path = f"/api/v1/namespaces/{cluster.namespace}/pods"
    assert (await raw.request("POST", path, body=pod_manifest(name))).status == 201
    resp = await raw.request("POST", path, body=pod_manifest(name))
    assert resp.status == 409
    assert resp.json() == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": f'pods "{name}" already exists',
        "reason": "AlreadyExists",
        "details": {"name": name, "kind": "pods"},
        "code": 409,
    }


async def test_get_missing_is_404(raw: Raw, cluster: Cluster) -> None:
    resp = await raw.get(f"/api/v1/namespaces/{cluster.namespace}/pods/nope")
    assert resp.status == 404
    assert resp.json() == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": 'pods "nope" not found',
        "reason": "NotFound",
        "details": {"name": "nope", "kind": "pods"},
        "code": 404,
    }


async def test_typed_client_raises_api_exception_on_404(api: ApiClient, cluster: Cluster) -> None:
    with pytest.raises(ApiException) as info:
        await client.CoreV1Api(api).read_namespaced_pod("nope", cluster.namespace)
    assert info.value.status == 404


async def test_invalid_pod_is_422_with_causes(raw: Raw, cluster: Cluster) -> None:
    body = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "Bad_Name"},
        "spec": {"containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": "-1"}}}]},
    }
    resp = await raw.request("POST", f"/api/v1/namespaces/{cluster.namespace}/pods", body=body)
    assert resp.status == 422
    status = resp.json()
    assert status["reason"] == "Invalid"
    assert status["message"] == (
        'Pod "Bad_Name" is invalid: [metadata.name: Invalid value: "Bad_Name": a lowercase RFC 1123 '
        "subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end "
        "with an alphanumeric character (e.g. 'example.com', regex used for validation is "
        "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*'), "
        'spec.containers[0].resources.requests[cpu]: Invalid value: "-1": must be greater than or equal to 0]'
    )
    assert status["details"]["kind"] == "Pod"
    fields = [(c["reason"], c["field"]) for c in status["details"]["causes"]]
    assert fields == [
        ("FieldValueInvalid", "metadata.name"),
        ("FieldValueInvalid", "spec.containers[0].resources.requests[cpu]"),
    ]
    assert (
        status["details"]["causes"][1]["message"] == 'Invalid value: "-1": must be greater than or equal to 0'
    )


async def test_pod_in_missing_namespace_is_404(raw: Raw, cluster: Cluster) -> None:
    resp = await raw.request(
        "POST", f"/api/v1/namespaces/{cluster.prefix}-nowhere/pods", body=pod_manifest("p")
    )
    assert resp.status == 404
    assert resp.json()["details"] == {"name": f"{cluster.prefix}-nowhere", "kind": "namespaces"}


async def test_put_with_stale_resource_version_is_409(raw: Raw, api: ApiClient, cluster: Cluster) -> None:
    name = unique("stale")
    path = f"/api/v1/namespaces/{cluster.namespace}/pods/{name}"
    created = (
        await raw.request("POST", f"/api/v1/namespaces/{cluster.namespace}/pods", body=pod_manifest(name))
    ).json()
    await client.CoreV1Api(api).patch_namespaced_pod(
        name, cluster.namespace, {"metadata": {"labels": {"bump": "1"}}}
    )
    created["metadata"].setdefault("labels", {})["edited"] = "yes"
    resp = await raw.request("PUT", path, body=created)
    assert resp.status == 409
    assert resp.json()["message"] == (
        f'Operation cannot be fulfilled on pods "{name}": the object has been modified; please apply your '
        "changes to the latest version and try again"
    )


async def test_put_with_current_resource_version_updates_labels(raw: Raw, cluster: Cluster) -> None:
    name = unique("put")
    path = f"/api/v1/namespaces/{cluster.namespace}/pods/{name}"
    created = (
        await raw.request("POST", f"/api/v1/namespaces/{cluster.namespace}/pods", body=pod_manifest(name))
    ).json()
    created["metadata"]["labels"] = {"edited": "yes"}
    created["status"]["phase"] = "Running"
    resp = await raw.request("PUT", path, body=created)
    assert resp.status == 200
    updated = resp.json()
    assert updated["metadata"]["labels"] == {"edited": "yes"}
    assert updated["status"]["phase"] == "Pending", "PUT on the pod itself ignores status"
    assert int(updated["metadata"]["resourceVersion"]) > int(created["metadata"]["resourceVersion"])
    assert updated["metadata"]["generation"] == 1


async def test_pod_spec_is_mostly_immutable(raw: Raw, cluster: Cluster) -> None:
    name = unique("immutable")
    created = (
        await raw.request("POST", f"/api/v1/namespaces/{cluster.namespace}/pods", body=pod_manifest(name))
    ).json()
    created["spec"]["restartPolicy"] = "Never"
    resp = await raw.request("PUT", f"/api/v1/namespaces/{cluster.namespace}/pods/{name}", body=created)
    assert resp.status == 422
    [cause] = resp.json()["details"]["causes"]
    assert cause["field"] == "spec" and cause["reason"] == "FieldValueForbidden"
    assert cause["message"].startswith("Forbidden: pod updates may not change fields other than")


async def test_image_update_bumps_generation(api: ApiClient, cluster: Cluster) -> None:
    name = unique("image")
    await create_pod(api, cluster.namespace, name)
    patch = {"spec": {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.9"}]}}
    pod = await client.CoreV1Api(api).patch_namespaced_pod(name, cluster.namespace, patch)
    assert pod.spec.containers[0].image == "registry.k8s.io/pause:3.9"
    assert pod.metadata.generation == 2
