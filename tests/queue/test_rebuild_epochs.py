"""A rebuild from a new informer (new epoch) resets the pods' generations: the previous epoch's
numbers do not compare with the new one's (found by the informer failover e2e tests: pods kept a
generation of the dead informer and every scheduler waited for it before each cycle)."""

from __future__ import annotations

from ksched_queue.core import QueueCore

from ksched.bus.messages import PendingPodAction, PopRequest
from tests.queue.testing import new_core, pending_event, pending_of, pod


def popped_after_rebuild(epoch: str, generation: int) -> tuple[str, int]:
    """(epoch, min_generation) of a pod last seen at generation 1900 of epoch 'old', popped after a
    rebuild at ``generation`` of ``epoch``."""
    core: QueueCore = new_core()[0]
    a = pod("a")
    core.rebuild("old", 5, 1, [pending_of(a)])
    core.apply_pending(pending_event(PendingPodAction.UPDATE, a, epoch="old", generation=1900))
    core.rebuild(epoch, generation, 2, [pending_of(a)])
    popped = core.pop(PopRequest(scheduler_id="r1", scheduler_names=[], max_pods=1))
    assert len(popped) == 1
    return popped[0].epoch, popped[0].min_generation


def test_a_new_epoch_replaces_the_old_generations() -> None:
    assert popped_after_rebuild("new", 960) == ("new", 960)


def test_a_resync_in_the_same_epoch_keeps_the_newest_generation() -> None:
    assert popped_after_rebuild("old", 1950) == ("old", 1950)
    assert popped_after_rebuild("old", 960) == ("old", 1900)
