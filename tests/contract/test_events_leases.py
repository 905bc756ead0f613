"""Events (core/v1 and events.k8s.io/v1 over the same storage) and Leases (leader election)."""

from __future__ import annotations

import time
import uuid
from typing import Any

import pytest
from kubernetes_asyncio import client
from kubernetes_asyncio.client import ApiClient

from ksched.api.timestamps import micro_time
from ksched.reporting.reporter import PodRef, Reporter
from ksched.service.tasks import TaskGroup
from tests import kube
from tests.contract.testing import unique
from tests.fixtures.kubesim import Cluster, Raw

pytestmark = pytest.mark.contract


def _core_event(name: str, namespace: str) -> dict[str, object]:
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": name, "namespace": namespace},
        "involvedObject": {
            "apiVersion": "v1",
            "kind": "Pod",
            "name": "bind-me",
            "namespace": namespace,
            "uid": "00000000-0000-0000-0000-000000000000",
        },
        "reason": "Scheduled",
        "message": f"Successfully assigned {namespace}/bind-me to node-a",
        "type": "Normal",
        "source": {"component": "default-scheduler"},
        "firstTimestamp": "2026-01-01T00:00:00Z",
        "lastTimestamp": "2026-01-01T00:00:00Z",
        "count": 1,
        "reportingComponent": "default-scheduler",
        "reportingInstance": "default-scheduler-host",
    }


def _new_event(name: str, namespace: str) -> dict[str, object]:
    return {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": {"name": name, "namespace": namespace},
        "eventTime": "2026-01-01T00:00:00.123456Z",
        "reportingController": "default-scheduler",
        "reportingInstance": "default-scheduler-host",
        "action": "Binding",
        "reason": "Scheduled",
        "note": f"Successfully assigned {namespace}/bind-me to node-a",
        "type": "Normal",
        "regarding": {
            "apiVersion": "v1",
            "kind": "Pod",
            "name": "bind-me",
            "namespace": namespace,
            "uid": "00000000-0000-0000-0000-000000000000",
        },
    }


async def test_core_event_round_trips_both_apis(raw: Raw, cluster: Cluster) -> None:
    ns, name = cluster.namespace, unique("core-ev")
    resp = await raw.request("POST", f"/api/v1/namespaces/{ns}/events", body=_core_event(name, ns))
    assert resp.status == 201
    created = resp.json()
    assert created["eventTime"] is None
    assert created["source"] == {"component": "default-scheduler"}
    other = (await raw.get(f"/apis/events.k8s.io/v1/namespaces/{ns}/events/{name}")).json()
    assert other["apiVersion"] == "events.k8s.io/v1"
    assert other["note"] == created["message"]
    assert other["regarding"]["name"] == "bind-me"
    assert other["reportingController"] == "default-scheduler"
    assert other["deprecatedSource"] == {"component": "default-scheduler"}
    assert other["deprecatedFirstTimestamp"] == "2026-01-01T00:00:00Z"
    assert other["deprecatedCount"] == 1
    assert other["eventTime"] is None


async def test_events_api_event_round_trips_both_apis(raw: Raw, cluster: Cluster) -> None:
    ns, name = cluster.namespace, unique("new-ev")
    resp = await raw.request(
        "POST", f"/apis/events.k8s.io/v1/namespaces/{ns}/events", body=_new_event(name, ns)
    )
    assert resp.status == 201
    created = resp.json()
    assert created["eventTime"] == "2026-01-01T00:00:00.123456Z"
    assert created["deprecatedSource"] == {}
    assert created["deprecatedFirstTimestamp"] is None and created["deprecatedLastTimestamp"] is None
    core = (await raw.get(f"/api/v1/namespaces/{ns}/events/{name}")).json()
    assert core["apiVersion"] == "v1"
    assert core["message"] == created["note"]
    assert core["source"] == {} and core["firstTimestamp"] is None and core["lastTimestamp"] is None
    assert core["action"] == "Binding" and core["reportingComponent"] == "default-scheduler"
    assert core["eventTime"] == "2026-01-01T00:00:00.123456Z"


async def test_events_api_requires_event_time(raw: Raw, cluster: Cluster) -> None:
    name = unique("no-time")
    body = _new_event(name, cluster.namespace)
    del body["eventTime"]
    resp = await raw.request(
        "POST", f"/apis/events.k8s.io/v1/namespaces/{cluster.namespace}/events", body=body
    )
    assert resp.status == 422
    assert resp.json()["message"] == f'Event "{name}" is invalid: eventTime: Required value'
    assert resp.json()["details"] == {  # the internal type is core's Event: no group
        "name": name,
        "kind": "Event",
        "causes": [{"reason": "FieldValueRequired", "message": "Required value", "field": "eventTime"}],
    }


async def test_typed_events_client(api: ApiClient, cluster: Cluster) -> None:
    name = unique("typed-ev")
    events = client.EventsV1Api(api)
    created = await events.create_namespaced_event(
        cluster.namespace, kube.body(_new_event(name, cluster.namespace))
    )
    assert created.note.startswith("Successfully assigned")
    listed = await client.CoreV1Api(api).list_namespaced_event(
        cluster.namespace, field_selector=f"metadata.name={name}"
    )
    assert [e.reason for e in listed.items] == ["Scheduled"]


async def test_two_reporters_of_one_placement_leave_one_event(
    api: ApiClient, raw: Raw, cluster: Cluster
) -> None:
    """Two binders report the same placement's binding (a redelivery while the first binder's event
    was still on its way): both name the event by the placement, the API refuses the second (409)."""
    pod = PodRef(cluster.namespace, unique("bound-twice"), str(uuid.uuid4()))
    placed_ns = time.time_ns()
    reporters = [Reporter(raw.api, TaskGroup(), hostname=f"binder-{i}") for i in range(2)]
    for reporter in reporters:
        reporter.scheduled(pod, "node-a", placed_ns)
        await reporter.drain(5.0)
    listed = await client.CoreV1Api(api).list_namespaced_event(
        cluster.namespace, field_selector=f"involvedObject.uid={pod.uid}"
    )
    assert [(e.reason, e.metadata.name) for e in listed.items] == [("Scheduled", f"{pod.name}.{placed_ns:x}")]
    assert [r.failures for r in reporters] == [0, 0]
    # client-go's recorder: reportingInstance is "<reportingController>-<hostname>"
    [written] = listed.items
    assert (written.reporting_component, written.reporting_instance) == (
        "default-scheduler",
        "default-scheduler-binder-0",
    )


# --- leases ----------------------------------------------------------------------------------------


def _lease(name: str, renew: str) -> dict[str, object]:
    return {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": name},
        "spec": {
            "holderIdentity": "sched-1_0a1b2c",
            "leaseDurationSeconds": 15,
            "acquireTime": "2026-01-01T00:00:00.000000Z",
            "renewTime": renew,
            "leaseTransitions": 0,
        },
    }


async def test_lease_create_update_and_conflicts(raw: Raw, cluster: Cluster) -> None:
    path = f"/apis/coordination.k8s.io/v1/namespaces/{cluster.namespace}/leases"
    name = unique("sched")
    created = await raw.request("POST", path, body=_lease(name, "2026-01-01T00:00:00.000000Z"))
    assert created.status == 201
    lease = created.json()
    assert lease["spec"]["acquireTime"] == "2026-01-01T00:00:00.000000Z", "MicroTime keeps six digits"
    assert "generation" not in lease["metadata"]
    lease["spec"]["renewTime"] = "2026-01-01T00:00:02.000000Z"
    updated = await raw.request("PUT", f"{path}/{name}", body=lease)
    assert updated.status == 200
    assert updated.json()["spec"]["renewTime"] == "2026-01-01T00:00:02.000000Z"
    lease["spec"]["renewTime"] = "2026-01-01T00:00:04.000000Z"
    stale = await raw.request("PUT", f"{path}/{name}", body=lease)
    assert stale.status == 409
    assert stale.json()["details"] == {"name": name, "group": "coordination.k8s.io", "kind": "leases"}
    assert stale.json()["message"] == (
        f'Operation cannot be fulfilled on leases.coordination.k8s.io "{name}": the object has been '
        "modified; please apply your changes to the latest version and try again"
    )
    del lease["metadata"]["resourceVersion"]
    unconditional = await raw.request("PUT", f"{path}/{name}", body=lease)
    assert unconditional.status == 422
    assert unconditional.json()["message"] == (
        f'leases.coordination.k8s.io "{name}" is invalid: metadata.resourceVersion: Invalid value: '
        "0: must be "
        "specified for an update"
    )


async def test_typed_lease_client(api: ApiClient, cluster: Cluster) -> None:
    """The typed models hold MicroTimes as datetimes, which kubernetes_asyncio writes with isoformat()
    (no fraction on a whole second, rejected: test_time_formats): they are written back as MicroTime."""
    coordination = client.CoordinationV1Api(api)
    name = unique("typed-lease")
    created = await coordination.create_namespaced_lease(
        cluster.namespace, kube.body(_lease(name, "2026-01-01T00:00:00.000000Z"))
    )
    spec: Any = created.spec  # its datetime fields take the MicroTime strings the API wants
    spec.holder_identity = "sched-2"
    spec.acquire_time = micro_time(spec.acquire_time)
    spec.renew_time = micro_time(spec.renew_time)
    replaced = await coordination.replace_namespaced_lease(name, cluster.namespace, created)
    assert replaced.spec.holder_identity == "sched-2"
    assert micro_time(replaced.spec.renew_time) == "2026-01-01T00:00:00.000000Z"
    assert int(replaced.metadata.resource_version) > int(created.metadata.resource_version)
