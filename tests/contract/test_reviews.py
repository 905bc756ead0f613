"""TokenReview and SubjectAccessReview, as the secure port of every service asks them (captures
16c-16f, 16k-16l of a real kube-apiserver 1.36.2): 201 with the answer in ``status``; a token the
server does not know is ``status.error``, not an HTTP error; a denial carries only ``allowed: false``;
an allowance says which binding allowed it."""

from __future__ import annotations

import json
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
    assert resp.json() == want["body"]


async def test_a_service_account_token_names_the_account(kubesim_only: KubeSim, raw: Raw) -> None:
    want = capture("16c")
    token = kubesim_only.access.service_account_token("auth", "prometheus")
    resp = await raw.request("POST", TOKENREVIEWS, body={**want["request"]["body"], "spec": {"token": token}})
    assert resp.status == 201
    got = resp.json()
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
    assert resp.json() == want["body"]


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
    assert resp.json() == want["body"]


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
