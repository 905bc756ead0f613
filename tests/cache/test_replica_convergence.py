"""A replica fed the cache's delta batches converges to the cache after random churn."""

from __future__ import annotations

import msgspec
from hypothesis import given, settings
from hypothesis import strategies as st

from ksched.api.core import Namespace
from ksched.api.meta import ObjectMeta
from ksched.bus.messages import decode, encode
from ksched.cache.delta import DeltaBatch
from ksched.cache.ledger import ClusterCache
from ksched.cache.replica import SnapshotReplica, image_of
from ksched.framework.snapshot import Snapshot
from ksched.framework.testing import make_node, make_pod

NODES = [f"n{i}" for i in range(4)]
PODS = [f"p{i}" for i in range(8)]

action = st.one_of(
    st.tuples(st.just("node"), st.sampled_from(NODES), st.integers(1, 8)),
    st.tuples(st.just("node-"), st.sampled_from(NODES)),
    st.tuples(st.just("pending"), st.sampled_from(PODS), st.integers(0, 3)),
    st.tuples(st.just("bind"), st.sampled_from(PODS), st.sampled_from(NODES)),
    st.tuples(st.just("assume"), st.sampled_from(PODS), st.sampled_from(NODES)),
    st.tuples(st.just("forget"), st.sampled_from(PODS)),
    st.tuples(st.just("delete"), st.sampled_from(PODS)),
    st.tuples(st.just("ns"), st.sampled_from(["a", "b"]), st.sampled_from(["x", "y"])),
    st.tuples(st.just("ns-"), st.sampled_from(["a", "b"])),
    st.tuples(st.just("flush")),
)


def state_of(snap: Snapshot) -> dict[str, object]:
    return {
        "nodes": sorted(ni.name for ni in snap.nodes),
        "pods": sorted((uid, node) for uid, (_, node) in snap.pod_locations.items()),
        "requested": {ni.name: (ni.requested.milli_cpu, len(ni.pods)) for ni in snap.nodes},
        "columns": {ni.name: snap.columns.req[ni.index].tolist() for ni in snap.nodes},
        "namespaces": {k: v.metadata.labels for k, v in snap.objects.namespaces.items()},
    }


@settings(max_examples=150, deadline=None)
@given(st.lists(action, max_size=60), st.integers(0, 3))
def test_replica_converges(actions: list[tuple[object, ...]], bootstrap_at: int) -> None:
    cache = ClusterCache()
    replica = SnapshotReplica()
    wire = msgspec.msgpack.Encoder()

    def flush() -> None:
        base, gen, ops = cache.take_ops()
        if not replica.ready:
            return
        batch = DeltaBatch(epoch="e1", base=base, generation=gen, ops=ops)
        decoded = decode(encode(batch), DeltaBatch)
        assert replica.apply(decoded)

    for i, act in enumerate(actions):
        if i == bootstrap_at and not replica.ready:
            cache.take_ops()
            replica.load(
                msgspec.msgpack.decode(
                    wire.encode(image_of(cache.snapshot, "e1", cache.generation)),
                    type=type(image_of(cache.snapshot, "e1", 0)),
                )
            )
        kind = act[0]
        if kind == "node":
            cache.upsert_node(make_node(str(act[1]), allocatable={"cpu": str(act[2]), "pods": "110"}))
        elif kind == "node-":
            cache.remove_node(str(act[1]))
        elif kind == "pending":
            cache.upsert_pod(make_pod(str(act[1]), uid=str(act[1]), requests={"cpu": f"{act[2]}00m"}))
        elif kind == "bind":
            cache.upsert_pod(
                make_pod(str(act[1]), uid=str(act[1]), node_name=str(act[2]), requests={"cpu": "100m"})
            )
        elif kind == "assume":
            pod = cache.pending.get(str(act[1]))
            if pod is not None:
                cache.assume(pod, str(act[2]), generation=cache.generation, scheduler_id="s1")
        elif kind == "forget":
            cache.forget(str(act[1]))
        elif kind == "delete":
            cache.remove_pod(str(act[1]))
        elif kind == "ns":
            ns = Namespace(metadata=ObjectMeta(name=str(act[1]), labels={"team": str(act[2])}))
            cache.upsert_object(ns)
        elif kind == "ns-":
            cache.remove_object("Namespace", str(act[1]))
        else:
            flush()
    if not replica.ready:
        cache.take_ops()
        replica.load(image_of(cache.snapshot, "e1", cache.generation))
    flush()
    assert replica.generation == cache.generation
    assert state_of(replica.snapshot) == state_of(cache.snapshot)


def test_gap_is_refused() -> None:
    cache = ClusterCache()
    replica = SnapshotReplica()
    replica.load(image_of(cache.snapshot, "e1", cache.generation))
    cache.upsert_node(make_node("a", allocatable={"cpu": "1", "pods": "10"}))
    cache.take_ops()
    cache.upsert_node(make_node("b", allocatable={"cpu": "1", "pods": "10"}))
    base, gen, ops = cache.take_ops()
    assert not replica.apply(DeltaBatch(epoch="e1", base=base, generation=gen, ops=ops))
    assert not replica.apply(DeltaBatch(epoch="e2", base=replica.generation, generation=gen, ops=ops))


def test_a_batch_whose_generation_does_not_follow_from_its_ops_is_refused() -> None:
    """A forged delta of the current epoch with base 0 and a huge generation (as the scheduler's
    fuzzer sends, tests/fuzz/test_scheduler_bus.py) moved the replica there, and every real delta
    after it looked already applied."""
    cache = ClusterCache()
    replica = SnapshotReplica()
    replica.load(image_of(cache.snapshot, "e1", cache.generation))
    assert not replica.apply(DeltaBatch(epoch="e1", base=0, generation=10**9, ops=[]))
    assert replica.generation == 0
    cache.upsert_node(make_node("a", allocatable={"cpu": "1", "pods": "10"}))
    base, gen, ops = cache.take_ops()
    assert replica.apply(DeltaBatch(epoch="e1", base=base, generation=gen, ops=ops))
    assert "a" in replica.snapshot.node_map


def test_two_conflicting_assumes_for_the_last_slot() -> None:
    cache = ClusterCache()
    cache.upsert_node(make_node("n", allocatable={"cpu": "1", "pods": "10"}))
    a = make_pod("a", uid="a", requests={"cpu": "600m"})
    b = make_pod("b", uid="b", requests={"cpu": "600m"})
    cache.upsert_pod(a)
    cache.upsert_pod(b)
    gen = cache.generation
    first = cache.assume(a, "n", generation=gen, scheduler_id="s1")
    second = cache.assume(b, "n", generation=gen, scheduler_id="s2")
    assert first.accepted
    assert not second.accepted
    assert second.reason == "Insufficient cpu"
    assert not cache.assume(a, "n", generation=gen, scheduler_id="s2").accepted


def test_assume_confirm_forget_expire() -> None:
    now = [0.0]
    cache = ClusterCache(max_assumed_age=100, clock=lambda: now[0])
    cache.upsert_node(make_node("n", allocatable={"cpu": "2", "pods": "10"}))
    a = make_pod("a", uid="a", requests={"cpu": "1"})
    cache.upsert_pod(a)
    assert cache.assume(a, "n", generation=cache.generation, scheduler_id="s").accepted
    assert "a" not in cache.pending and "a" in cache.assumed
    now[0] = 100
    assert cache.expire() == []  # as old as allowed, not older
    now[0] = 101
    assert cache.expire() == ["a"]
    assert "a" in cache.pending and cache.snapshot.location("a") is None
    assert cache.assume(a, "n", generation=cache.generation, scheduler_id="s").accepted
    cache.upsert_pod(make_pod("a", uid="a", node_name="n", requests={"cpu": "1"}))
    assert "a" not in cache.assumed and cache.snapshot.location("a") == "n"
    assert not cache.forget("a")


def test_the_replica_reports_pods_the_watch_saw_bound_not_assumed_ones() -> None:
    cache = ClusterCache()
    replica = SnapshotReplica()
    replica.load(image_of(cache.snapshot, "e1", cache.generation))
    bound: list[str] = []
    replica.on_bound = bound.append
    cache.upsert_node(make_node("n", allocatable={"cpu": "2", "pods": "10"}))
    pod = make_pod("a", uid="a", requests={"cpu": "100m"})
    cache.upsert_pod(pod)
    assert cache.assume(pod, "n", generation=cache.generation, scheduler_id="s1").accepted

    def flush() -> None:
        base, gen, ops = cache.take_ops()
        assert replica.apply(
            decode(encode(DeltaBatch(epoch="e1", base=base, generation=gen, ops=ops)), DeltaBatch)
        )

    flush()
    assert bound == []
    cache.upsert_pod(make_pod("a", uid="a", node_name="n", requests={"cpu": "100m"}))
    flush()
    assert bound == ["a"]
