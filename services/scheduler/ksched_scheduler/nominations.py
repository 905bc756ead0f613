"""Which pending pods are nominated to which node, for this replica's two-pass Filter (upstream's
nominator, fed by the scheduler's own PostFilter decisions and by pod updates).

A replica learns nominations from

* its own decisions (:meth:`NominationTracker.nominate` / :meth:`~NominationTracker.clear`), at once;
* the pods' ``status.nominatedNodeName`` as the informer reports it: a bootstrap of the pending pods,
  then the feed batches that concern nominations (``P.feed.nominated``: a pod nominated, or no
  longer, or deleted while pending), so nominations made by other replicas count here too;
* the pod of each lease it gets;
* its snapshot: a pod it shows bound is nominated nowhere (:meth:`NominationTracker.gone`; the
  informer sends no feed batch for a pod placed without a nomination the API showed, which a
  replica's own may be).

A lease names the feed batch of nominations the queue had applied when it leased the pod
(``LeasedPod.nominated_seq``), and the replica decides once it has applied that batch too
(:meth:`NominationTracker.reached`, at most :data:`NOMINATIONS_WAIT` s): upstream's nominator follows
the same event handlers as its queue, so a pod popped after another one's deletion never meets that
one's nomination (gangs-s9517-223 of ``ksched differential``: the nomination of a member of an
earlier pod group, deleted, kept the next group's member from preempting).

The API lags a replica's own decision (the status patch is written in the background), so for
``hold_seconds`` after a decision a report that disagrees with it is taken for a stale one. A pod
placed in the snapshot (assumed or bound) is not nominated anywhere.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Iterable

import msgspec
from nats.aio.msg import Msg

from ksched.api.core import Pod
from ksched.bus import endpoints, jetstream
from ksched.bus.bootstrap import fetch_bootstrap
from ksched.bus.connect import Bus
from ksched.bus.feed import FeedCursor, FeedVerdict
from ksched.bus.messages import (
    FeedBatch,
    PendingPod,
    PendingPodAction,
    PendingPodEvent,
    PendingPodsRequest,
)
from ksched.framework.nominator import Nominator
from ksched.framework.podinfo import PodInfo

log = logging.getLogger(__name__)

HOLD_SECONDS = 30.0
NOMINATIONS_WAIT = 2.0
"""Seconds a replica waits at most for the nominations a lease asks for (``nominated_seq``), as for
its snapshot's generation; then it decides with them as they are."""


class NominationTracker:
    """Keeps a :class:`Nominator` in line with this replica's decisions and the API's view."""

    def __init__(
        self,
        nominator: Nominator,
        placed: Callable[[str], bool] = lambda uid: False,
        *,
        hold_seconds: float = HOLD_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.nominator = nominator
        self.placed = placed
        self.hold_seconds = hold_seconds
        self.clock = clock
        self._mine: dict[str, tuple[str, float]] = {}  # uid -> (node or "" for cleared, when)
        self.position: tuple[str, int] = ("", 0)
        """(informer epoch, feed stream seq) through which the API's nominations are applied: the
        bootstrap's, then each batch's of ``P.feed.nominated`` (:meth:`advanced`)."""
        self._advance = asyncio.Event()

    # --- how far the feed is applied ----------------------------------------------------------------
    def advanced(self, epoch: str, seq: int) -> None:
        """The nominations are applied through stream seq ``seq`` of ``epoch``."""
        self.position = (epoch, seq)
        self._advance.set()
        self._advance = asyncio.Event()

    async def reached(self, epoch: str, seq: int, timeout: float) -> bool:
        """Wait at most ``timeout`` s until the nominations are applied through ``seq`` of ``epoch``
        (a lease's ``nominated_seq``: the queue had applied that batch when it leased the pod);
        whether they are then. A position of another epoch than ``epoch`` has nothing to wait for
        (its seqs do not compare); none yet (no bootstrap) waits."""
        deadline = time.monotonic() + timeout
        while True:
            at_epoch, at_seq = self.position
            if (at_epoch and at_epoch != epoch) or (at_epoch == epoch and at_seq >= seq):
                return True
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(left):
                    await self._advance.wait()

    # --- this replica's decisions ------------------------------------------------------------------
    def nominate(self, pod: PodInfo, node: str) -> None:
        self.nominator.add(pod, node)
        self._mine[pod.uid] = (node, self.clock())

    def clear(self, uid: str) -> None:
        self.nominator.remove(uid)
        self._mine[uid] = ("", self.clock())

    # --- the API's view -----------------------------------------------------------------------------
    def observe(self, pending: PendingPod) -> None:
        """A pending pod as the informer (or the queue, in a lease) reports it."""
        uid, node = pending.uid, pending.nominated_node_name
        mine = self._mine.get(uid)
        if mine is not None:
            if mine[0] != node and self.clock() - mine[1] < self.hold_seconds:
                return  # our newer decision has not reached the API yet
            del self._mine[uid]
        if not node or self.placed(uid):
            self.nominator.remove(uid)
            return
        if not pending.pod:
            return
        # the API's copy replaces ours even on the same node, as upstream's nominator reads the
        # informer's: a preemption clears the nominations of lower pods that show one (our own
        # nomination stored the pod as popped, without it: sequences-s8701-25 of ksched differential)
        try:
            info = PodInfo(msgspec.json.decode(pending.pod, type=Pod))
        except ValueError as exc:  # JSON that does not decode (DECODE_ERRORS), a quantity that does not parse
            log.warning("nominated pod %s/%s undecodable: %s", pending.namespace, pending.name, exc)
            return
        self.nominator.add(info, node)

    def gone(self, uid: str) -> None:
        """The pod is no longer pending (deleted, bound, or another scheduler's)."""
        self.nominator.remove(uid)
        self._mine.pop(uid, None)

    def on_event(self, event: PendingPodEvent) -> None:
        if event.action == PendingPodAction.DELETE:
            self.gone(event.pod.uid)
        else:
            self.observe(event.pod)

    def load(self, pending: Iterable[PendingPod]) -> None:
        """Start over from the full list of pending pods (the informer's bootstrap)."""
        listed = {p.uid: p for p in pending}
        for uid in self.nominator.uids():
            if uid not in listed:
                self.gone(uid)
        for p in listed.values():
            self.observe(p)


EPOCH_CHECK_SECONDS = 1.0
"""How often the follower compares the informer's epoch it follows with ``current_epoch``'s."""


async def follow_nominations(
    bus: Bus,
    tracker: NominationTracker,
    scheduler_names: list[str],
    identity: str,
    current_epoch: Callable[[], str] = lambda: "",
) -> None:
    """Bootstrap from the informer's pending pods, then follow the feed batches that concern
    nominations in stream order; a new informer epoch (on that feed, or ``current_epoch()``: the
    replica's snapshot, which hears of a new informer even when no nomination changes) means another
    bootstrap. Runs until cancelled; a failure raises, and the caller's task group restarts it."""
    while True:
        epoch = await _follow_one_epoch(bus, tracker, scheduler_names, identity, current_epoch)
        log.info("nominations: the informer's epoch %s ended; bootstrapping again", epoch)


async def _follow_one_epoch(
    bus: Bus,
    tracker: NominationTracker,
    scheduler_names: list[str],
    identity: str,
    current_epoch: Callable[[], str],
) -> str:
    """One bootstrap and the feed after it, until a message of another epoch; returns the epoch."""
    reply, items = await fetch_bootstrap(
        bus,
        endpoints.PENDING_BOOTSTRAP,
        lambda inbox: PendingPodsRequest(requester=identity, deliver=inbox, scheduler_names=scheduler_names),
        PendingPod,
        timeout=30.0,
    )
    tracker.load(items)
    tracker.advanced(reply.epoch, reply.stream_seq)
    # the feed batches that concern nominations, in order (the other batches are the queue's)
    cursor = FeedCursor(epoch=reply.epoch, stream_seq=reply.stream_seq, filtered=True)
    ended = asyncio.Event()

    async def on_event(message: FeedBatch, msg: Msg) -> None:
        verdict = cursor.check(message.epoch, msg.metadata.sequence.stream)
        if verdict == FeedVerdict.APPLY:
            for event in message.events:
                if isinstance(event, PendingPodEvent):
                    tracker.on_event(event)
            tracker.advanced(message.epoch, msg.metadata.sequence.stream)
        elif verdict == FeedVerdict.RESYNC:
            ended.set()

    sub = await jetstream.subscribe_ordered(
        bus,
        endpoints.FEED_NOMINATED,
        on_event,
        stream=bus.subjects.feed_stream,
        start_seq=reply.stream_seq + 1,
    )
    try:
        while not ended.is_set():
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(EPOCH_CHECK_SECONDS):
                    await ended.wait()
            epoch = current_epoch()
            if epoch and epoch != reply.epoch:
                break
        return reply.epoch
    finally:
        with contextlib.suppress(Exception):
            await sub.unsubscribe()
