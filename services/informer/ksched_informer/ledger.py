"""The informer's record of accepted placements: the JetStream KV ledger (written before a
placement reaches the binders, so a restarted informer knows what may be being bound) and the
placement publish, the deletes once the watch confirms, and the restore after a restart."""

from __future__ import annotations

import contextlib
import logging

from ksched.bus.connect import Bus
from ksched.bus.jetstream import TypedKV, migrate_kv_bucket, publish
from ksched.bus.messages import PendingPodAction, Placement
from ksched.bus.streams import legacy_assumed_ledger_bucket
from ksched.bus.tokens import encode_token
from ksched.cache.ledger import ClusterCache
from ksched_informer.publisher import Publisher

log = logging.getLogger(__name__)


class Ledger:
    """The assumed-placement ledger of one informer (bucket opened by the service)."""

    def __init__(self, cache: ClusterCache, publisher: Publisher) -> None:
        self.cache = cache
        self.publisher = publisher
        self.bus: Bus | None = None
        self.kv: TypedKV[Placement] | None = None
        #: ledger keys of assumptions the watch confirmed or ended, deleted at the next flush
        self._drops: list[str] = []

    async def record(self, placement: Placement) -> None:
        """Write ``placement`` to the ledger, then publish it to the binders (both acknowledged;
        raises if either fails)."""
        assert self.kv is not None and self.bus is not None
        await self.kv.put(encode_token(placement.pod_uid), placement)
        await publish(
            self.bus, self.publisher.subjects.placements, placement, msg_id=placement.placement_id, timeout=5
        )

    def confirmed(self, uid: str) -> None:
        """The watch shows the assumed pod bound or deleted: drop its entry at the next flush."""
        self._drops.append(encode_token(uid))

    async def flush_drops(self) -> None:
        drops, self._drops = self._drops, []
        if drops and self.kv is not None and self.bus is not None:
            # A delete lost here is harmless: a restarted informer drops entries of bound pods.
            with contextlib.suppress(Exception):
                await self.kv.delete_many(self.bus, drops)

    async def drop(self, uid: str) -> None:
        """Delete the entry of a forgotten or expired assumption now (a failure is harmless)."""
        if self.kv is None:
            return
        with contextlib.suppress(Exception):
            await self.kv.delete(encode_token(uid))

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
            await self.kv.put(encode_token(p.pod_uid), p)

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
            p = entry.value
            pod = self.cache.pending.get(p.pod_uid)
            if pod is None or (p.gang is not None and p.gang.commit_id not in committed):
                await self.kv.delete(key)  # bound or deleted meanwhile, or of a group commit never made
                continue
            self.cache.restore_assumption(pod, p.node_name, p.scheduler_id)
            if p.gang is not None:
                gang_members.setdefault(p.gang.commit_id, set()).add(p.pod_uid)
            self.publisher.emit_pending(PendingPodAction.DELETE, pod, "assumed")
            # The previous instance may have died between recording and publishing the placement:
            # publish it again (same msg id: the stream drops a repeat; binding is idempotent).
            await self.publisher.publish_retrying(
                self.publisher.subjects.placements, p, msg_id=p.placement_id
            )
            restored += 1
        if restored:
            log.info("restored %d assumed placements from the ledger", restored)
