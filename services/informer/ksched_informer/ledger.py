"""The informer's record of accepted placements: the JetStream KV ledger (written before a
placement reaches the binders, so a restarted informer knows what may be being bound) and the
placement publish, the deletes once the watch confirms, and the restore after a restart.

Placements accepted together are one :class:`PlacementBatch`: one ledger entry (key: the batch
id; the placements without their pod JSON) and one work-queue message (msg id: the batch id). An
entry is closed once the watch has confirmed every pod of it, and the bucket's stream purged below
its oldest open entry every ``PURGE_EVERY`` s (one request for every closed entry, which leaves no
delete marker behind); a forgotten or expired pod is taken out of its entry (rewritten, or deleted
when it was the last). Entries of releases before batches
hold one ``Placement`` under the pod's uid; they are read the same way."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Mapping
from typing import cast

import msgspec
from msgspec.structs import replace

from ksched.api.lifecycle import PodLifecycle
from ksched.bus.connect import Bus
from ksched.bus.endpoints import PLACEMENTS
from ksched.bus.jetstream import PUBLISHED_AGAIN_HEADER, TypedKV, migrate_kv_bucket, publish, publish_started
from ksched.bus.messages import Message, PendingPodAction, Placement, PlacementBatch
from ksched.bus.streams import legacy_assumed_ledger_bucket
from ksched.bus.tokens import encode_token
from ksched.cache.ledger import ClusterCache
from ksched.framework.runtime import Framework
from ksched.service.faults import armed, fault_point
from ksched_informer.publisher import Publisher

log = logging.getLogger(__name__)

AFTER_LEDGER = "informer-after-ledger"
"""Fault point (:mod:`ksched.service.faults`): after a ledger write of a batch of more than
one placement, before publishing it to the binders (armed, the informer waits for the write's
acknowledgement before the publish, so the crash leaves exactly that state)."""

PURGE_EVERY = 5.0
"""Seconds at least between two purges of closed entries. A closed entry that a restarted informer
finds is harmless (it drops entries of pods no longer pending); a delete per entry cost a message per
pod and left a delete marker in the bucket's stream for every entry ever written, which a restore
reads through (issue 39)."""

LEDGER_ENTRY = cast("type[Message]", Placement | PlacementBatch)
"""What a ledger entry holds (``Placement``: entries written before batches)."""


def without_pods(batch_id: str, placements: list[Placement]) -> PlacementBatch:
    """The ledger entry of a batch: its placements without the pod JSON (the work-queue message
    carries it; a restored placement takes the pending pod's, see :meth:`Ledger.restore`)."""
    return PlacementBatch(batch_id=batch_id, placements=[replace(p, pod=b"") for p in placements])


def entry_placements(value: Message) -> tuple[str, list[Placement]]:
    """The batch id and placements of a ledger entry."""
    if isinstance(value, PlacementBatch):
        return value.batch_id, list(value.placements)
    assert isinstance(value, Placement)
    return value.placement_id, [value]


class Ledger:
    """The assumed-placement ledger of one informer (bucket opened by the service)."""

    def __init__(
        self, cache: ClusterCache, publisher: Publisher, frameworks: Mapping[str, Framework] | None = None
    ) -> None:
        self.cache = cache
        self.publisher = publisher
        #: schedulerName -> profile: what a restored placement takes (its devices) is held again
        self.frameworks: Mapping[str, Framework] = frameworks or {}
        self.bus: Bus | None = None
        self.kv: TypedKV[Message] | None = None
        self._batches = 0
        #: ledger key -> the placements of its entry whose pods the watch has not confirmed yet
        self._open: dict[str, dict[str, Placement]] = {}
        #: ledger key -> the batch id of its entry
        self._batch_id: dict[str, str] = {}
        #: pod uid -> the ledger key of its entry
        self._key_of: dict[str, str] = {}
        #: ledger key -> the stream sequence of its entry's last acknowledged write
        self._seq: dict[str, int] = {}
        #: the highest stream sequence of a write of ours acknowledged
        self._last_seq = 0
        #: entries closed since the last purge (deleted one by one if it fails)
        self._closed: list[str] = []
        self._purged_at = float("-inf")
        self.purge_every = PURGE_EVERY
        self._purge_failed = False
        #: entries written again after a failed write (their placements were published), and
        #: placements published again after an unacknowledged publish
        self._rewrites: set[asyncio.Task[None]] = set()

    def new_batch(self, placements: list[Placement]) -> PlacementBatch:
        self._batches += 1
        return PlacementBatch(batch_id=f"{self.publisher.epoch}-{self._batches}", placements=placements)

    async def record(self, batch: PlacementBatch, headers: dict[str, str] | None = None) -> None:
        """Write ``batch`` to the ledger and publish it to the binders with ``headers``: both sent at
        once, the ledger entry first on the connection, then both acknowledgements awaited (one round
        trip, not two). Raises if the publish could not be sent, after taking the entry out again as
        far as it can. A publish sent whose acknowledgement does not come (a timeout, a lost
        connection) may be stored all the same: a server paused past the timeout stores it when it
        resumes, and a binder binds it. So the batch stays assumed and in the ledger, and is
        published again in the background with the same msg id (the stream drops a repeat) until it
        is stored or no longer needed. Likewise a ledger write that fails while the publish is
        stored keeps the batch (a binder binds it): the entry is written again in the background.

        The entry is ahead of the placements on the connection, so a crash of this process can leave
        the entry without the placements (the next leader publishes them again), never the other
        way round."""
        assert self.kv is not None and self.bus is not None
        key = encode_token(batch.batch_id)
        self._track(key, batch.batch_id, batch.placements)
        written: Awaitable[object] | None = None
        try:
            written = await self.kv.put_started(self.bus, key, without_pods(batch.batch_id, batch.placements))
            if len(batch.placements) > 1 and armed(AFTER_LEDGER):  # the test's state: entry only
                with contextlib.suppress(Exception):
                    await written
                fault_point(AFTER_LEDGER)
            published = await publish_started(
                self.bus, PLACEMENTS, batch, msg_id=batch.batch_id, headers=headers, timeout=5
            )
        except Exception:  # the placements were not sent
            for p in batch.placements:
                self._untrack(p.pod_uid)
            with contextlib.suppress(Exception):
                if written is not None:
                    await written
                await self.kv.delete(key)
            raise
        try:
            await published
        except Exception as exc:
            log.warning(
                "placements %s sent, not acknowledged (%r): kept assumed, publishing them again",
                batch.batch_id,
                exc,
            )
            self._republish(key, batch, headers)
        await self._written(key, written)

    def _republish(self, key: str, batch: PlacementBatch, headers: dict[str, str] | None) -> None:
        """Publish what is left of ``batch`` (entry ``key``) again, same msg id, until the stream
        acknowledges it, no pod of it is open any more, or this informer no longer acts (its
        successor publishes the ledger's entries again). Marked as published again (past the
        stream's duplicate window the copy is a new message; a binder checks it as a redelivery)."""
        marked = {**(headers or {}), PUBLISHED_AGAIN_HEADER: "1"}

        async def again() -> None:
            delay = 0.05
            while key in self._open and self.bus is not None and self.publisher.acting():
                await asyncio.sleep(delay)
                left = self._open.get(key)
                if not left:
                    return
                placements = [p for p in batch.placements if p.pod_uid in left]
                try:
                    await publish(
                        self.bus,
                        PLACEMENTS,
                        replace(batch, placements=placements),
                        msg_id=batch.batch_id,
                        headers=marked,
                        timeout=5,
                    )
                    return
                except Exception as exc:
                    log.warning("placements %s not published again (%r); retrying", batch.batch_id, exc)
                    delay = min(delay * 2, 2.0)

        task = asyncio.create_task(again(), name=f"placements-republish:{key}")
        self._rewrites.add(task)
        task.add_done_callback(self._rewrites.discard)

    async def _written(self, key: str, written: Awaitable[object]) -> None:
        """Wait for the ledger write of entry ``key``, whose placements are published; a failed one
        is tried again in the background."""
        try:
            ack = await written
            self._wrote(key, int(getattr(ack, "seq", 0) or 0))
        except Exception as exc:
            log.warning("ledger entry %s not written (%s): the binders have it; writing it again", key, exc)
            self._retry(key)

    def _retry(self, key: str) -> None:
        """Write entry ``key`` again (what is left of it) until stored, or until no pod of it is open."""

        async def again() -> None:
            delay = 0.05
            while key in self._open and self.kv is not None:
                await asyncio.sleep(delay)
                left = self._open.get(key)
                if not left:
                    return
                try:
                    self._wrote(key, await self.kv.put(key, self._entry(key, left)))
                    return
                except Exception as exc:
                    log.warning("ledger entry %s not written again (%s); retrying", key, exc)
                    delay = min(delay * 2, 2.0)

        task = asyncio.create_task(again(), name=f"ledger-rewrite:{key}")
        self._rewrites.add(task)
        task.add_done_callback(self._rewrites.discard)

    def _entry(self, key: str, left: dict[str, Placement]) -> PlacementBatch:
        """What entry ``key`` holds again once only ``left`` of it is open."""
        return without_pods(self._batch_id[key], list(left.values()))

    def _wrote(self, key: str, seq: int) -> None:
        """Entry ``key`` was written at stream sequence ``seq`` (acknowledged)."""
        self._last_seq = max(self._last_seq, seq)
        if key in self._open and seq > 0:
            self._seq[key] = seq

    def _purge_bound(self) -> int | None:
        """Below which stream sequence no message is an open entry's: the oldest open entry's last
        write, else past every write acknowledged; None while an open entry's write is unacknowledged
        (its sequence unknown). A write sent later gets a higher sequence, so the bound holds."""
        if any(key not in self._seq for key in self._open):
            return None
        return min((self._seq[key] for key in self._open), default=self._last_seq + 1)

    def _track(self, key: str, batch_id: str, placements: list[Placement]) -> None:
        self._open[key] = {p.pod_uid: p for p in placements}
        self._batch_id[key] = batch_id
        for p in placements:
            self._key_of[p.pod_uid] = key
            self.publisher.hold(p.pod_uid)

    def _untrack(self, uid: str) -> tuple[str, dict[str, Placement]] | None:
        """Take ``uid`` out of its entry; the entry's key and what is left of it."""
        self.publisher.release(uid)
        key = self._key_of.pop(uid, None)
        if key is None:
            return None
        left = self._open.get(key, {})
        left.pop(uid, None)
        if not left:
            self._open.pop(key, None)
            self._batch_id.pop(key, None)
            self._seq.pop(key, None)
        return key, left

    def placement_of(self, uid: str) -> Placement | None:
        """The recorded placement ``uid`` is assumed by (None if none is recorded)."""
        key = self._key_of.get(uid)
        return self._open.get(key, {}).get(uid) if key is not None else None

    def confirmed(self, uid: str) -> None:
        """The watch shows the assumed pod bound or deleted: its entry goes once all of it is."""
        taken = self._untrack(uid)
        if taken is not None and not taken[1]:
            self._closed.append(taken[0])

    async def flush_drops(self) -> None:
        """After a flush: purge the bucket's stream below its oldest open entry when entries were
        closed and the last purge is ``purge_every`` s old. A purge that fails or waits is harmless:
        a restarted informer drops the entries of pods no longer pending."""
        if not self._closed or self.kv is None or self.bus is None:
            return
        now = asyncio.get_running_loop().time()
        if now - self._purged_at < self.purge_every:
            return
        bound = self._purge_bound()
        if bound is None:
            return
        self._purged_at, closed, self._closed = now, self._closed, []
        try:
            await self.kv.purge_below(bound)
        except Exception as exc:  # logged once as a warning (a missing permission would repeat it)
            (log.debug if self._purge_failed else log.warning)(
                "ledger: closed entries not purged (%s); deleted one by one", exc
            )
            self._purge_failed = True
            # as before the purge: a core publish each, no ack (a lost delete is harmless)
            with contextlib.suppress(Exception):
                await self.kv.delete_many(self.bus, closed, acked=False)

    async def drop(self, uid: str) -> None:
        """Take a forgotten or expired assumption out of the ledger now: its entry is rewritten
        without it, or deleted if it was the last (a failure is harmless: a restarted informer
        re-assumes it only while the pod is pending, and the binder then binds it)."""
        taken = self._untrack(uid)
        if self.kv is None or taken is None:
            return
        key, left = taken
        with contextlib.suppress(Exception):
            if left:
                self._wrote(key, await self.kv.put(key, self._entry(key, left)))
            else:
                await self.kv.delete(key)

    def forget(self, uid: str) -> bool:
        """Forget an assumption in the cache; the pod is pending again (a feed ADD). False if unknown."""
        if self.cache.assumed.get(uid) is None or not self.cache.forget(uid):
            return False
        pod = self.cache.pending.get(uid)
        if pod is not None:
            self.publisher.emit_pending(PendingPodAction.ADD, pod, "forgotten")
        self.publisher.dirty.set()
        return True

    async def put_each(self, placements: list[Placement]) -> None:
        """One entry per placement (a group commit's members; their commit record follows)."""
        assert self.kv is not None
        for p in placements:
            key = encode_token(p.pod_uid)
            self._track(key, p.placement_id, [p])
            self._wrote(key, await self.kv.put(key, p))

    async def restore(self, committed: set[str], gang_members: dict[str, set[str]]) -> None:
        """Re-assume placements accepted by a previous instance and not yet seen bound; a group
        commit's member only if the commit has its record (``committed``), noted in
        ``gang_members``."""
        if self.kv is None:
            return
        assert self.bus is not None  # an older release's ledger (P_P_assumed), moved once we lead
        await migrate_kv_bucket(self.bus, legacy_assumed_ledger_bucket(self.publisher.subjects), self.kv)
        restored = 0
        for key in await self.kv.keys():
            entry = await self.kv.get(key)
            if entry is None:
                continue
            batch_id, placements = entry_placements(entry.value)
            left = []
            for p in placements:
                pod = self.cache.pending.get(p.pod_uid)
                if pod is None or (p.gang is not None and p.gang.commit_id not in committed):
                    continue  # bound or deleted meanwhile, or of a group commit never made
                profile = self.frameworks.get(p.profile)
                self.cache.restore_assumption(pod, p.node_name, p.scheduler_id, profile, p.plugin_state)
                if p.gang is not None:
                    gang_members.setdefault(p.gang.commit_id, set()).add(p.pod_uid)
                self.publisher.emit_pending(PendingPodAction.DELETE, pod, PodLifecycle.ASSUMED)
                # a batch's entry holds no pod JSON: the binder gets the pending pod's
                left.append(p if p.pod else replace(p, pod=msgspec.json.encode(pod)))
            if not left:
                await self.kv.delete(key)
                continue
            self._track(key, batch_id, left)
            self._wrote(key, entry.revision)
            # The previous instance may have died between recording and publishing the placements:
            # publish them again (same msg id: the stream drops a repeat; binding is idempotent).
            # Marked as published again: past the stream's duplicate window the copy is a new
            # message, and a binder checks it as a redelivery (a binding that failed and whose
            # drop from the ledger the previous instance never made is not bound now).
            again: Placement | PlacementBatch = (
                entry.value
                if isinstance(entry.value, Placement)
                else PlacementBatch(batch_id=batch_id, placements=left)
            )
            await self.publisher.publish_retrying(
                PLACEMENTS, again, msg_id=batch_id, headers={PUBLISHED_AGAIN_HEADER: "1"}
            )
            restored += len(left)
        if restored:
            log.info("restored %d assumed placements from the ledger", restored)
