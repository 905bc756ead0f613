"""What the informer's feed carries, and how a flush of it is batched."""

from __future__ import annotations

import msgspec
from ksched_informer import feeds
from ksched_informer.publisher import MAX_BATCH_BYTES, MAX_EVENTS_PER_BATCH, feed_batches

from ksched.api.core import Pod
from ksched.bus.codec import encode
from ksched.bus.messages import ClusterEventMsg, FeedBatch, PendingPodAction, PendingPodEvent
from ksched.bus.subjects import Subjects
from ksched.framework.events import ActionType, ClusterEvent, EventResource

POD = msgspec.convert(
    {
        "metadata": {"name": "p", "namespace": "ns", "uid": "u1", "resourceVersion": "7"},
        "spec": {"schedulerName": "default-scheduler", "priority": 5, "containers": [{"name": "c"}]},
    },
    Pod,
)


def test_adds_and_updates_carry_the_pod_and_deletes_only_who_it_was() -> None:
    for action in (PendingPodAction.ADD, PendingPodAction.UPDATE):
        event = feeds.pending_event(action, POD, "e", 3)
        assert msgspec.json.decode(event.pod.pod, type=Pod) == POD
    deleted = feeds.pending_event(PendingPodAction.DELETE, POD, "e", 4, "bound")
    assert deleted.pod.pod == b""
    assert (deleted.pod.uid, deleted.pod.namespace, deleted.pod.name) == ("u1", "ns", "p")
    assert (deleted.pod.scheduler_name, deleted.pod.priority, deleted.reason) == (
        "default-scheduler",
        5,
        "bound",
    )


def test_a_flush_of_events_travels_in_order_in_bounded_batches() -> None:
    def pending(i: int) -> PendingPodEvent:
        pod = msgspec.structs.replace(POD, metadata=msgspec.structs.replace(POD.metadata, uid=f"u{i}"))
        return feeds.pending_event(PendingPodAction.ADD, pod, "e", i)

    node_added = ClusterEvent(EventResource.NODE, ActionType.ADD)
    events: list[PendingPodEvent | ClusterEventMsg] = [pending(i) for i in range(MAX_EVENTS_PER_BATCH)]
    events[10:10] = feeds.cluster_events([node_added], "n1", None, {"big": "x" * MAX_BATCH_BYTES}, "e", 9)
    events.append(pending(MAX_EVENTS_PER_BATCH))
    batches = [envelope.message for envelope in feed_batches("e", events)]
    assert all(isinstance(b, FeedBatch) and b.epoch == "e" for b in batches)
    parts = [b.events for b in batches if isinstance(b, FeedBatch)]
    assert [len(p) for p in parts[:2]] == [10, 1]  # the oversized event travels alone
    assert all(len(p) <= MAX_EVENTS_PER_BATCH for p in parts)
    assert all(len(encode(b)) <= MAX_BATCH_BYTES for b in batches[2:])
    assert [e for p in parts for e in p] == events
    assert feed_batches("e", []) == []


def test_the_events_of_one_change_share_the_objects_encoding() -> None:
    events = [
        ClusterEvent(EventResource.NODE, ActionType.UPDATE_NODE_LABEL),
        ClusterEvent(EventResource.NODE, ActionType.UPDATE_NODE_TAINT),
    ]
    old, new = {"metadata": {"name": "n1"}}, {"metadata": {"name": "n1", "labels": {"a": "b"}}}
    messages = feeds.cluster_events(events, "n1", old, new, "e", 3)
    assert [(m.resource, m.action) for m in messages] == [(e.resource, int(e.action)) for e in events]
    assert all(m.old == msgspec.json.encode(old) and m.new == msgspec.json.encode(new) for m in messages)
    assert feeds.cluster_events(events, "n1", None, new, "e", 3)[0].old is None


def test_only_what_concerns_nominations_goes_to_the_replicas_subject() -> None:
    """The replicas follow ``P.feed.nominated`` alone: a pod nominated, no longer nominated, or leaving
    the pending pods after it was; a pending pod deleted or moved to another scheduler (a replica's
    own nomination may not have reached the API yet). A plain pod's add, assume and binding are not."""
    plain = feeds.pending_event(PendingPodAction.ADD, POD, "e", 1)
    nominated_pod = msgspec.structs.replace(
        POD, status=msgspec.structs.replace(POD.status, nominated_node_name="n1")
    )
    tracked = feeds.NominationFeed()
    assert not tracked.concerns(plain)
    assert not tracked.concerns(feeds.pending_event(PendingPodAction.DELETE, POD, "e", 2, "assumed"))
    assert not tracked.concerns(feeds.pending_event(PendingPodAction.DELETE, POD, "e", 2, "bound"))
    assert tracked.concerns(feeds.pending_event(PendingPodAction.DELETE, POD, "e", 2, "deleted"))
    assert tracked.concerns(feeds.pending_event(PendingPodAction.DELETE, POD, "e", 2, "scheduler-changed"))
    assert tracked.concerns(feeds.pending_event(PendingPodAction.UPDATE, nominated_pod, "e", 3))
    assert tracked.concerns(feeds.pending_event(PendingPodAction.UPDATE, POD, "e", 4))  # cleared
    assert not tracked.concerns(feeds.pending_event(PendingPodAction.UPDATE, POD, "e", 5))
    assert tracked.concerns(feeds.pending_event(PendingPodAction.ADD, nominated_pod, "e", 6))
    assert tracked.concerns(feeds.pending_event(PendingPodAction.DELETE, POD, "e", 7, "bound"))
    assert not tracked.concerns(feeds.pending_event(PendingPodAction.DELETE, POD, "e", 8, "bound"))

    subjects = Subjects("p")
    (batch,) = feed_batches("e", [plain])
    assert batch.endpoint.subject(subjects) == "p.feed.batch"
    (batch,) = feed_batches("e", [plain], nominated=True)
    assert batch.endpoint.subject(subjects) == "p.feed.nominated"
