"""Fuzzing kubesim over HTTP: request bodies (mutations of valid objects, raw bytes of any content
type), patches (merge, strategic merge, JSON patch; object and status), label and field selectors
and query parameters. kubesim never answers 500 and never hangs; an error is a ``Status`` whose
``code`` is the HTTP status, with the real server's status codes where they are known
(``../shared/apiserver-1.36``: 400 for a body or selector that does not parse, 415 for a content
type it does not take, 422 for an invalid object, 409 for a conflict, 404 for a missing object)."""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import msgspec
import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st
from ksched_kubesim import KubeSim

from tests.fixtures.kubesim import fast_config
from tests.fuzz.profiles import fuzz_settings
from tests.fuzz.trees import mutated

SEEDS: list[dict[str, Any]] = yaml.safe_load(
    (Path(__file__).parent / "seeds" / "kube-objects.yaml").read_text()
)
EXPECTED = {200, 201, 400, 403, 404, 405, 409, 410, 413, 415, 422}
"""Statuses a fuzzed request may get (403: admission, e.g. a pod's priority given by value)."""
PODS = "/api/v1/namespaces/default/pods"
CONTENT_TYPES = [
    "application/json",
    "application/yaml",
    "application/merge-patch+json",
    "application/strategic-merge-patch+json",
    "application/json-patch+json",
    "application/apply-patch+yaml",
    "application/vnd.kubernetes.protobuf",
    "text/plain",
    "",
]
_names = itertools.count()


class Client:
    """kubesim and an HTTP session holding its token; each call checks the answer."""

    def __init__(self, sim: KubeSim, http: aiohttp.ClientSession) -> None:
        self.sim = sim
        self.http = http

    async def call(
        self,
        method: str,
        path: str,
        *,
        body: bytes | None = None,
        content_type: str = "application/json",
        query: dict[str, str] | None = None,
        expected: set[int] = EXPECTED,
    ) -> tuple[int, Any]:
        headers = {"Content-Type": content_type} if content_type else {}
        async with self.http.request(
            method, self.sim.url + path, data=body, params=query or {}, headers=headers
        ) as resp:
            status = resp.status
            streaming = status == 200 and resp.headers.get("Transfer-Encoding") == "chunked"
            # a watch streams until its timeout: its status and headers are the answer
            data = b"" if streaming and method == "GET" and "watch" in (query or {}) else await resp.read()
        assert status in expected, (status, method, path, query, data[:500])
        if status >= 400:
            error = msgspec.json.decode(data)
            assert error["kind"] == "Status" and error["status"] == "Failure", error
            assert error["code"] == status, error
            return status, error
        return status, msgspec.json.decode(data) if data else None


@pytest.fixture(scope="module")
async def client() -> AsyncIterator[Client]:
    sim = KubeSim(fast_config())
    await sim.start()
    timeout = aiohttp.ClientTimeout(total=15)
    try:
        async with aiohttp.ClientSession(
            headers={"Authorization": f"Bearer {sim.token}"}, timeout=timeout
        ) as http:
            yield Client(sim, http)
    finally:
        await sim.stop()


def unique(body: Any) -> Any:
    """``body`` with a fresh metadata.name (when it still has one), so creates do not collide."""
    meta = body.get("metadata") if isinstance(body, dict) else None
    if isinstance(meta, dict) and isinstance(meta.get("name"), str):
        meta["name"] = f"{meta['name']}-{next(_names)}"
    return body


def as_json(tree: Any) -> bytes:
    return msgspec.json.encode(tree)


@fuzz_settings(150)
@given(data=st.data())
async def test_create_bodies(client: Client, data: st.DataObject) -> None:
    seed = data.draw(st.sampled_from(SEEDS), label="seed")
    tree, _ = data.draw(mutated(seed["body"], texts=["", "default", "v1", "Pod", "1e3", "-1"]), label="body")
    await client.call("POST", seed["path"], body=as_json(unique(tree)))


@fuzz_settings(100)
@given(
    path=st.sampled_from([PODS, "/api/v1/nodes", f"{PODS}/p/binding", "/api/v1/namespaces"]),
    content_type=st.sampled_from(CONTENT_TYPES),
    body=st.binary(max_size=200) | st.text(max_size=200).map(str.encode),
)
async def test_raw_bodies(client: Client, path: str, content_type: str, body: bytes) -> None:
    await client.call("POST", path, body=body, content_type=content_type)


JSON_PATCHES: list[Any] = [
    [{"op": "replace", "path": "/metadata/labels/app", "value": "db"}],
    [
        {"op": "add", "path": "/metadata/annotations/x", "value": "y"},
        {"op": "remove", "path": "/metadata/labels/tier"},
    ],
    [{"op": "test", "path": "/spec/containers/0/name", "value": "app"}],
    [{"op": "move", "from": "/metadata/labels/app", "path": "/metadata/labels/moved"}],
]
MERGE_PATCHES: list[Any] = [
    {"metadata": {"labels": {"app": "db", "tier": None}}},
    {"spec": {"tolerations": [{"key": "k", "operator": "Exists"}]}},
    {"status": {"nominatedNodeName": "n", "conditions": [{"type": "PodScheduled", "status": "False"}]}},
    {"metadata": {"resourceVersion": "1"}},
]


@pytest.fixture(scope="module")
async def target(client: Client) -> str:
    """A pod the patches are sent to."""
    seed = next(s for s in SEEDS if s["path"] == PODS)
    body = unique(msgspec.json.decode(as_json(seed["body"])))
    del body["spec"]["schedulingGates"]
    await client.call("POST", PODS, body=as_json(body), expected={201})
    return str(body["metadata"]["name"])


@fuzz_settings(150)
@given(data=st.data())
async def test_patches(client: Client, target: str, data: st.DataObject) -> None:
    kind = data.draw(st.sampled_from(["json", "merge", "strategic"]), label="kind")
    seeds = JSON_PATCHES if kind == "json" else MERGE_PATCHES
    patch, _ = data.draw(
        mutated(data.draw(st.sampled_from(seeds)), texts=["/metadata", "/spec/nodeName", "-", "~1"])
    )
    content_type = {
        "json": "application/json-patch+json",
        "merge": "application/merge-patch+json",
        "strategic": "application/strategic-merge-patch+json",
    }[kind]
    subresource = data.draw(st.sampled_from(["", "/status"]), label="subresource")
    await client.call(
        "PATCH", f"{PODS}/{target}{subresource}", body=as_json(patch), content_type=content_type
    )
    status, _ = await client.call("GET", f"{PODS}/{target}", expected={200})
    assert status == 200


SELECTOR_CHARS = "abz09=!,()-_./ inotexsINOTEX\t"
LABEL_SELECTORS = ["app=web", "app in (web,db),tier notin (fe),!gone", "app", "!app", "a.b/c==d", "x!=y"]
FIELD_SELECTORS = ["spec.nodeName=", "spec.nodeName!=n,status.phase!=Succeeded", "metadata.name=p"]


@st.composite
def selectors(draw: st.DrawFn, valid: list[str]) -> str:
    base = draw(st.sampled_from(valid))
    how = draw(st.sampled_from(["text", "cut", "insert"]))
    if how == "text":
        return draw(st.text(alphabet=SELECTOR_CHARS, max_size=30) | st.text(max_size=20))
    position = draw(st.integers(0, len(base)))
    if how == "cut":
        return base[:position]
    return base[:position] + draw(st.text(alphabet=SELECTOR_CHARS, min_size=1, max_size=4)) + base[position:]


@fuzz_settings(150)
@given(
    label=st.none() | selectors(LABEL_SELECTORS),
    field=st.none() | selectors(FIELD_SELECTORS),
    path=st.sampled_from([PODS, "/api/v1/pods", "/api/v1/nodes", "/apis/events.k8s.io/v1/events"]),
)
async def test_selectors(client: Client, label: str | None, field: str | None, path: str) -> None:
    query = {k: v for k, v in {"labelSelector": label, "fieldSelector": field}.items() if v is not None}
    await client.call("GET", path, query=query, expected={200, 400})


QUERY_KEYS = [
    "limit",
    "continue",
    "resourceVersion",
    "resourceVersionMatch",
    "timeoutSeconds",
    "allowWatchBookmarks",
    "sendInitialEvents",
    "gracePeriodSeconds",
    "dryRun",
    "fieldManager",
    "propagationPolicy",
    "pretty",
]
QUERY_VALUES = ["", "0", "1", "-1", "true", "false", "All", "NotOlderThan", "Exact", "9" * 30, "1e3", "abc"]


@fuzz_settings(100)
@given(
    method=st.sampled_from(["GET", "DELETE"]),
    path=st.sampled_from([PODS, f"{PODS}/missing", "/api/v1/nodes", "/apis/coordination.k8s.io/v1/leases"]),
    query=st.dictionaries(
        st.sampled_from(QUERY_KEYS), st.sampled_from(QUERY_VALUES) | st.text(max_size=12), max_size=4
    ),
    watch=st.booleans(),
)
async def test_query_parameters(
    client: Client, method: str, path: str, query: dict[str, str], watch: bool
) -> None:
    if watch and method == "GET":
        query = {**query, "watch": "true", "timeoutSeconds": "1"}
    # 504: a list at a resourceVersion past the current one (08g-list-future-rv-504)
    await client.call(method, path, query=query, expected={*EXPECTED, 504})
