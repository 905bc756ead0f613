"""Values of the wrong JSON type, as decoding into the Go types rejects them: 400 with Go's
``encoding/json`` text for a request body (innermost Go struct, field path without indexes, Go
type), 422 for a patch whose result does not decode. Found by the kubesim fuzzer
(tests/fuzz/test_kubesim_http.py), which got 500s from kubesim for such bodies; and the
PodDisruptionBudget's minAvailable / maxUnavailable validation (which a bad value crashed later)."""

from __future__ import annotations

import json
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
    """The 422 quotes the merge patch's result as the API server's json-patch library writes it: the
    objects the patch merges into (the document, ``spec``) with sorted keys, the rest as served."""
    pods = f"/api/v1/namespaces/{cluster.namespace}/pods"
    name = unique("p")
    assert (await raw.request("POST", pods, body=pod_manifest(name))).status == 201
    served = (await raw.get(f"{pods}/{name}")).json()
    resp = await raw.request(
        "PATCH",
        f"{pods}/{name}",
        body={"spec": {"tolerations": "all"}},
        content_type="application/merge-patch+json",
    )
    assert resp.status == 422, resp.body
    patched = dict(
        sorted({**served, "spec": dict(sorted({**served["spec"], "tolerations": "all"}.items()))}.items())
    )
    quoted = json.dumps(json.dumps(patched, separators=(",", ":"), ensure_ascii=False), ensure_ascii=False)
    assert resp.json()["message"] == (
        f' "" is invalid: patch: Invalid value: {quoted}: json: cannot unmarshal string into Go struct field '
        "PodSpec.spec.tolerations of type []v1.Toleration"
    )


UNRECOGNIZED = "the object provided is unrecognized (must be of type {kind}): "
NO_TYPE_META = "couldn't get version/kind; json parse error: "
TYPE_META_STRUCT = (
    'struct { APIVersion string "json:\\"apiVersion,omitempty\\""; Kind string "json:\\"kind,omitempty\\"" }'
)


@pytest.mark.parametrize(
    ("data", "error"),
    [
        (
            b'{"apiVersion":["v1"],"kind":"Pod","metadata":{"name":"x"}}',
            NO_TYPE_META + "json: cannot unmarshal array into Go struct field .apiVersion of type string "
            '({"apiVersion":["v1"],"kind":"P ...)',
        ),
        (
            b'{"kind":5}',
            NO_TYPE_META
            + 'json: cannot unmarshal number into Go struct field .kind of type string ({"kind":5})',
        ),
        (b"", NO_TYPE_META + "unexpected end of JSON input (<empty>)"),
        (
            b"[1]",
            NO_TYPE_META + f"json: cannot unmarshal array into Go value of type {TYPE_META_STRUCT} (5b315d)",
        ),
        (
            b'"x"',
            NO_TYPE_META + f"json: cannot unmarshal string into Go value of type {TYPE_META_STRUCT} (227822)",
        ),
        (b'{"a":', NO_TYPE_META + 'unexpected end of JSON input ({"a":)'),
        (
            b'{"apiVersion":"v1","kind":"Pod"} x',
            NO_TYPE_META
            + 'invalid character \'x\' after top-level value ({"apiVersion":"v1","kind":"Pod ...)',
        ),
        (
            b'{"metadata":{"name":"a\\q"}}',
            NO_TYPE_META + 'invalid escape sequence `\\q` in string ({"metadata":{"name":"a\\q"}})',
        ),
        (b'{"a":1.}', NO_TYPE_META + "invalid character '}' in numeric literal ({\"a\":1.})"),
        (b'{"a":tru}', NO_TYPE_META + "invalid character '}' in literal true (expecting 'e') ({\"a\":tru})"),
        (b'{"a":"\x01"}', NO_TYPE_META + 'invalid character \'\\x01\' in string ({"a":"\x01"})'),
        (b"\xc3\xa9", NO_TYPE_META + "invalid character 'é' looking for beginning of value (c3a9)"),
        (
            b' {"kind":[]}',
            NO_TYPE_META + "json: cannot unmarshal array into Go struct field .kind of type string "
            "(207b226b696e64223a5b5d7d)",
        ),
    ],
    ids=[
        "api-version-array",
        "kind-number",
        "empty",
        "array",
        "string",
        "cut-short",
        "trailing",
        "escape",
        "number",
        "literal",
        "control-character",
        "not-json",
        "leading-space",
    ],
)
async def test_a_body_whose_type_meta_does_not_read(
    raw: Raw, cluster: Cluster, data: bytes, error: str
) -> None:
    """The 400 names the expected kind, Go's error and the body's first 30 bytes (hex unless it
    starts with ``{``)."""
    resp = await raw.send("POST", f"/api/v1/namespaces/{cluster.namespace}/pods", data)
    assert resp.status == 400, resp.body
    assert resp.json()["message"] == UNRECOGNIZED.format(kind="Pod") + error


async def test_the_type_meta_of_yaml_and_of_subresources(raw: Raw, cluster: Cluster) -> None:
    pods = f"/api/v1/namespaces/{cluster.namespace}/pods"
    yaml_body = b"apiVersion: [v1]\nkind: Pod\n"
    resp = await raw.send("POST", pods, yaml_body, "application/yaml")
    assert resp.status == 400, resp.body
    assert resp.json()["message"] == UNRECOGNIZED.format(kind="Pod") + NO_TYPE_META + (
        f"json: cannot unmarshal array into Go struct field .apiVersion of type string ({yaml_body.hex()})"
    )
    name = unique("p")
    assert (await raw.request("POST", pods, body=pod_manifest(name))).status == 201
    for subresource, kind in (("binding", "Binding"), ("eviction", "Eviction")):
        resp = await raw.send("POST", f"{pods}/{name}/{subresource}", b"[]")
        assert resp.status == 400, resp.body
        assert resp.json()["message"] == UNRECOGNIZED.format(kind=kind) + NO_TYPE_META + (
            f"json: cannot unmarshal array into Go value of type {TYPE_META_STRUCT} (5b5d)"
        )
    resp = await raw.send("PUT", f"{pods}/{name}", b'{"kind":true}')
    assert resp.status == 400, resp.body
    assert resp.json()["message"] == UNRECOGNIZED.format(kind="Pod") + NO_TYPE_META + (
        'json: cannot unmarshal bool into Go struct field .kind of type string ({"kind":true})'
    )


async def test_null_is_an_empty_object(raw: Raw, cluster: Cluster) -> None:
    pods = f"/api/v1/namespaces/{cluster.namespace}/pods"
    for data in (b"null", b"{}", b"apiVersion: v1\n"):
        content_type = "application/yaml" if data.startswith(b"api") else "application/json"
        resp = await raw.send("POST", pods, data, content_type)
        assert resp.status == 422, resp.body
        assert resp.json()["message"] == (
            'Pod "" is invalid: [metadata.name: Required value: name or generateName is required, '
            "spec.containers: Required value]"
        )


async def test_metadata_of_the_wrong_type(raw: Raw, cluster: Cluster) -> None:
    body = {**pod_manifest(unique("p")), "metadata": ["x"]}
    resp = await raw.request("POST", f"/api/v1/namespaces/{cluster.namespace}/pods", body=body)
    assert resp.status == 400, resp.body
    assert resp.json()["message"] == (
        'Pod in version "v1" cannot be handled as a Pod: json: cannot unmarshal array into Go struct field '
        "Pod.metadata of type v1.ObjectMeta"
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
    ],
    ids=["not-a-percent", "negative", "over-100"],
)
async def test_pdb_int_or_percent(raw: Raw, cluster: Cluster, field: str, value: Any, detail: str) -> None:
    name = unique("pdb")
    resp = await raw.request("POST", _pdbs(cluster), body=_pdb(name, {field: value}))
    assert resp.status == 422, resp.body
    assert resp.json()["message"] == f'PodDisruptionBudget.policy "{name}" is invalid: spec.{field}: {detail}'


async def test_pdb_with_both_bounds(raw: Raw, cluster: Cluster) -> None:
    """The error shows the spec as the internal Go type prints (field names, every field)."""
    name = unique("pdb")
    body = _pdb(name, {"minAvailable": 1, "maxUnavailable": "50%"})
    body["spec"]["selector"] = {"matchLabels": {"b": "2", "a": "1"}}
    resp = await raw.request("POST", _pdbs(cluster), body=body)
    assert resp.status == 422, resp.body
    assert resp.json()["message"] == (
        f'PodDisruptionBudget.policy "{name}" is invalid: spec: Invalid value: {{"MinAvailable":1,"Selector":'
        '{"matchLabels":{"a":"1","b":"2"}},"MaxUnavailable":"50%","UnhealthyPodEvictionPolicy":null}: '
        "minAvailable and maxUnavailable cannot be both set"
    )


def _pdbs(cluster: Cluster) -> str:
    return f"/apis/policy/v1/namespaces/{cluster.namespace}/poddisruptionbudgets"


def _pdb(name: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": name},
        "spec": {**spec, "selector": {"matchLabels": {"app": "x"}}},
    }


@pytest.mark.parametrize(
    ("field", "value", "json_value"),
    [
        ("minAvailable", {"n": 1}, "object"),
        ("maxUnavailable", [1], "array"),
        ("maxUnavailable", True, "bool"),
        ("minAvailable", 1.5, "number 1.5"),
        ("minAvailable", 2**31, "number 2147483648"),
    ],
    ids=["object", "array", "bool", "fraction", "beyond-int32"],
)
async def test_pdb_int_or_percent_of_another_type(
    raw: Raw, cluster: Cluster, field: str, value: Any, json_value: str
) -> None:
    """IntOrString decodes what is no string as an int32; the error names the field."""
    resp = await raw.request("POST", _pdbs(cluster), body=_pdb(unique("pdb"), {field: value}))
    assert resp.status == 400, resp.body
    assert resp.json()["message"] == (
        'PodDisruptionBudget in version "v1" cannot be handled as a PodDisruptionBudget: json: cannot '
        f"unmarshal {json_value} into Go struct field PodDisruptionBudgetSpec.spec.{field} of type int32"
    )


SCHEME = 'in scheme "pkg/runtime/scheme.go:111"'


@pytest.mark.parametrize(
    ("path", "body", "message"),
    [
        (
            "pods",
            {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n"}},
            'Node in version "v1" cannot be handled as a Pod: converting (v1.Node) to (core.Pod): '
            "unknown conversion",
        ),
        (
            "pods",
            {"apiVersion": "v1", "kind": "Node", "spec": 5},
            'Node in version "v1" cannot be handled as a Pod: json: cannot unmarshal number into '
            "Go struct field Node.spec of type v1.NodeSpec",
        ),
        (
            "pods",
            {"apiVersion": "apps/v1", "kind": "Pod"},
            'Pod in version "v1" cannot be handled as a Pod: no kind "Pod" is registered for '
            f'version "apps/v1" {SCHEME}',
        ),
        (
            "pods",
            {"apiVersion": "batch/v1", "kind": "Job"},
            'Job in version "v1" cannot be handled as a Pod: converting (v1.Job) to (core.Pod): '
            "unknown conversion",
        ),
        (
            "leases",
            {"apiVersion": "coordination.k8s.io/v1beta1", "kind": "Lease"},
            "the API version in the data (coordination.k8s.io/v1beta1) does not match the expected "
            "API version (coordination.k8s.io/v1)",
        ),
        (
            "leases",
            {"apiVersion": "v1", "kind": "DeleteOptions"},
            'DeleteOptions in version "v1" cannot be handled as a Lease: converting (v1.DeleteOptions) to '
            "(coordination.Lease): unknown conversion",
        ),
        (
            "events",
            {"apiVersion": "events.k8s.io/v1", "kind": "Event"},
            "the API version in the data (events.k8s.io/v1) does not match the expected API version (v1)",
        ),
        (
            "events.k8s.io",
            {"apiVersion": "v1", "kind": "Node"},
            'Node in version "v1" cannot be handled as a Event: converting (v1.Node) to '
            "(core.Event): unknown conversion",
        ),
        (
            "poddisruptionbudgets",
            {"apiVersion": "v1", "kind": "PodDisruptionBudget"},
            'PodDisruptionBudget in version "v1" cannot be handled as a PodDisruptionBudget: no kind '
            f'"PodDisruptionBudget" is registered for version "v1" {SCHEME}',
        ),
        (
            "pods",
            {"apiVersion": "a/b/c", "kind": "Pod"},
            "the object provided is unrecognized (must be of type Pod): unexpected GroupVersion "
            "string: a/b/c "
            '({"apiVersion": "a/b/c", "kind" ...)',
        ),
    ],
    ids=[
        "another-kind",
        "another-kind-of-the-wrong-type",
        "a-group-without-the-kind",
        "a-kind-of-another-group",
        "another-version",
        "an-options-kind",
        "events-api-event-on-core",
        "node-on-the-events-api",
        "core-version-for-policy",
        "three-part-api-version",
    ],
)
async def test_a_body_of_another_kind_or_version(
    raw: Raw, cluster: Cluster, path: str, body: dict[str, Any], message: str
) -> None:
    """Decoded as the type it names, then converted to the URL's: the error says which step failed."""
    urls = {
        "pods": f"/api/v1/namespaces/{cluster.namespace}/pods",
        "leases": f"/apis/coordination.k8s.io/v1/namespaces/{cluster.namespace}/leases",
        "events": f"/api/v1/namespaces/{cluster.namespace}/events",
        "events.k8s.io": f"/apis/events.k8s.io/v1/namespaces/{cluster.namespace}/events",
        "poddisruptionbudgets": _pdbs(cluster),
    }
    resp = await raw.request("POST", urls[path], body=body)
    assert resp.status == 400, resp.body
    assert resp.json()["message"] == message
