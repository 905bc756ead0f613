"""Values of the wrong JSON type, as decoding into the Go types rejects them: 400 with Go's
``encoding/json`` text for a request body (innermost Go struct, field path without indexes, Go
type), 422 for a patch whose result does not decode. Found by the kubesim fuzzer
(tests/fuzz/test_kubesim_http.py), which got 500s from kubesim for such bodies; and the
PodDisruptionBudget's minAvailable / maxUnavailable validation (which a bad value crashed later)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.contract.testing import pod_manifest, unique
from tests.fixtures.kubesim import Cluster, Raw

pytestmark = pytest.mark.contract


async def refused(raw: Raw, path: str, kind: str, body: dict[str, Any]) -> str:
    """The message of the 400 ``body`` gets, without the ``cannot be handled`` prefix."""
    resp = await raw.request("POST", path, body=body)
    assert resp.status == 400, resp.body
    message: str = resp.json()["message"]
    prefix = f'{kind} in version "v1" cannot be handled as a {kind}: '
    assert message.startswith(prefix), message
    return message.removeprefix(prefix)


def _lease(name: str, spec: Any) -> dict[str, Any]:
    return {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": name}, "spec": spec}


async def test_a_section_of_the_wrong_type(raw: Raw, cluster: Cluster) -> None:
    path = f"/apis/coordination.k8s.io/v1/namespaces/{cluster.namespace}/leases"
    assert await refused(raw, path, "Lease", _lease(unique("t"), "x")) == (
        "json: cannot unmarshal string into Go struct field Lease.spec of type v1.LeaseSpec"
    )
    assert await refused(raw, path, "Lease", _lease(unique("t"), {"leaseDurationSeconds": "15"})) == (
        "json: cannot unmarshal string into Go struct field LeaseSpec.spec.leaseDurationSeconds of type int32"
    )


@pytest.mark.parametrize(
    ("change", "error"),
    [
        (
            {"metadata": {"labels": {"app": 1}}},
            "json: cannot unmarshal number into Go struct field ObjectMeta.metadata.labels of type string",
        ),
        (
            {"spec": {"tolerations": "all"}},
            "json: cannot unmarshal string into Go struct field PodSpec.spec.tolerations "
            "of type []v1.Toleration",
        ),
        (
            {"spec": {"containers": [{"name": "c", "image": "i", "ports": [{"containerPort": "80"}]}]}},
            "json: cannot unmarshal string into Go struct field "
            "ContainerPort.spec.containers.ports.containerPort of type int32",
        ),
    ],
    ids=["label-value", "tolerations", "container-port"],
)
async def test_pod_fields_of_the_wrong_type(
    raw: Raw, cluster: Cluster, change: dict[str, Any], error: str
) -> None:
    body = pod_manifest(unique("p"))
    for section, values in change.items():
        body[section] = {**body[section], **values}
    assert await refused(raw, f"/api/v1/namespaces/{cluster.namespace}/pods", "Pod", body) == error


async def test_a_patch_making_a_field_the_wrong_type_is_422(raw: Raw, cluster: Cluster) -> None:
    pods = f"/api/v1/namespaces/{cluster.namespace}/pods"
    name = unique("p")
    assert (await raw.request("POST", pods, body=pod_manifest(name))).status == 201
    resp = await raw.request(
        "PATCH",
        f"{pods}/{name}",
        body={"spec": {"tolerations": "all"}},
        content_type="application/merge-patch+json",
    )
    assert resp.status == 422, resp.body
    assert resp.json()["message"].endswith(
        "json: cannot unmarshal string into Go struct field PodSpec.spec.tolerations of type []v1.Toleration"
    )


async def test_type_meta_of_the_wrong_type(raw: Raw, cluster: Cluster) -> None:
    body = pod_manifest(unique("p"))
    body["apiVersion"] = ["v1"]
    resp = await raw.request("POST", f"/api/v1/namespaces/{cluster.namespace}/pods", body=body)
    assert resp.status == 400
    assert resp.json()["message"] == (
        "couldn't get version/kind; json parse error: json: cannot unmarshal array into Go struct field "
        ".apiVersion of type string"
    )


PERCENT = (
    "a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  or '93%', "
    "regex used for validation is '[0-9]+%')"
)


@pytest.mark.parametrize(
    ("field", "value", "detail"),
    [
        ("minAvailable", "half", f'Invalid value: "half": {PERCENT}'),
        ("minAvailable", -1, "Invalid value: -1: must be greater than or equal to 0"),
        ("maxUnavailable", "150%", 'Invalid value: "150%": must not be greater than 100%'),
        ("minAvailable", {"n": 1}, None),
    ],
    ids=["not-a-percent", "negative", "over-100", "object"],
)
async def test_pdb_int_or_percent(
    raw: Raw, cluster: Cluster, field: str, value: Any, detail: str | None
) -> None:
    name = unique("pdb")
    body = {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": name},
        "spec": {field: value, "selector": {"matchLabels": {"app": "x"}}},
    }
    resp = await raw.request(
        "POST", f"/apis/policy/v1/namespaces/{cluster.namespace}/poddisruptionbudgets", body=body
    )
    if detail is None:  # IntOrString decodes a non-string as an int32
        assert resp.status == 400, resp.body
        assert resp.json()["message"].endswith("json: cannot unmarshal object into Go value of type int32")
        return
    assert resp.status == 422, resp.body
    assert resp.json()["message"] == f'PodDisruptionBudget.policy "{name}" is invalid: spec.{field}: {detail}'
