"""Replay of the real kube-apiserver 1.36.2 DRA captures (14a-14r) against kubesim: discovery, the
four resource.k8s.io/v1 kinds' defaults and validation, and the claim status subresource."""

from __future__ import annotations

import copy
from typing import Any

from tests.kubesim.test_captures import Replay, capture, normalize, replay

__all__ = ["replay"]


async def _namespace(r: Replay, name: str) -> None:
    body = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
    assert (await r.call("POST", "/api/v1/namespaces", body=body))[0] == 201


async def test_resource_api_discovery_matches_the_capture(replay: Replay) -> None:
    await replay.check("14a")


async def test_classes_and_slices_match_the_captures(replay: Replay) -> None:
    r = replay
    await r.check("14b")
    await r.check("14c")
    await r.check("14d")
    await r.check("14e")
    await r.check("14f")
    await r.check("14g")


async def test_claims_templates_and_claim_status_match_the_captures(replay: Replay) -> None:
    r = replay
    await _namespace(r, "dra")
    await r.check("14b")
    await r.check("14e")
    await r.check("14h")
    prio = await r.check("14i")
    await r.check("14j")
    await r.check("14k")
    await r.check("14l")
    put = copy.deepcopy(capture("14p")["request"]["body"])
    put["metadata"]["resourceVersion"] = prio["metadata"]["resourceVersion"]
    put["metadata"]["uid"] = prio["metadata"]["uid"]
    stored = await r.check("14p", body=put)
    stale = copy.deepcopy(capture("14q")["request"]["body"])
    stale["metadata"]["resourceVersion"] = prio["metadata"]["resourceVersion"]
    stale["metadata"]["uid"] = prio["metadata"]["uid"]
    await r.check("14q", body=stale)
    change: dict[str, Any] = copy.deepcopy(capture("14r")["request"]["body"])
    change["metadata"]["resourceVersion"] = stored["metadata"]["resourceVersion"]
    change["metadata"]["uid"] = prio["metadata"]["uid"]
    await r.check("14r", body=change)


async def test_the_schedulers_claim_writes_give_the_captured_claim(replay: Replay) -> None:
    """The finalizer (an update) then status.allocation + reservedFor (status) as kube-scheduler wrote
    them give the claim of 14m, and the claims' watch shows the two MODIFIED events of 14o."""
    r = replay
    await _namespace(r, "dra")
    await r.check("14b")
    await r.check("14e")
    claim = await r.check("14h")
    pod = await r.check("14l")
    want = capture("14m")["body"]
    claim["metadata"]["finalizers"] = want["metadata"]["finalizers"]
    path = "/apis/resource.k8s.io/v1/namespaces/dra/resourceclaims/one-gpu"
    status, _, claim = await r.call("PUT", path, body=claim)
    assert status == 200, claim
    claim["status"] = copy.deepcopy(want["status"])
    claim["status"]["reservedFor"][0]["uid"] = pod["metadata"]["uid"]
    status, _, claim = await r.call("PUT", path + "/status", body=claim)
    assert status == 200, claim
    got = (await r.call("GET", path))[2]
    assert normalize(got) == normalize(want)
    events = await r.watch(
        "/apis/resource.k8s.io/v1/namespaces/dra/resourceclaims",
        {"resourceVersion": pod["metadata"]["resourceVersion"], "timeoutSeconds": "1"},
    )
    assert [normalize(e) for e in events] == [normalize(e) for e in capture("14o")["events"]]
