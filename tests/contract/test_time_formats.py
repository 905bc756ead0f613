"""Timestamps as the API server decodes them (captures 17a-17e): ``metav1.MicroTime`` needs exactly
six fractional digits, ``metav1.Time`` is Go's RFC 3339; what does not parse is 400 for a body and 422
for a patch, with Go's error text; what parses is stored in UTC."""

from __future__ import annotations

import json

import pytest
from kubernetes_asyncio import client
from kubernetes_asyncio.client import ApiClient
from kubernetes_asyncio.client.exceptions import ApiException

from tests import kube
from tests.contract.testing import unique
from tests.fixtures.kubesim import Cluster, Raw

pytestmark = pytest.mark.contract

MICRO_LAYOUT = "2006-01-02T15:04:05.000000Z07:00"
ISOFORMAT = "2026-01-01T00:00:00+00:00"  # what datetime.isoformat() and kubernetes_asyncio write


def _lease(name: str, acquire: str | None = "2026-01-01T00:00:00.123456Z") -> dict[str, object]:
    return {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": name},
        "spec": {"holderIdentity": "a", "leaseDurationSeconds": 15, "acquireTime": acquire},
    }


def _leases(cluster: Cluster) -> str:
    return f"/apis/coordination.k8s.io/v1/namespaces/{cluster.namespace}/leases"


def _bad_request(kind: str, value: str, layout: str, value_elem: str, layout_elem: str) -> dict[str, object]:
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": f'{kind} in version "v1" cannot be handled as a {kind}: parsing time "{value}" as '
        f'"{layout}": cannot parse "{value_elem}" as "{layout_elem}"',
        "reason": "BadRequest",
        "code": 400,
    }


@pytest.mark.parametrize(
    ("value", "value_elem"),
    [(ISOFORMAT, "+00:00"), ("2026-01-01T00:00:00Z", "Z"), ("2026-01-01T00:00:00.123Z", ".123Z")],
    ids=["offset-17a", "no-fraction-17b", "three-digits-17c"],
)
async def test_lease_micro_time_needs_six_digits(
    raw: Raw, cluster: Cluster, value: str, value_elem: str
) -> None:
    resp = await raw.request("POST", _leases(cluster), body=_lease(unique("t"), value))
    assert resp.status == 400
    assert resp.json() == _bad_request("Lease", value, MICRO_LAYOUT, value_elem, ".000000")


async def test_micro_time_with_an_offset_is_stored_in_utc(raw: Raw, cluster: Cluster) -> None:
    body = _lease(unique("t"), "2026-01-01T01:30:00.123456+01:30")
    resp = await raw.request("POST", _leases(cluster), body=body)
    assert resp.status == 201
    assert resp.json()["spec"]["acquireTime"] == "2026-01-01T00:00:00.123456Z"


async def _refused_lease(raw: Raw, cluster: Cluster, body: dict[str, object]) -> str:
    """The message of the 400 a Lease ``body`` gets, without the ``cannot be handled`` prefix."""
    resp = await raw.request("POST", _leases(cluster), body=body)
    assert resp.status == 400
    message: str = resp.json()["message"]
    prefix = 'Lease in version "v1" cannot be handled as a Lease: '
    assert message.startswith(prefix)
    return message.removeprefix(prefix)


async def test_micro_time_out_of_range_uses_go_wording(raw: Raw, cluster: Cluster) -> None:
    body = _lease(unique("t"), "2026-02-30T00:00:00.000000Z")
    assert await _refused_lease(raw, cluster, body) == (
        'parsing time "2026-02-30T00:00:00.000000Z": day out of range'
    )


async def test_events_api_event_time_without_fraction_is_400(raw: Raw, cluster: Cluster) -> None:
    """Capture 17e."""
    body = {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": {"name": unique("e")},
        "eventTime": "2026-01-01T00:00:00Z",
        "reportingController": "ksched",
        "reportingInstance": "ksched-1",
        "action": "Scheduling",
        "reason": "Scheduled",
        "type": "Normal",
        "regarding": {"kind": "Pod", "namespace": cluster.namespace, "name": "p"},
        "note": "x",
    }
    path = f"/apis/events.k8s.io/v1/namespaces/{cluster.namespace}/events"
    resp = await raw.request("POST", path, body=body)
    assert resp.status == 400
    assert resp.json() == _bad_request("Event", "2026-01-01T00:00:00Z", MICRO_LAYOUT, "Z", ".000000")


def _core_event(name: str, namespace: str, **times: object) -> dict[str, object]:
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": name},
        "involvedObject": {"kind": "Pod", "namespace": namespace, "name": "p"},
        "reason": "Scheduled",
        "message": "x",
        "type": "Normal",
        "source": {"component": "ksched"},
        **times,
    }


async def test_time_accepts_go_rfc3339_and_keeps_whole_utc_seconds(raw: Raw, cluster: Cluster) -> None:
    """metav1.Time takes an offset, a fraction (any number of digits) or a one-digit hour, and
    drops the fraction."""
    ns = cluster.namespace
    times = {"firstTimestamp": "2026-01-01T01:30:00.987654321+01:30", "lastTimestamp": "2026-01-01T1:00:00Z"}
    body = _core_event(unique("t"), ns, **times)
    resp = await raw.request("POST", f"/api/v1/namespaces/{ns}/events", body=body)
    assert resp.status == 201
    created = resp.json()
    assert created["firstTimestamp"] == "2026-01-01T00:00:00Z"
    assert created["lastTimestamp"] == "2026-01-01T01:00:00Z"


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        (
            "firstTimestamp",
            "2026-01-01",
            'parsing time "2026-01-01" as "2006-01-02T15:04:05Z07:00": cannot parse "" as "T"',
        ),
        (
            "lastTimestamp",
            "2026-01-01T00:00:00",
            'parsing time "2026-01-01T00:00:00" as "2006-01-02T15:04:05Z07:00": cannot parse "" as "Z07:00"',
        ),
        (
            "eventTime",
            "2026-01-01T00:00:00.000000",
            'parsing time "2026-01-01T00:00:00.000000" as "2006-01-02T15:04:05.000000Z07:00": '
            'cannot parse "" as "Z07:00"',
        ),
        (
            "firstTimestamp",
            "2026-13-01T00:00:00Z",
            'parsing time "2026-13-01T00:00:00Z": month out of range',
        ),
    ],
)
async def test_core_event_times_are_parsed_like_go(
    raw: Raw, cluster: Cluster, field: str, value: str, message: str
) -> None:
    ns = cluster.namespace
    body = _core_event(unique("t"), ns, **{field: value})
    resp = await raw.request("POST", f"/api/v1/namespaces/{ns}/events", body=body)
    assert resp.status == 400
    assert resp.json()["message"] == f'Event in version "v1" cannot be handled as a Event: {message}'


async def test_metadata_timestamps_are_parsed_even_though_the_server_sets_them(
    raw: Raw, cluster: Cluster
) -> None:
    body = _lease(unique("t"))
    body["metadata"] = {"name": unique("t"), "creationTimestamp": "yesterday"}
    assert await _refused_lease(raw, cluster, body) == (
        'parsing time "yesterday" as "2006-01-02T15:04:05Z07:00": cannot parse "yesterday" as "2006"'
    )


async def test_a_timestamp_that_is_not_a_string_is_a_type_error(raw: Raw, cluster: Cluster) -> None:
    body = _lease(unique("t"))
    body["spec"] = {"acquireTime": 1767225600}
    assert await _refused_lease(raw, cluster, body) == (
        "json: cannot unmarshal number into Go struct field LeaseSpec.spec.acquireTime of type string"
    )


async def test_merge_patch_with_a_bad_micro_time_is_422(raw: Raw, cluster: Cluster) -> None:
    name = unique("t")
    assert (await raw.request("POST", _leases(cluster), body=_lease(name))).status == 201
    served = (await raw.get(f"{_leases(cluster)}/{name}")).json()
    patch = {"spec": {"renewTime": ISOFORMAT}}
    resp = await raw.request(
        "PATCH", f"{_leases(cluster)}/{name}", body=patch, content_type="application/merge-patch+json"
    )
    assert resp.status == 422
    status = resp.json()
    error = f'parsing time "{ISOFORMAT}" as "{MICRO_LAYOUT}": cannot parse "+00:00" as ".000000"'
    assert status["reason"] == "Invalid"
    # the patched lease as the json-patch library writes it: the objects the patch reached sorted
    spec = dict(sorted({**served["spec"], "renewTime": ISOFORMAT}.items()))
    patched = json.dumps(dict(sorted({**served, "spec": spec}.items())), separators=(",", ":"))
    assert status["message"] == f' "" is invalid: patch: Invalid value: {json.dumps(patched)}: {error}'
    [cause] = status["details"]["causes"]
    assert (cause["reason"], cause["field"]) == ("FieldValueInvalid", "patch")


async def test_strategic_merge_patch_with_a_bad_micro_time_is_422(raw: Raw, cluster: Cluster) -> None:
    name = unique("t")
    assert (await raw.request("POST", _leases(cluster), body=_lease(name))).status == 201
    resp = await raw.request(
        "PATCH",
        f"{_leases(cluster)}/{name}",
        body={"spec": {"renewTime": "now"}},
        content_type="application/strategic-merge-patch+json",
    )
    assert resp.status == 422
    detail = f'parsing time "now" as "{MICRO_LAYOUT}": cannot parse "now" as "2006"'
    assert resp.json() == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": f' "" is invalid: patch: Invalid value: "map[spec:map[renewTime:now]]": {detail}',
        "reason": "Invalid",
        "details": {
            "causes": [
                {
                    "reason": "FieldValueInvalid",
                    "message": f'Invalid value: "map[spec:map[renewTime:now]]": {detail}',
                    "field": "patch",
                }
            ]
        },
        "code": 422,
    }


async def test_typed_client_writes_a_whole_second_micro_time_the_server_rejects(
    api: ApiClient, cluster: Cluster
) -> None:
    """kubernetes_asyncio reads MicroTimes into datetimes and writes them with isoformat(), which has
    no fraction on a whole second: a typed round trip of such a Lease is 400 (see
    test_events_leases.test_typed_lease_client for the way that works)."""
    coordination = client.CoordinationV1Api(api)
    name = unique("typed-lease")
    whole_second = _lease(name, "2026-01-01T00:00:00.000000Z")
    created = await coordination.create_namespaced_lease(cluster.namespace, kube.body(whole_second))
    with pytest.raises(ApiException) as caught:
        await coordination.replace_namespaced_lease(name, cluster.namespace, created)
    assert caught.value.status == 400
    expected = _bad_request("Lease", ISOFORMAT, MICRO_LAYOUT, "+00:00", ".000000")
    assert caught.value.body is not None
    assert json.loads(caught.value.body) == expected
