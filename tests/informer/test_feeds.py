"""What the informer's pending-pod feed carries."""

from __future__ import annotations

import msgspec
from ksched_informer import feeds

from ksched.api.core import Pod
from ksched.bus.messages import PendingPodAction

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
