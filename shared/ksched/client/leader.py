"""Leader election over a coordination.k8s.io/v1 Lease, with client-go's rules and timings.

One instance of a singleton service (informer, queue) leads; the others are hot standbys that
watch the Lease and take it over once it has not changed for ``leaseDurationSeconds`` by their own
clock (never by the timestamps in the record, so clock skew between machines does not matter).

Safety (never two leaders acting at once): a leader counts as leading only until
``renewed_at + renew_deadline``, where ``renewed_at`` is the local time it *sent* its last successful
renewal. A standby's clock starts when it *sees* that renewal, which is later, and it waits
``lease_duration`` > ``renew_deadline``. So a leader that cannot renew stops acting (``is_leader``
turns False on its own at the deadline, then ``on_stopped_leading`` runs) before any standby may
take over. Only after it stopped does it give the Lease up.

Writes use optimistic concurrency: every PUT carries the resourceVersion that was read, so of two
candidates racing for an expired Lease one gets 409 Conflict and stays a standby. On shutdown the
leader releases the Lease (empty holder, ``leaseDurationSeconds: 1``, as client-go's
ReleaseOnCancel) and a watching standby takes over at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import math
import os
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NoReturn

import aiohttp
from prometheus_client import Gauge

from ksched.aio import cancel_and_wait
from ksched.api.timestamps import micro_time
from ksched.client.rest import Client

log = logging.getLogger(__name__)

JITTER_FACTOR = 1.2
"""client-go's JitterFactor: a candidate retries after retry_period * [1, 2.2)."""
LOST_LEADERSHIP_EXIT_CODE = os.EX_TEMPFAIL
"""Exit status of a service that lost its leadership (75): restart it, it comes back as a standby."""
_WATCH_SECONDS = 60

LEADER_STATUS = Gauge(
    "leader_election_master_status",
    "Whether this instance is the leader of the lease (1) or not (0), as client-go reports it.",
    ["name"],
)

Callback = Callable[[], None]


@dataclass(frozen=True)
class ElectionConfig:
    """Where the Lease is and how long it lasts; durations in seconds (client-go defaults)."""

    name: str
    identity: str
    namespace: str = "kube-system"
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0
    release_on_cancel: bool = True

    @property
    def lease_ref(self) -> str:
        """``namespace/name`` of the Lease."""
        return f"{self.namespace}/{self.name}"

    def __post_init__(self) -> None:
        problems = []
        if not self.name:
            problems.append("lease name must not be empty")
        if not self.identity:
            problems.append("identity must not be empty")
        if self.lease_duration < 1 or not float(self.lease_duration).is_integer():
            problems.append(
                f"leaseDuration must be a whole number of seconds >= 1, got {self.lease_duration}"
            )
        if self.lease_duration <= self.renew_deadline:
            problems.append(
                f"leaseDuration ({self.lease_duration}s) must be greater than renewDeadline "
                f"({self.renew_deadline}s)"
            )
        if self.renew_deadline <= JITTER_FACTOR * self.retry_period:
            problems.append(
                f"renewDeadline ({self.renew_deadline}s) must be greater than {JITTER_FACTOR} x retryPeriod "
                f"({self.retry_period}s)"
            )
        if self.retry_period <= 0:
            problems.append(f"retryPeriod must be positive, got {self.retry_period}")
        if problems:
            raise ValueError(
                f"leader election for lease {self.namespace}/{self.name}: " + "; ".join(problems)
            )


@dataclass(frozen=True)
class LeaseRecord:
    """The leader-election fields of a Lease's spec."""

    holder: str = ""
    lease_duration_seconds: int = 0
    acquire_time: str = ""
    renew_time: str = ""
    transitions: int = 0

    @classmethod
    def of(cls, lease: dict[str, Any]) -> LeaseRecord:
        spec = lease.get("spec") or {}
        return cls(
            holder=spec.get("holderIdentity") or "",
            lease_duration_seconds=int(spec.get("leaseDurationSeconds") or 0),
            acquire_time=spec.get("acquireTime") or "",
            renew_time=spec.get("renewTime") or "",
            transitions=int(spec.get("leaseTransitions") or 0),
        )

    def spec(self) -> dict[str, Any]:
        return {
            "holderIdentity": self.holder,
            "leaseDurationSeconds": self.lease_duration_seconds,
            "acquireTime": self.acquire_time,
            "renewTime": self.renew_time,
            "leaseTransitions": self.transitions,
        }


def _newer_or_same(rv: str, than: str) -> bool:
    """Whether resourceVersion ``rv`` is not older than ``than`` (opaque strings: unknown -> True)."""
    if rv.isdigit() and than.isdigit():
        return int(rv) >= int(than)
    return True


class LeaseElector:
    """Campaigns for one Lease. ``start()`` runs :meth:`run` as a task; ``stop()`` ends it and
    releases the Lease if this instance holds it.

    ``on_started_leading`` / ``on_stopped_leading`` / ``on_new_leader`` are plain callables run on
    the event loop the moment the state changes (``on_stopped_leading`` also on ``stop()``).
    ``run()`` returns after leadership was lost (and the Lease given up); it may be called again to
    campaign anew.
    """

    def __init__(
        self,
        api: Client,
        config: ElectionConfig,
        *,
        on_started_leading: Callback | None = None,
        on_stopped_leading: Callback | None = None,
        on_new_leader: Callable[[str], None] | None = None,
        clock: Callable[[], float] = time.monotonic,
        wall: Callable[[], float] = time.time,
    ) -> None:
        self.api = api
        self.config = config
        self.on_started_leading = on_started_leading
        self.on_stopped_leading = on_stopped_leading
        self.on_new_leader = on_new_leader
        self._clock = clock
        self._wall = wall
        self._path = f"/apis/coordination.k8s.io/v1/namespaces/{config.namespace}/leases"
        self.leader = ""
        """The holder identity last observed ('' when none)."""
        self.lost_reason = ""
        self.last_error = ""
        self._leading = False
        self._leading_event = asyncio.Event()
        self._renewed_at = -math.inf
        self._lease: dict[str, Any] | None = None
        self._record: LeaseRecord | None = None
        self._observed_at = -math.inf
        self._api_ok_at = -math.inf
        self._held = False
        self._watch_live = False
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        LEADER_STATUS.labels(config.name).set(0)

    # --- state -------------------------------------------------------------------------------------
    @property
    def identity(self) -> str:
        return self.config.identity

    @property
    def lease_ref(self) -> str:
        return self.config.lease_ref

    @property
    def is_leader(self) -> bool:
        """True only while the last renewal is younger than renew_deadline (a fence for writes)."""
        return self._leading and self._clock() < self._renewed_at + self.config.renew_deadline

    async def wait_leader(self) -> None:
        """Return once this instance leads."""
        await self._leading_event.wait()

    def status(self) -> tuple[bool, str]:
        """Readiness of the election itself: leading, or a standby that reaches the API."""
        if self._leading:
            return (self.is_leader, f"leader of {self.lease_ref}")
        recent = self._clock() - self._api_ok_at < self.config.lease_duration
        if recent or self._watch_live:
            return True, f"standby for {self.lease_ref} (leader: {self.leader or 'none'})"
        return False, f"cannot read lease {self.lease_ref}: {self.last_error or 'no answer yet'}"

    def describe(self) -> dict[str, Any]:
        """For /debug."""
        return {
            "lease": self.lease_ref,
            "identity": self.identity,
            "leading": self.is_leader,
            "leader": self.leader,
            "watching": self._watch_live,
            "last_error": self.last_error,
        }

    # --- lifecycle ---------------------------------------------------------------------------------
    def start(self) -> asyncio.Task[None]:
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self.run(), name=f"leader-election:{self.config.name}")
        return self._task

    async def stop(self) -> None:
        """Stop campaigning (stepping down if leading), then release the Lease if held.

        The caller stops acting as leader *before* calling this."""
        task, self._task = self._task, None
        if task is not None and not task.done():
            await cancel_and_wait(task)
        self.step_down("shutting down")
        if self.config.release_on_cancel:
            await self.release()

    async def run(self) -> None:
        """Campaign until leading, renew until that fails; return after stepping down."""
        self.lost_reason = ""
        log.info("leader election: %s campaigning for lease %s", self.identity, self.lease_ref)
        watch = asyncio.create_task(self._watch_loop(), name=f"lease-watch:{self.config.name}")
        try:
            await self._acquire()
        finally:
            await cancel_and_wait(watch)
            self._watch_live = False
        self._start_leading()
        try:
            await self._renew_loop()
        except BaseException as exc:
            self.step_down("shutting down" if isinstance(exc, asyncio.CancelledError) else f"failed: {exc!r}")
            raise

    # --- leading ------------------------------------------------------------------------------------
    def _start_leading(self) -> None:
        self._leading = True
        self._leading_event.set()
        LEADER_STATUS.labels(self.config.name).set(1)
        log.info("leader election: %s became the leader of lease %s", self.identity, self.lease_ref)
        if self.on_started_leading is not None:
            self.on_started_leading()

    def step_down(self, reason: str) -> None:
        if not self._leading:
            return
        self._leading = False
        self._leading_event.clear()
        self.lost_reason = reason
        LEADER_STATUS.labels(self.config.name).set(0)
        log.warning("leader election: %s stopped leading lease %s: %s", self.identity, self.lease_ref, reason)
        if self.on_stopped_leading is not None:
            self.on_stopped_leading()

    async def _renew_loop(self) -> None:
        """Renew every retry_period; when that fails, stop leading first, then give the Lease up."""
        while True:
            await asyncio.sleep(self.config.retry_period)
            reason = await self._renew_once()
            if reason:
                self.step_down(reason)
                # Stopped acting; now give up the Lease if it still names us (409 if someone took it).
                with contextlib.suppress(Exception):
                    await self.release()
                return

    async def _renew_once(self) -> str:
        deadline = self._renewed_at + self.config.renew_deadline
        while True:
            remaining = deadline - self._clock()
            if remaining <= 0:
                return f"not renewed within renewDeadline ({self.config.renew_deadline}s): {self.last_error}"
            try:
                async with asyncio.timeout(remaining):
                    renewed = await self._attempt()
            except TimeoutError:
                return f"renewal still unanswered at renewDeadline ({self.config.renew_deadline}s)"
            if renewed:
                return ""
            record = self._record
            if record is not None and record.holder and record.holder != self.identity:
                return f"lease taken over by {record.holder}"
            await asyncio.sleep(min(self.config.retry_period, max(0.0, deadline - self._clock())))

    # --- campaigning --------------------------------------------------------------------------------
    async def _acquire(self) -> None:
        while True:
            if await self._attempt():
                return
            await self._wait_for_chance()

    async def _wait_for_chance(self) -> None:
        """Sleep until the observed Lease expires (the watch keeps it current) or, without a live
        watch, for a jittered retry period; a released Lease ends the wait at once."""
        entered = self._clock()
        poll_at = entered + self.config.retry_period * (1 + random.random() * JITTER_FACTOR)
        floor = entered + 0.1 * self.config.retry_period  # a failing API is not hammered
        spread = random.uniform(0, 0.05) * self.config.retry_period
        while True:
            now = self._clock()
            wake_at = poll_at
            if self._watch_live:
                wake_at = max(floor, min(poll_at, self._expires_at() + spread))
            if now >= wake_at:
                return
            self._wake.clear()
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(wake_at - now):
                    await self._wake.wait()

    def _expires_at(self) -> float:
        record = self._record
        if record is None or not record.holder or record.holder == self.identity:
            return -math.inf
        return self._observed_at + record.lease_duration_seconds

    async def _attempt(self) -> bool:
        try:
            return await self._try_acquire_or_renew()
        except (aiohttp.ClientError, OSError, TimeoutError, ValueError) as exc:
            self._note_error(f"{type(exc).__name__}: {exc}")
            return False

    async def _try_acquire_or_renew(self) -> bool:
        started = self._clock()
        now = micro_time(self._wall())
        if self._leading and self._lease is not None and self._record is not None:
            # Fast path: renew with the resourceVersion of our own last write.
            status, doc = await self._call("PUT", self._claim(self._lease, self._record, now))
            if status == 200:
                self._accept(doc, started)
                return True
            if status != 409:
                self._note_error(_describe(status, doc))
                return False
        status, doc = await self._call("GET")
        if status == 404:
            body = {
                "apiVersion": "coordination.k8s.io/v1",
                "kind": "Lease",
                "metadata": {"name": self.config.name, "namespace": self.config.namespace},
                "spec": LeaseRecord(self.identity, int(self.config.lease_duration), now, now, 0).spec(),
            }
            status, doc = await self._call("POST", body)
            if status in (200, 201):
                self._accept(doc, started)
                return True
            self._note_error(_describe(status, doc))  # 409 AlreadyExists: another candidate was first
            return False
        if status != 200 or doc is None:
            self._note_error(_describe(status, doc))
            return False
        self._api_ok_at = self._clock()
        self._observe(doc)
        record = LeaseRecord.of(doc)
        if record.holder and record.holder != self.identity and self._clock() < self._expires_at():
            return False  # held by another and not expired
        status, doc = await self._call("PUT", self._claim(doc, record, now))
        if status == 200:
            self._accept(doc, started)
            return True
        self._note_error(_describe(status, doc))  # 409: lost the race to another candidate
        return False

    def _record_for(self, old: LeaseRecord, now: str) -> LeaseRecord:
        ours = old.holder == self.identity
        return LeaseRecord(
            holder=self.identity,
            lease_duration_seconds=int(self.config.lease_duration),
            acquire_time=old.acquire_time if ours and old.acquire_time else now,
            renew_time=now,
            transitions=old.transitions if ours else old.transitions + 1,
        )

    def _claim(self, lease: dict[str, Any], old: LeaseRecord, now: str) -> dict[str, Any]:
        spec = {**(lease.get("spec") or {}), **self._record_for(old, now).spec()}
        return {**lease, "apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "spec": spec}

    def _accept(self, doc: dict[str, Any] | None, sent_at: float) -> None:
        """Our write succeeded: we hold the Lease as of ``sent_at``."""
        assert doc is not None
        self._lease = doc
        self._record = LeaseRecord.of(doc)
        self._observed_at = self._clock()
        self._api_ok_at = self._observed_at
        self._renewed_at = sent_at
        self._held = True
        self.last_error = ""
        self._set_leader(self.identity)

    def _observe(self, doc: dict[str, Any]) -> None:
        """Take note of the Lease as read or watched; its clock restarts whenever the record changes."""
        rv = str((doc.get("metadata") or {}).get("resourceVersion") or "")
        if self._lease is not None:
            known = str((self._lease.get("metadata") or {}).get("resourceVersion") or "")
            if not _newer_or_same(rv, known):
                return  # an older event than what we already read
        record = LeaseRecord.of(doc)
        self._lease = doc
        if record != self._record:
            self._record = record
            self._observed_at = self._clock()
        if record.holder != self.identity:
            self._held = False
        self._set_leader(record.holder)

    def _set_leader(self, holder: str) -> None:
        if holder == self.leader:
            return
        self.leader = holder
        if holder and holder != self.identity:
            log.info("leader election: lease %s is held by %s", self.lease_ref, holder)
        if self.on_new_leader is not None:
            self.on_new_leader(holder)

    def _note_error(self, text: str) -> None:
        if text != self.last_error:
            log.warning("leader election: lease %s: %s", self.lease_ref, text)
        self.last_error = text

    # --- giving up -----------------------------------------------------------------------------------
    async def release(self) -> bool:
        """Empty the Lease's holder if it still names us (never while leading); True when released."""
        if self._leading:
            raise RuntimeError(f"release of lease {self.lease_ref} while still leading: step down first")
        for _ in range(2):
            if not self._held or self._lease is None:
                return False
            now = micro_time(self._wall())
            record = self._record or LeaseRecord()
            released = LeaseRecord("", 1, now, now, record.transitions)
            spec = {**(self._lease.get("spec") or {}), **released.spec()}
            try:
                async with asyncio.timeout(self.config.renew_deadline):
                    status, doc = await self._call("PUT", {**self._lease, "spec": spec})
                if status == 200 and doc is not None:
                    self._held = False
                    self._observe(doc)
                    log.info("leader election: %s released lease %s", self.identity, self.lease_ref)
                    return True
                if status != 409:
                    self._note_error(_describe(status, doc))
                    return False
                status, doc = await self._call("GET")  # re-read: still ours?
                if status == 200 and doc is not None:
                    self._observe(doc)
                else:
                    return False
            except Exception as exc:  # best effort: the Lease expires anyway
                self._note_error(f"release failed: {type(exc).__name__}: {exc}")
                return False
        return False

    # --- watching ------------------------------------------------------------------------------------
    async def _watch_loop(self) -> None:
        """Follow the Lease so a standby notices renewals and releases without polling."""
        backoff = self.config.retry_period
        while True:
            try:
                await self._watch_once()
                backoff = self.config.retry_period
                continue
            except Exception as exc:  # any failure: fall back to polling, watch again later
                log.debug("leader election: watch of lease %s ended: %s", self.lease_ref, exc)
            finally:
                self._watch_live = False
                self._wake.set()
            await asyncio.sleep(backoff * random.uniform(1.0, JITTER_FACTOR))
            backoff = min(backoff * 2, self.config.lease_duration)

    async def _watch_once(self) -> None:
        query = [
            ("watch", "true"),
            ("fieldSelector", f"metadata.name={self.config.name}"),
            ("timeoutSeconds", str(_WATCH_SECONDS)),
        ]
        async with self.api.stream(self._path, query, _WATCH_SECONDS + 15) as resp:
            if resp.status != 200:
                raise RuntimeError(f"watch: HTTP {resp.status}: {(await resp.read())[:200]!r}")
            async for line in resp.lines():
                event = json.loads(line)
                kind, obj = event.get("type"), event.get("object") or {}
                if kind in ("ADDED", "MODIFIED"):
                    self._observe(obj)
                    self._api_ok_at = self._clock()
                    self._watch_live = True
                elif kind == "DELETED":
                    self._watch_live = False  # poll: the next attempt creates the Lease
                elif kind == "ERROR":
                    raise RuntimeError(f"watch error: {obj.get('message', obj)}")
                self._wake.set()

    # --- HTTP ---------------------------------------------------------------------------------------
    async def _call(
        self, method: str, body: dict[str, Any] | None = None
    ) -> tuple[int, dict[str, Any] | None]:
        path = self._path if method == "POST" else f"{self._path}/{self.config.name}"
        status, data = await self.api.request_once(method, path, body, timeout=self.config.renew_deadline)
        return status, json_object(data)


def json_object(data: bytes) -> dict[str, Any] | None:
    """An answer's JSON object; None for an empty body or one that is not JSON (the plain-text
    "Too many requests" of a 429), so that the error reads "HTTP 429", not a decode error."""
    try:
        doc = json.loads(data) if data else None
    except ValueError:
        return None
    return doc if isinstance(doc, dict) else None


def _describe(status: int, doc: dict[str, Any] | None) -> str:
    message = (doc or {}).get("message", "") if isinstance(doc, dict) else ""
    return f"HTTP {status}: {message}" if message else f"HTTP {status}"


class ElectionThread:
    """A :class:`LeaseElector` on an event loop of its own, in a thread of its own, so the work on
    the caller's loop cannot delay renewal past the deadline (upstream renews from a goroutine of
    its own for the same reason). A loop busy for seconds (a relist of 20,000 pods, a burst of
    decisions) still leaves the renewal thread its turns: CPython switches threads every
    ``sys.getswitchinterval()`` (5 ms) however long a coroutine runs.

    The elector talks to the API server through a :class:`Client` of its own (the same configuration
    as ``api``, its own connections), created on its loop. ``is_leader`` and ``status()`` read the
    elector's state (plain attributes, safe across threads); the callbacks run on the caller's loop,
    except ``on_stopped_leading_now``, which runs in the election thread the moment leadership is lost
    (to stop acting even while the caller's loop is busy: kill children, or exit the process); it
    does not run on ``stop()``.
    """

    def __init__(
        self,
        api: Client,
        config: ElectionConfig,
        *,
        on_started_leading: Callback | None = None,
        on_stopped_leading: Callback | None = None,
        on_stopped_leading_now: Callback | None = None,
    ) -> None:
        self.config = config
        self._api = api
        self._on_started = on_started_leading
        self._on_stopped = on_stopped_leading
        self._on_stopped_now = on_stopped_leading_now
        self._caller: asyncio.AbstractEventLoop | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._started = threading.Event()
        self._leading = asyncio.Event()
        self._ended: asyncio.Future[None] | None = None
        self.elector: LeaseElector | None = None
        self._stop_requested: asyncio.Event | None = None

    # --- the caller's side -------------------------------------------------------------------------
    @property
    def identity(self) -> str:
        return self.config.identity

    @property
    def lease_ref(self) -> str:
        return self.config.lease_ref

    @property
    def leader(self) -> str:
        return self.elector.leader if self.elector is not None else ""

    @property
    def lost_reason(self) -> str:
        return self.elector.lost_reason if self.elector is not None else ""

    @property
    def is_leader(self) -> bool:
        return self.elector is not None and self.elector.is_leader

    def status(self) -> tuple[bool, str]:
        if self.elector is None:
            return False, f"election for {self.lease_ref} not started"
        return self.elector.status()

    def describe(self) -> dict[str, Any]:
        return {**(self.elector.describe() if self.elector is not None else {}), "thread": True}

    async def wait_leader(self) -> None:
        await self._leading.wait()

    def start(self) -> asyncio.Future[None]:
        """Start the thread; the future completes (on the caller's loop) when the election ends:
        leadership lost, or ``stop()``; with the election's exception if it failed."""
        if self._ended is not None:
            return self._ended
        self._caller = asyncio.get_running_loop()
        self._ended = self._caller.create_future()
        self._thread = threading.Thread(
            target=self._main, name=f"lease-renewal:{self.config.name}", daemon=True
        )
        self._thread.start()
        self._started.wait()
        return self._ended

    async def stop(self) -> None:
        """Step down and release the Lease (on the election's loop), then end the thread."""
        loop, thread = self._loop, self._thread
        if loop is None or thread is None or not thread.is_alive():
            return
        if self.elector is not None:
            with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
                await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(self._stop_elector(), loop))
        await asyncio.to_thread(thread.join, self.config.renew_deadline + 5)

    # --- the election thread -----------------------------------------------------------------------
    def _main(self) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        try:
            loop.run_until_complete(self._run())
        finally:
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.close()

    async def _run(self) -> None:
        api = self._api.copy(connections=4)
        self.elector = LeaseElector(
            api,
            self.config,
            on_started_leading=self._started_leading,
            on_stopped_leading=self._stopped_leading,
        )
        stop_requested = self._stop_requested = asyncio.Event()
        self._started.set()
        error: BaseException | None = None
        try:
            run = asyncio.create_task(self.elector.run(), name=f"leader-election:{self.config.name}")
            stop = asyncio.create_task(stop_requested.wait())
            await asyncio.wait((run, stop), return_when=asyncio.FIRST_COMPLETED)
            if not run.done():
                await cancel_and_wait(run)
            elif not run.cancelled():
                error = run.exception()
            stop.cancel()
        finally:
            if stop_requested.is_set():
                self.elector.step_down("shutting down")
                if self.config.release_on_cancel:
                    await self.elector.release()
            await api.close()
            self._to_caller(self._finish, error)

    async def _stop_elector(self) -> None:
        if self._stop_requested is not None:
            self._stop_requested.set()

    def _started_leading(self) -> None:
        self._to_caller(self._leading.set)
        if self._on_started is not None:
            self._to_caller(self._on_started)

    def _stopped_leading(self) -> None:
        stopping = self._stop_requested is not None and self._stop_requested.is_set()
        if self._on_stopped_now is not None and not stopping:
            self._on_stopped_now()
        self._to_caller(self._leading.clear)
        if self._on_stopped is not None:
            self._to_caller(self._on_stopped)

    def _finish(self, error: BaseException | None) -> None:
        if self._ended is not None and not self._ended.done():
            if error is not None:
                self._ended.set_exception(error)
            else:
                self._ended.set_result(None)

    def _to_caller(self, callback: Callable[..., None], *args: Any) -> None:
        caller = self._caller
        if caller is not None and not caller.is_closed():
            caller.call_soon_threadsafe(callback, *args)


def exit_on_lost_leadership(service: str, elector: LeaseElector | ElectionThread) -> NoReturn:
    """Stop acting at once: log why, then leave the process without any cleanup that could still
    write (no flush, no graceful drain). The supervisor (Kubernetes, systemd, ``ksched up``)
    restarts the process, which comes back as a standby."""
    log.critical(
        "%s %s lost the leadership of lease %s (%s); exiting with status %d to restart as a standby",
        service,
        elector.identity,
        elector.lease_ref,
        elector.lost_reason or "unknown reason",
        LOST_LEADERSHIP_EXIT_CODE,
    )
    for handler in logging.getLogger().handlers:
        with contextlib.suppress(Exception):
            handler.flush()
    os._exit(LOST_LEADERSHIP_EXIT_CODE)
