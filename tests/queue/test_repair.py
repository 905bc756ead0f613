"""The queue's safety net (issue 16): it compares what it holds with the informer's pending pods and
adds back any pod it lost, logged and counted in ``ksched_queue_repaired_pods_total``; pods the feed
removed after the informer's list was taken are not brought back."""

from __future__ import annotations

import pytest
from ksched_queue.metrics import REPAIRED_PODS

from ksched.bus.messages import PendingPodAction
from tests.queue.test_service import Harness
from tests.queue.testing import new_core, pending_event, pending_of, pod


async def test_a_pod_the_queue_lost_is_added_back_logged_and_counted(
    harness: Harness, caplog: pytest.LogCaptureFixture, expect_repairs: None
) -> None:
    service = await harness.start_queue()
    await harness.informer.pod(PendingPodAction.ADD, pod("seen"))
    lost = pod("lost")
    harness.informer.list_pending(pod("seen"), lost)  # pending in the informer, never on the feed
    before = REPAIRED_PODS._value.get()
    assert await service.repair() == 1
    assert REPAIRED_PODS._value.get() == before + 1
    assert "lost" in caplog.text and "safety net" in caplog.text
    assert sorted(lp.pod.name for lp in await harness.pop(n=5)) == ["lost", "seen"]
    assert await service.repair() == 0  # nothing lost any more


async def test_a_queue_that_lost_nothing_repairs_nothing(harness: Harness) -> None:
    service = await harness.start_queue()
    for name in ("a", "b"):
        await harness.informer.pod(PendingPodAction.ADD, pod(name))
    await harness.informer.pod(PendingPodAction.DELETE, pod("a"), reason="bound")
    assert await service.repair() == 0


def test_pods_removed_by_the_feed_after_the_list_are_not_brought_back() -> None:
    core, _ = new_core()
    core.rebuild("e1", 0, 10, [])
    core.begin_repair()
    gone, lost = pod("gone"), pod("lost")
    listed = [pending_of(gone), pending_of(lost)]  # the informer's list, taken at stream seq 11
    assert core.cursor.check("e1", 11).value == "apply"
    core.apply_pending(pending_event(PendingPodAction.ADD, gone))
    assert core.cursor.check("e1", 12).value == "apply"
    core.apply_pending(pending_event(PendingPodAction.DELETE, gone, reason="bound"))
    repaired = core.repair("e1", 11, 0, listed)
    assert [p.name for p in repaired or []] == ["lost"]


def test_no_verdict_when_the_lists_cannot_be_compared() -> None:
    core, _ = new_core()
    core.rebuild("e1", 0, 10, [])
    listed = [pending_of(pod("x"))]
    core.begin_repair()
    assert core.repair("e2", 10, 0, listed) is None  # another informer epoch
    core.begin_repair()
    assert core.repair("e1", 12, 0, listed) is None  # the feed has not reached the list yet
    core.begin_repair()
    core.rebuild("e1", 0, 11, [])  # a rebuild under way replaces what the list is compared with
    assert core.repair("e1", 11, 0, listed) is None
    assert core.repair("e1", 11, 0, listed) is None  # no repair begun
    assert core.queue.get("uid-x") is None
