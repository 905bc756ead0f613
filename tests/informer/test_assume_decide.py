"""The informer's assume decision without NATS (``ksched_informer.assume``): the placements of one
batch are checked in order, each on the state the earlier ones left, and each verdict is the one
the single check gives in the same order."""

from __future__ import annotations

import msgspec
from ksched_informer import assume

from ksched.api.core import Pod
from ksched.bus.messages import AssumeRejectCode, AssumeRequest, Placement
from ksched.cache.ledger import ClusterCache
from ksched.config import default_config
from ksched.config.profile import build_frameworks
from ksched.framework.nominator import Nominator
from ksched.framework.testing import make_node, make_pod

ZONE = "topology.kubernetes.io/zone"
EPOCH = "e1"


def cluster() -> tuple[ClusterCache, list[Pod]]:
    cache = ClusterCache()
    cache.upsert_node(make_node("tight", labels={ZONE: "a"}, allocatable={"cpu": "1", "pods": "10"}))
    cache.upsert_node(make_node("roomy", labels={ZONE: "b"}, allocatable={"cpu": "8", "pods": "10"}))
    anti = {"labelSelector": {"matchLabels": {"app": "x"}}, "topologyKey": ZONE}
    pods = [
        make_pod("a", requests={"cpu": "600m"}),
        make_pod("b", requests={"cpu": "600m"}),
        make_pod("c", requests={"cpu": "100m"}),
        make_pod(
            "d",
            requests={"cpu": "100m"},
            spec={
                "affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [anti]}}
            },
        ),
        make_pod("e", labels={"app": "x"}, requests={"cpu": "100m"}),
    ]
    for pod in pods:
        cache.upsert_pod(pod)
    return cache, pods


def request(pod: Pod, node: str, generation: int, seq: int) -> AssumeRequest:
    meta = pod.metadata
    placement = Placement(
        placement_id=f"{meta.uid}:1",
        pod_uid=meta.uid,
        namespace=meta.namespace,
        name=meta.name,
        node_name=node,
        scheduler_id="s1",
        profile="default-scheduler",
        epoch=EPOCH,
        snapshot_generation=generation,
        resource_version=meta.resource_version,
        pod=msgspec.json.encode(pod),
    )
    # Each decided on the same snapshot by its own replica (session): none counted the others. (A
    # replica's own earlier placements are in its snapshot: the check trusts the replica counted them.)
    return AssumeRequest(placement=placement, session=f"s{seq}", seq=1, basis_from=1)


def verdicts(placements: list[tuple[int, str]]) -> list[tuple[bool, str, str]]:
    cache, pods = cluster()
    frameworks = build_frameworks(default_config(), cache.snapshot, nominator=Nominator())
    generation = cache.generation
    requests = [request(pods[i], node, generation, seq) for seq, (i, node) in enumerate(placements, 1)]
    out = [assume.decide(cache, frameworks, EPOCH, req, serving=True) for req in requests]
    assert all((v.pod is not None) == v.reply.accepted for v in out)
    return [(v.reply.accepted, v.reply.code, v.reply.reason) for v in out]


def test_a_later_placement_of_a_batch_sees_the_earlier_ones_assumed() -> None:
    # b does not fit beside a on "tight"; e (app=x) is in the zone of d's required anti-affinity
    batch = [(0, "tight"), (1, "tight"), (2, "tight"), (3, "roomy"), (4, "roomy")]
    got = verdicts(batch)
    assert got == [
        (True, "", ""),
        (False, AssumeRejectCode.DOES_NOT_FIT, "NodeResourcesFit: Insufficient cpu"),
        (True, "", ""),
        (True, "", ""),
        (
            False,
            AssumeRejectCode.DOES_NOT_FIT,
            "InterPodAffinity: node(s) didn't satisfy existing pods anti-affinity rules",
        ),
    ]
    # the same placements in another order: the first of a conflicting pair wins
    assert [v[0] for v in verdicts([(1, "tight"), (0, "tight"), (4, "roomy"), (3, "roomy")])] == [
        True,
        False,
        True,
        False,
    ]


def test_refusals_before_the_check_are_per_placement() -> None:
    cache, pods = cluster()
    frameworks = build_frameworks(default_config(), cache.snapshot, nominator=Nominator())
    generation = cache.generation
    first = request(pods[2], "roomy", generation, 1)
    again = request(pods[2], "roomy", generation, 2)  # the same pod twice in one batch
    gone = request(pods[0], "no-such-node", generation, 3)
    replies = [assume.decide(cache, frameworks, EPOCH, r, serving=True).reply for r in (first, again, gone)]
    assert [(r.accepted, r.code) for r in replies] == [
        (True, ""),
        (False, AssumeRejectCode.ALREADY_ASSUMED),
        (False, AssumeRejectCode.NODE_NOT_FOUND),
    ]
    not_ready = assume.decide(
        cache, frameworks, EPOCH, request(pods[1], "roomy", generation, 4), serving=False
    )
    assert (not_ready.reply.code, not_ready.pod) == (AssumeRejectCode.NOT_READY, None)
    assert pods[1].metadata.uid in cache.pending  # a refused placement leaves the pod pending


def test_a_placement_whose_pod_is_not_json_counts_as_decided_on_another_version() -> None:
    """Found by the bus fuzzer: invalid UTF-8 in a placement's pod raised out of the assume handler."""
    _, pods = cluster()
    placement = request(pods[0], "roomy", 1, 1).placement
    for garbage in (b'{"metadata": {"name": "\x85"}}', b"{not json", b'{"spec": 3}'):
        other = msgspec.structs.replace(placement, resource_version="older", pod=garbage)
        assert assume.decided_on_another_version(other, pods[0])
    assert not assume.decided_on_another_version(placement, pods[0])
