"""Queueing hints: a cluster event moves an unschedulable pod only if a plugin that rejected it
registered the event and its hint says Queue (upstream ``isPodWorthRequeuing``)."""

from __future__ import annotations

from collections.abc import Iterable

import pytest
from ksched_queue.core import QueueCore
from ksched_queue.queued_pod import QueuedPod

from ksched.api.core import Pod
from ksched.api.lifecycle import PodLifecycle
from ksched.bus.messages import PendingPodAction
from ksched.framework.events import ActionType, ClusterEvent, EventResource
from tests.queue.testing import event_msg, new_core, node, pending_event, pending_of, pod

FIT = "NodeResourcesFit"
TAINTS = "TaintToleration"
AFFINITY = "NodeAffinity"


def _unschedulable(
    core: QueueCore, p: Pod, plugins: Iterable[str] = (FIT,), pending: Iterable[str] = ()
) -> QueuedPod:
    core.queue.add(pending_of(p))
    entry = core.queue.pop()
    assert entry is not None and entry.uid == p.metadata.uid
    assert core.queue.failed(entry.uid, plugins, pending) == PodLifecycle.UNSCHEDULABLE
    return entry


def test_node_allocatable_grew_moves_pod_rejected_by_fit() -> None:
    core, clock = new_core()
    _unschedulable(core, pod("big", requests={"cpu": "3"}))
    clock.advance(5)  # past the first backoff
    small, grown = node("n1", cpu="2"), node("n1", cpu="4")
    moved = core.apply_cluster_event(
        event_msg(EventResource.NODE, ActionType.UPDATE_NODE_ALLOCATABLE, small, grown)
    )
    assert moved == 1
    assert core.state_of("uid-big") == PodLifecycle.ACTIVE


def test_node_allocatable_grew_but_still_too_small_keeps_pod() -> None:
    core, clock = new_core()
    _unschedulable(core, pod("big", requests={"cpu": "8"}))
    clock.advance(5)
    small, grown = node("n1", cpu="2"), node("n1", cpu="4")
    assert (
        core.apply_cluster_event(
            event_msg(EventResource.NODE, ActionType.UPDATE_NODE_ALLOCATABLE, small, grown)
        )
        == 0
    )
    assert core.state_of("uid-big") == PodLifecycle.UNSCHEDULABLE


def test_unrelated_node_label_change_keeps_pod_rejected_by_fit() -> None:
    core, clock = new_core()
    _unschedulable(core, pod("big", requests={"cpu": "3"}))
    clock.advance(5)
    before, after = node("n1", cpu="8"), node("n1", cpu="8", labels={"team": "a"})
    moved = core.apply_cluster_event(
        event_msg(EventResource.NODE, ActionType.UPDATE_NODE_LABEL, before, after)
    )
    assert moved == 0
    assert core.state_of("uid-big") == PodLifecycle.UNSCHEDULABLE


def test_label_change_moves_pod_rejected_by_node_affinity() -> None:
    core, clock = new_core()
    affinity = {
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {"matchExpressions": [{"key": "team", "operator": "In", "values": ["a"]}]}
                    ]
                }
            }
        }
    }
    _unschedulable(core, pod("picky", spec=affinity), plugins=(AFFINITY,))
    clock.advance(5)
    before, after = node("n1"), node("n1", labels={"team": "a"})
    assert (
        core.apply_cluster_event(event_msg(EventResource.NODE, ActionType.UPDATE_NODE_LABEL, before, after))
        == 1
    )
    assert core.state_of("uid-picky") == PodLifecycle.ACTIVE


def test_taint_removed_moves_pod_rejected_by_taint_toleration_taint_added_does_not() -> None:
    core, clock = new_core()
    _unschedulable(core, pod("p"), plugins=(TAINTS,))
    clock.advance(5)
    tainted = node("n1", taints=[{"key": "k", "value": "v", "effect": "NoSchedule"}])
    clean = node("n1")
    assert (
        core.apply_cluster_event(event_msg(EventResource.NODE, ActionType.UPDATE_NODE_TAINT, clean, tainted))
        == 0
    )
    assert core.state_of("uid-p") == PodLifecycle.UNSCHEDULABLE
    assert (
        core.apply_cluster_event(event_msg(EventResource.NODE, ActionType.UPDATE_NODE_TAINT, tainted, clean))
        == 1
    )
    assert core.state_of("uid-p") == PodLifecycle.ACTIVE


def test_assigned_pod_deleted_moves_pod_rejected_by_fit() -> None:
    core, _ = new_core()
    _unschedulable(core, pod("big", requests={"cpu": "3"}))
    victim = pod("victim", node_name="n1", requests={"cpu": "3"})
    moved = core.apply_cluster_event(event_msg(EventResource.ASSIGNED_POD, ActionType.DELETE, victim, None))
    assert moved == 1
    assert core.state_of("uid-big") == PodLifecycle.BACKOFF  # within its 1 s backoff


def test_event_no_plugin_registered_moves_nothing() -> None:
    core, clock = new_core()
    _unschedulable(core, pod("big"))
    clock.advance(5)
    assert not core.queue.is_event_of_interest(ClusterEvent("example.com/Widget", int(ActionType.ADD)))
    assert core.apply_cluster_event(event_msg("example.com/Widget", ActionType.ADD, None, {"a": 1})) == 0
    assert core.state_of("uid-big") == PodLifecycle.UNSCHEDULABLE


def test_event_registered_by_a_plugin_that_did_not_reject_moves_nothing() -> None:
    core, clock = new_core()
    _unschedulable(core, pod("p"), plugins=(TAINTS,))
    clock.advance(5)
    # NodeResourcesFit registered Pod/Delete, but it did not reject this pod
    victim = pod("victim", node_name="n1")
    assert (
        core.apply_cluster_event(event_msg(EventResource.ASSIGNED_POD, ActionType.DELETE, victim, None)) == 0
    )
    assert core.state_of("uid-p") == PodLifecycle.UNSCHEDULABLE


def test_broader_incoming_action_does_not_match_narrow_registration() -> None:
    """A plain Pod/Update (no specific change) does not wake TaintToleration's Pod/UpdatePodToleration."""
    core, clock = new_core()
    _unschedulable(core, pod("p"), plugins=(TAINTS,))
    clock.advance(5)
    other = pod("other", node_name="n1")
    event = event_msg(EventResource.ASSIGNED_POD, ActionType.UPDATE, other, other)
    assert core.apply_cluster_event(event) == 0


def test_hint_that_raises_counts_as_queue() -> None:
    core, clock = new_core()
    _unschedulable(core, pod("p"), plugins=(TAINTS,))
    clock.advance(5)
    # TaintToleration's node hint raises on a missing new node: the pod must not stay stuck
    assert core.queue.on_cluster_event(ClusterEvent(EventResource.NODE, int(ActionType.ADD)), None, None) == 1
    assert core.state_of("uid-p") == PodLifecycle.ACTIVE


@pytest.mark.parametrize("bad", [b"{not json", b'{"metadata": {"name": "\xff"}}'], ids=["json", "utf8"])
def test_undecodable_event_object_requeues(bad: bytes) -> None:
    core, clock = new_core()
    _unschedulable(core, pod("big", requests={"cpu": "3"}))
    clock.advance(5)
    msg = event_msg(EventResource.NODE, ActionType.ADD, None, node("n1"))
    msg.new = bad
    assert core.apply_cluster_event(msg) == 1
    assert core.bad_feed_items == 1


def test_pending_plugin_queue_skips_backoff() -> None:
    core, _ = new_core()
    _unschedulable(core, pod("big", requests={"cpu": "3"}), plugins=(), pending=(FIT,))
    # within the backoff, yet a Pending plugin's Queue sends it straight to activeQ
    assert core.apply_cluster_event(event_msg(EventResource.NODE, ActionType.ADD, None, node("n1"))) == 1
    assert core.state_of("uid-big") == PodLifecycle.ACTIVE


def test_unschedulable_timeout_flushes_after_five_minutes() -> None:
    core, clock = new_core()
    _unschedulable(core, pod("p"), plugins=(TAINTS,))
    clock.advance(299)
    assert core.queue.flush_unschedulable_leftover() == 0
    clock.advance(2)
    assert core.queue.flush_unschedulable_leftover() == 1
    assert core.state_of("uid-p") == PodLifecycle.ACTIVE


def test_deleted_nominated_pod_wakes_lower_or_equal_priority_pods() -> None:
    core, clock = new_core()
    _unschedulable(core, pod("low", priority=1, requests={"cpu": "3"}))
    _unschedulable(core, pod("high", priority=100, requests={"cpu": "3"}))
    clock.advance(5)
    nominated = pod("nominated", priority=50, status={"nominatedNodeName": "n1"})
    core.apply_pending(pending_event(PendingPodAction.ADD, nominated))
    assert core.queue.nominator.node_of("uid-nominated") == "n1"
    core.apply_pending(pending_event(PendingPodAction.DELETE, nominated, reason="deleted"))
    assert core.queue.nominator.node_of("uid-nominated") is None
    assert core.state_of("uid-low") == PodLifecycle.ACTIVE
    assert core.state_of("uid-high") == PodLifecycle.UNSCHEDULABLE
