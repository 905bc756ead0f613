"""Keeps a SnapshotReplica in sync with the informer over the bus: bootstrap, then apply the
ordered delta stream; a gap, a new epoch or a reconnect to NATS triggers a new bootstrap."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import deque
from collections.abc import Callable

from nats.aio.msg import Msg

from ksched.bus import endpoints
from ksched.bus.bootstrap import BootstrapError, fetch_bootstrap
from ksched.bus.connect import Bus
from ksched.bus.handlers import report_bad_message
from ksched.bus.jetstream import subscribe_ordered
from ksched.bus.messages import SnapshotBootstrapRequest, SnapshotDelta, SnapshotOp
from ksched.bus.subjects import SubjectKind
from ksched.cache.delta import SnapshotImage
from ksched.cache.replica import SnapshotReplica

log = logging.getLogger(__name__)


class ReplicaFollower:
    """Owns a :class:`SnapshotReplica`; ``synced`` is set while it follows the informer."""

    def __init__(
        self,
        bus: Bus,
        replica_id: str,
        replica: SnapshotReplica | None = None,
        *,
        on_change: Callable[[], None] | None = None,
    ) -> None:
        self.bus = bus
        self.replica_id = replica_id
        self.replica = replica or SnapshotReplica()
        self.on_change = on_change
        self.synced = asyncio.Event()
        self.bootstraps = 0
        self.last_delta_lag = 0.0
        #: recent delta lags (seconds from publish to apply) and the last bootstrap's duration
        self.lag_samples: deque[float] = deque(maxlen=20_000)
        self.bootstrap_seconds = 0.0
        self._resync = asyncio.Event()
        self._sub: object | None = None
        #: callers of :meth:`reached` waiting for the replica to move
        self._waiters: list[asyncio.Future[None]] = []
        bus.after_reconnect(self.request_resync)  # its ordered consumer may be gone with the server

    async def run(self) -> None:
        """Bootstrap and follow until cancelled, re-bootstrapping whenever the stream breaks."""
        while True:
            try:
                await self._bootstrap()
            except (BootstrapError, Exception) as exc:
                log.warning("replica %s: bootstrap failed (%s); retrying", self.replica_id, exc)
                self.synced.clear()
                await asyncio.sleep(0.5)
                continue
            await self._resync.wait()
            self._resync.clear()
            self.synced.clear()
            await self._unsubscribe()

    async def _bootstrap(self) -> None:
        started = time.perf_counter()
        await self._unsubscribe()
        subjects = self.bus.subjects
        reply, items = await fetch_bootstrap(
            self.bus,
            endpoints.SNAPSHOT_BOOTSTRAP,
            lambda inbox: SnapshotBootstrapRequest(replica_id=self.replica_id, deliver=inbox),
            SnapshotOp,
        )
        self.replica.load(SnapshotImage(epoch=reply.epoch, generation=reply.generation, ops=items))
        self.bootstraps += 1
        self._sub = await subscribe_ordered(
            self.bus,
            endpoints.SNAPSHOT_DELTA,
            self._on_delta,
            stream=subjects.snapshot_stream,
            start_seq=reply.stream_seq + 1,
        )
        self.synced.set()
        self.bootstrap_seconds = time.perf_counter() - started
        self._changed()
        log.info(
            "replica %s: bootstrapped epoch %s at generation %d (%d nodes) in %.2fs",
            self.replica_id,
            reply.epoch,
            reply.generation,
            len(self.replica.snapshot.nodes),
            self.bootstrap_seconds,
        )

    async def _on_delta(self, delta: SnapshotDelta, msg: Msg) -> None:
        if not self.synced.is_set():
            return
        try:
            applied = self.replica.apply(delta)
        except Exception as exc:  # e.g. an object's JSON that does not decode, after earlier ops applied
            report_bad_message(SubjectKind.SNAPSHOT_DELTA, msg.subject, f"delta does not apply: {exc}")
            applied = False
        if not applied:
            log.info(
                "replica %s: delta %s@%d..%d does not follow %s@%d; re-bootstrapping",
                self.replica_id,
                delta.epoch,
                delta.base,
                delta.generation,
                self.replica.epoch,
                self.replica.generation,
            )
            self.synced.clear()
            self._resync.set()
            return
        if delta.ts:
            self.last_delta_lag = max(0.0, time.time() - delta.ts)
            self.lag_samples.append(self.last_delta_lag)
        self._changed()

    def _changed(self) -> None:
        if self.on_change is not None:
            self.on_change()
        waiters, self._waiters = self._waiters, []
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(None)

    async def reached(self, epoch: str, generation: int, timeout: float) -> bool:
        """Wait (at most ``timeout`` s) until the replica has ``generation`` of ``epoch``, or another
        epoch; whether it has. Woken by each delta applied, not by polling."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        replica = self.replica
        while replica.epoch == epoch and replica.generation < generation:
            remaining = deadline - loop.time()
            if remaining <= 0:
                return False
            waiter: asyncio.Future[None] = loop.create_future()
            self._waiters.append(waiter)
            try:
                async with asyncio.timeout(remaining):
                    await waiter
            except TimeoutError:
                return False
            finally:
                with contextlib.suppress(ValueError):
                    self._waiters.remove(waiter)
        return replica.epoch != epoch or replica.generation >= generation

    def request_resync(self) -> None:
        """Force a new bootstrap (e.g. the informer said our epoch is stale)."""
        self.synced.clear()
        self._resync.set()

    async def _unsubscribe(self) -> None:
        sub, self._sub = self._sub, None
        if sub is not None:
            with contextlib.suppress(Exception):
                await sub.unsubscribe()  # type: ignore[attr-defined]
