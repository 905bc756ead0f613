"""TokenReview and SubjectAccessReview, as the secure port of every service asks them (captures
16c-16f, 16k-16l of a real kube-apiserver 1.36.2): 201 with the answer in ``status``; a token the
server does not know is ``status.error``, not an HTTP error; a denial carries only ``allowed: false``;
an allowance says which binding allowed it. As any create, a review is answered with the
``managedFields`` entry of what the request set (the captures had them removed)."""

from __future__ import annotations

import datetime as dt
import json
import re
from typing import Any

import aiohttp
import pytest
from ksched_kubesim import KubeSim
from kubernetes_asyncio import client
from kubernetes_asyncio.client import ApiClient

from tests.fidelity import material, missing
from tests.fixtures.kubesim import Raw

pytestmark = pytest.mark.contract

TOKENREVIEWS = "/apis/authentication.k8s.io/v1/tokenreviews"
SARS = "/apis/authorization.k8s.io/v1/subjectaccessreviews"


def capture(name: str) -> Any:
    """A real kube-apiserver 1.36.2 / kube-scheduler capture of ../shared/apiserver-1.36."""
    captures = material("apiserver-1.36")
    path = next(captures.glob(f"{name}-*.json"), None)
    if path is None:
        missing(captures / f"{name}-*.json")
    return json.loads(path.read_text())


#: the manager the ``raw`` fixture's requests are recorded for (ksched's client in the tests:
#: its User-Agent ``ksched-test/<version>`` up to the first "/")
CLIENT_MANAGER = "ksched-test"
TOKEN_FIELDS: dict[str, Any] = {"f:spec": {"f:token": {}}}
ACCESS_FIELDS: dict[str, Any] = {
    "16f": {
        "f:spec": {
            "f:groups": {},
            "f:nonResourceAttributes": {".": {}, "f:path": {}, "f:verb": {}},
            "f:user": {},
        }
    },
    "16l": {
        "f:spec": {
            "f:groups": {},
            "f:resourceAttributes": {".": {}, "f:namespace": {}, "f:resource": {}, "f:verb": {}},
            "f:user": {},
        }
    },
}


def recent(stamp: str) -> bool:
    """An RFC 3339 second of the last minute."""
    moment = dt.datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=dt.UTC)
    return abs((dt.datetime.now(dt.UTC) - moment).total_seconds()) < 60


def without_managed_fields(
    body: Any, fields: dict[str, Any], api_version: str, manager: str = CLIENT_MANAGER
) -> Any:
    """``body`` as captured: its one managedFields entry (``manager``'s Update of ``fields``, now)
    checked field by field and removed."""
    entries = body["metadata"].pop("managedFields")
    assert len(entries) == 1, entries
    entry = entries[0]
    assert list(entry) == ["manager", "operation", "apiVersion", "time", "fieldsType", "fieldsV1"]
    assert entry["manager"] == manager
    assert entry["operation"] == "Update"
    assert entry["apiVersion"] == api_version
    assert recent(entry["time"]), entry["time"]
    assert entry["fieldsType"] == "FieldsV1"
    assert entry["fieldsV1"] == fields
    return body


def shape(value: Any) -> Any:
    """Keys and value types, recursively (tokens, uids and names differ between clusters)."""
    if isinstance(value, dict):
        return {k: shape(v) for k, v in value.items()}
    if isinstance(value, list):
        return [shape(value[0])] if value else []
    return type(value).__name__


async def test_an_unknown_token_is_an_error_in_the_status(raw: Raw) -> None:
    want = capture("16d")
    resp = await raw.request("POST", TOKENREVIEWS, body=want["request"]["body"])
    assert resp.status == want["status"] == 201
    assert resp.headers["Content-Type"] == "application/json"
    assert without_managed_fields(resp.json(), TOKEN_FIELDS, "authentication.k8s.io/v1") == want["body"]


async def test_a_service_account_token_names_the_account(kubesim_only: KubeSim, raw: Raw) -> None:
    want = capture("16c")
    token = kubesim_only.access.service_account_token("auth", "prometheus")
    resp = await raw.request("POST", TOKENREVIEWS, body={**want["request"]["body"], "spec": {"token": token}})
    assert resp.status == 201
    got = without_managed_fields(resp.json(), TOKEN_FIELDS, "authentication.k8s.io/v1")
    assert shape(got) == shape(want["body"])
    assert list(got) == list(want["body"])
    assert got["status"]["user"]["username"] == want["body"]["status"]["user"]["username"]
    assert got["status"]["user"]["groups"] == want["body"]["status"]["user"]["groups"]
    assert got["status"]["audiences"] == want["body"]["status"]["audiences"]


async def test_a_token_for_another_audience_is_refused(kubesim_only: KubeSim, raw: Raw) -> None:
    want = capture("16e")
    token = kubesim_only.access.service_account_token("auth", "prometheus")
    body = {**want["request"]["body"], "spec": {"token": token, "audiences": ["some-other-audience"]}}
    resp = await raw.request("POST", TOKENREVIEWS, body=body)
    assert resp.status == 201
    assert resp.json()["status"] == want["body"]["status"]


@pytest.mark.parametrize("name", ["16f", "16l"])
async def test_what_is_not_granted_is_denied_without_a_reason(raw: Raw, name: str) -> None:
    want = capture(name)
    resp = await raw.request("POST", SARS, body=want["request"]["body"])
    assert resp.status == want["status"] == 201
    assert without_managed_fields(resp.json(), ACCESS_FIELDS[name], "authorization.k8s.io/v1") == want["body"]


async def test_a_grant_allows_and_says_which_binding(kubesim_only: KubeSim, raw: Raw) -> None:
    want = capture("16k")
    # the capture's account, in a namespace of this test's own (the other tests see no grant)
    text = json.dumps(want).replace("auth:", "granted:").replace("/auth", "/granted")
    want = json.loads(text)
    kubesim_only.access.grant(
        "ServiceAccount",
        "granted/prometheus",
        ["/metrics"],
        binding="prometheus-metrics",
        role="metrics-reader",
    )
    resp = await raw.request("POST", SARS, body=want["request"]["body"])
    assert resp.status == 201
    assert (
        without_managed_fields(resp.json(), ACCESS_FIELDS["16f"], "authorization.k8s.io/v1") == want["body"]
    )


async def test_the_typed_client_reads_the_answers(api: ApiClient) -> None:
    review = await client.AuthenticationV1Api(api).create_token_review(
        client.V1TokenReview(spec=client.V1TokenReviewSpec(token="not-a-token"))
    )
    assert review.status.authenticated is None
    assert review.status.error == "invalid bearer token"
    access = await client.AuthorizationV1Api(api).create_subject_access_review(
        client.V1SubjectAccessReview(
            spec=client.V1SubjectAccessReviewSpec(
                user="nobody",
                groups=["system:authenticated"],
                non_resource_attributes=client.V1NonResourceAttributes(path="/metrics", verb="get"),
            )
        )
    )
    assert access.status.allowed is False


async def test_an_anonymous_caller_may_not_ask(api: ApiClient) -> None:
    body = capture("16f")["request"]["body"]
    async with (
        aiohttp.ClientSession() as http,
        http.post(f"{api.configuration.host}{SARS}", json=body, ssl=False) as resp,
    ):
        assert resp.status == 403
        assert (await resp.json())["reason"] == "Forbidden"


async def test_the_request_metadata_comes_back_with_its_managed_fields(raw: Raw) -> None:
    """Metadata is kept less what every create wipes (uid, creationTimestamp; the namespace of a
    cluster-scoped object); managedFields name the fieldManager (else the User-Agent) and every field
    the request set, its status too; given managedFields are kept. What authenticating the token did
    not find stays in the status as sent."""
    given = {
        "manager": "earlier",
        "operation": "Update",
        "apiVersion": "authentication.k8s.io/v1",
        "fieldsType": "FieldsV1",
        "fieldsV1": {"f:spec": {}},
    }
    body = {
        "apiVersion": "authentication.k8s.io/v1",
        "kind": "TokenReview",
        "metadata": {
            "generateName": "review-",
            "namespace": "elsewhere",
            "uid": "b5a6f8e0-0000-4000-8000-000000000000",
            "resourceVersion": "5",
            "creationTimestamp": "2020-01-01T00:00:00Z",
            "labels": {"b": "2", "a": "1"},
            "managedFields": [given],
        },
        "spec": {"token": "not-a-token", "audiences": ["x"]},
        "status": {"authenticated": True, "user": {"username": "claimed"}},
    }
    resp = await raw.request(
        "POST",
        TOKENREVIEWS,
        query={"fieldManager": "reviewer"},
        body=body,
    )
    assert resp.status == 201, resp.body
    got = resp.json()
    entries = got["metadata"].pop("managedFields")
    assert got == {
        "kind": "TokenReview",
        "apiVersion": "authentication.k8s.io/v1",
        "metadata": {"generateName": "review-", "resourceVersion": "5", "labels": {"a": "1", "b": "2"}},
        "spec": {"token": "not-a-token", "audiences": ["x"]},
        "status": {"user": {"username": "claimed"}, "error": "invalid bearer token"},
    }
    assert entries[0] == given
    fields = {
        "f:metadata": {"f:generateName": {}, "f:labels": {".": {}, "f:a": {}, "f:b": {}}},
        "f:spec": {"f:audiences": {}, "f:token": {}},
        "f:status": {"f:authenticated": {}, "f:user": {"f:username": {}}},
    }
    rest = without_managed_fields(
        {"metadata": {"managedFields": entries[1:]}}, fields, "authentication.k8s.io/v1", "reviewer"
    )
    assert rest == {"metadata": {}}
    data = json.dumps(capture("16d")["request"]["body"]).encode()
    resp = await raw.send("POST", TOKENREVIEWS, data, headers={"User-Agent": "tool/1.0 (linux)"})
    assert (
        without_managed_fields(resp.json(), TOKEN_FIELDS, "authentication.k8s.io/v1", "tool")["metadata"]
        == {}
    )


async def test_a_token_review_needs_a_token(raw: Raw) -> None:
    resp = await raw.request(
        "POST", TOKENREVIEWS, body={"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview"}
    )
    assert resp.status == 400, resp.body
    assert resp.json()["message"] == "token is required for TokenReview in authentication"


async def test_an_access_review_is_validated(raw: Raw) -> None:
    """One kind of attributes, a user or a group, no metadata (the error shows the managedFields the
    request got)."""
    base = {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview"}
    resp = await raw.request("POST", SARS, body={**base, "spec": {}})
    assert resp.status == 422, resp.body
    assert resp.json() == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": '.authorization.k8s.io "" is invalid: [spec.resourceAttributes: Invalid value: null: '
        "exactly one of nonResourceAttributes or resourceAttributes must be specified, spec.user: Invalid "
        'value: "": at least one of user or group must be specified]',
        "reason": "Invalid",
        "details": {
            "group": "authorization.k8s.io",
            "causes": [
                {
                    "reason": "FieldValueInvalid",
                    "message": "Invalid value: null: exactly one of nonResourceAttributes or "
                    "resourceAttributes must be specified",
                    "field": "spec.resourceAttributes",
                },
                {
                    "reason": "FieldValueInvalid",
                    "message": 'Invalid value: "": at least one of user or group must be specified',
                    "field": "spec.user",
                },
            ],
        },
        "code": 422,
    }
    spec = {
        "user": "nobody",
        "nonResourceAttributes": {"verb": "get", "path": "/metrics"},
        "resourceAttributes": {"verb": "get", "resource": "pods"},
    }
    resp = await raw.request("POST", SARS, body={**base, "metadata": {"name": "n"}, "spec": spec})
    assert resp.status == 422, resp.body
    message = resp.json()["message"]
    fields = (
        '{"f:spec":{"f:nonResourceAttributes":{".":{},"f:path":{},"f:verb":{}},"f:resourceAttributes":'
        '{".":{},"f:resource":{},"f:verb":{}},"f:user":{}}}'
    )
    pattern = (
        r'\.authorization\.k8s\.io "" is invalid: \[spec\.nonResourceAttributes: Invalid value: '
        r'\{"Path":"/metrics","Verb":"get"\}: cannot be specified in combination with resourceAttributes, '
        r'metadata: Invalid value: \{"name":"n","managedFields":\[\{"manager":"' + CLIENT_MANAGER + '",'
        r'"operation":"Update","apiVersion":"authorization\.k8s\.io/v1","time":"(?P<time>[^"]+)",'
        r'"fieldsType":"FieldsV1","fieldsV1":' + re.escape(fields) + r"\}\]\}: must be empty\]"
    )
    match = re.fullmatch(pattern, message)
    assert match, message
    assert recent(match["time"])
