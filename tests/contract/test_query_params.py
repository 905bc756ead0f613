"""Query parameters as the API server's parameter codec reads them: integers through Go's
strconv.ParseInt, booleans true unless absent, "0" or "false"."""

from __future__ import annotations

import msgspec
import pytest
from kubernetes_asyncio.client import ApiClient

from tests.contract.testing import create_pod, unique
from tests.fixtures.kubesim import Cluster, Raw

pytestmark = pytest.mark.contract


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ({"limit": ""}, 'strconv.ParseInt: parsing "": invalid syntax'),
        ({"limit": "1_000"}, 'strconv.ParseInt: parsing "1_000": invalid syntax'),
        ({"limit": " 5"}, 'strconv.ParseInt: parsing " 5": invalid syntax'),
        (
            {"limit": "9223372036854775808"},
            'strconv.ParseInt: parsing "9223372036854775808": value out of range',
        ),
        ({"timeoutSeconds": "1s"}, 'strconv.ParseInt: parsing "1s": invalid syntax'),
    ],
)
async def test_malformed_integers_are_400(
    raw: Raw, cluster: Cluster, query: dict[str, str], message: str
) -> None:
    resp = await raw.request("GET", f"/api/v1/namespaces/{cluster.namespace}/pods", query)
    assert resp.status == 400
    assert resp.json() == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": "BadRequest",
        "code": 400,
    }


async def test_a_signed_limit_is_an_integer(raw: Raw, cluster: Cluster) -> None:
    resp = await raw.request("GET", f"/api/v1/namespaces/{cluster.namespace}/pods", {"limit": "+1"})
    assert resp.status == 200 and resp.json()["kind"] == "PodList"


@pytest.mark.parametrize("value", ["yes", "TRUE", ""])
async def test_any_watch_value_but_0_or_false_watches(
    api: ApiClient, raw: Raw, cluster: Cluster, value: str
) -> None:
    name = unique("watched")
    await create_pod(api, cluster.namespace, name)
    query = {"watch": value, "timeoutSeconds": "1", "fieldSelector": f"metadata.name={name}"}
    resp = await raw.request("GET", f"/api/v1/namespaces/{cluster.namespace}/pods", query)
    assert resp.status == 200
    first = msgspec.json.decode(resp.body.splitlines()[0])
    assert first["type"] == "ADDED" and first["object"]["metadata"]["name"] == name


@pytest.mark.parametrize("value", ["0", "False"])
async def test_watch_0_or_false_lists(raw: Raw, cluster: Cluster, value: str) -> None:
    resp = await raw.request("GET", f"/api/v1/namespaces/{cluster.namespace}/pods", {"watch": value})
    assert resp.status == 200 and resp.json()["kind"] == "PodList"
