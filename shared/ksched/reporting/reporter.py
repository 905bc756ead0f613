"""What the API server sees from the scheduler: events.k8s.io Events (FailedScheduling,
Scheduled, Preempted...) aggregated into series like upstream's recorder, the pod's
PodScheduled condition and nominatedNodeName on the status subresource, and a PodGroup's
PodGroupScheduled condition (docs/gang.md).

All writes run in the background with bounded concurrency, as jobs of the service's
:class:`~ksched.service.tasks.TaskGroup` (named, and a bug in one ends the service instead of
vanishing); a failed write is logged, never raised into the caller (the scheduling outcome does
not depend on it). A caller that produces writes faster than the API takes them waits in
:meth:`Reporter.room` (the binder, before its next placement), so the backlog stays bounded, as
upstream's recorder bounds its queue, and events stay close behind what they report instead of
dropping (upstream's recorder drops past 1,000 queued).
"""

from __future__ import annotations

import asyncio
import json
import logging
import socket
import time
import uuid
from dataclasses import dataclass
from typing import Any

from ksched.api.kinds import EVENT, POD, POD_GROUP
from ksched.api.scheduling import POD_GROUP_SCHEDULED, REASON_SCHEDULED
from ksched.api.timestamps import micro_time, rfc3339
from ksched.apimachinery.validation import dns1123_subdomain_errors
from ksched.client.rest import Client
from ksched.service.faults import fault_delay, fault_point
from ksched.service.tasks import TaskGroup

log = logging.getLogger(__name__)

SERIES_WINDOW = 6 * 60.0
"""Identical events within this window join one series instead of creating a new Event."""
SERIES_PATCH_INTERVAL = 30.0
"""A series' count is written back at most this often."""
MAX_BACKLOG = 64
NAMED_EVENT_DELAY = "named-event-delay"
"""Fault point (:mod:`ksched.service.faults`, ``delay SECONDS``): each named event (a binding's
Scheduled event) waits before it is written, so that a test can kill a binder while its events trail
its bindings."""
BEFORE_NAMED_EVENT = "before-named-event"
"""Fault point (:mod:`ksched.service.faults`): just before a named event is written (after
:data:`NAMED_EVENT_DELAY`'s wait), the binding it reports done."""
"""Writes handed over and not finished past which :meth:`Reporter.room` makes its caller wait."""


def event_name(regarding: str, unix_nano: int) -> str:
    """An Event's name as upstream's recorder makes it (``GenerateEventName``): the name of the
    object it is about, a dot and the time in hexadecimal nanoseconds; a UUID when that is not a
    valid object name (a name near the 253-character limit). The UUID is derived from the two, so
    the same name and time name the same Event (upstream's is random)."""
    name = f"{regarding}.{unix_nano:x}"
    return str(uuid.uuid5(uuid.NAMESPACE_URL, name)) if dns1123_subdomain_errors(name) else name


@dataclass(frozen=True)
class PodRef:
    namespace: str
    name: str
    uid: str


@dataclass
class _Series:
    name: str
    namespace: str
    count: int
    first: float
    last_patch: float
    pending_patch: bool = False


class Reporter:
    """Writes events and pod status for one component (``reporting_controller``)."""

    def __init__(
        self,
        api: Client,
        tasks: TaskGroup,
        reporting_controller: str = "default-scheduler",
        hostname: str = "",
        concurrency: int = 16,
        max_backlog: int = MAX_BACKLOG,
    ) -> None:
        self.api = api
        self.tasks = tasks
        self.controller = reporting_controller
        self.hostname = hostname or socket.gethostname()
        """Each Event's reportingInstance is ``<reportingController>-<hostname>``, as client-go's
        event recorder makes it (kube-scheduler's, one per profile)."""
        self._sem = asyncio.Semaphore(concurrency)
        self._series: dict[tuple[str, str, str], _Series] = {}
        self._conditions: dict[str, tuple[str, str]] = {}
        #: (namespace, name, uid) of a PodGroup -> the condition last set (a group deleted and created
        #: again under its name is another object, with none)
        self._group_conditions: dict[tuple[str, str, str], tuple[str, str, str]] = {}
        self._writes: set[asyncio.Task[None]] = set()
        #: named events being written (their name -> whether the Event exists once written)
        self._named: dict[str, asyncio.Future[bool]] = {}
        self._max_backlog = max_backlog
        self._room = asyncio.Event()
        self._room.set()
        self.failures = 0

    # --- background plumbing ----------------------------------------------------------------------
    def _spawn(self, name: str, coro: Any) -> asyncio.Task[Any]:
        task = self.tasks.job(name, coro)
        self._writes.add(task)
        task.add_done_callback(self._written)
        if len(self._writes) >= self._max_backlog:
            self._room.clear()
        return task

    def _written(self, task: asyncio.Task[None]) -> None:
        self._writes.discard(task)
        if len(self._writes) < self._max_backlog:
            self._room.set()

    async def room(self) -> None:
        """Return once fewer than ``max_backlog`` writes are pending (at once when they are)."""
        while not self._room.is_set():
            await self._room.wait()

    @property
    def pending(self) -> int:
        """API writes handed to the reporter and not finished yet."""
        return len(self._writes)

    async def drain(self, timeout: float = 5.0) -> None:
        """Wait for writes under way (graceful shutdown)."""
        if self._writes:
            await asyncio.wait(set(self._writes), timeout=timeout)

    async def _call(self, method: str, path: str, body: Any, content_type: str = "application/json") -> int:
        status, _ = await self._request(method, path, body, content_type)
        return status

    async def _request(
        self, method: str, path: str, body: Any = None, content_type: str = "application/json"
    ) -> tuple[int, bytes]:
        """(HTTP status, body); status 0 when the request failed. Failures other than 404 and 409 are
        logged and counted."""
        async with self._sem:
            try:
                status, data = await self.api.request(method, path, body, content_type)
            except Exception as exc:
                self.failures += 1
                log.warning("%s %s failed: %s", method, path, exc)
                return 0, b""
            if status >= 400 and status not in (404, 409):
                log.warning("%s %s: HTTP %d: %s", method, path, status, data[:300])
                self.failures += 1
            return status, data

    # --- events ------------------------------------------------------------------------------------
    def event(
        self,
        pod: PodRef,
        type_: str,
        reason: str,
        action: str,
        note: str,
        related: PodRef | None = None,
        name_ns: int | None = None,
        controller: str = "",
    ) -> asyncio.Future[bool] | None:
        """Record an event about ``pod`` (Normal/Warning), merged into a series when it repeats;
        ``related`` is a second pod involved (the preemptor of a Preempted victim). ``controller`` is
        the reportingController, the profile's schedulerName (upstream's recorder per profile), this
        reporter's own when empty. ``name_ns``
        names the Event by that time instead of now: whoever reports the same happening with the
        same time writes the same Event, and the API refuses the second (409), so it is reported
        once however many processes report it.

        For a named event, a future that turns True once the Event exists (written, or refused as
        already there) and False when its write failed (it is forgotten then, so that reporting it
        again writes it again); None for an event without ``name_ns`` (written in the
        background, never retried)."""
        key = (pod.uid, reason, note)
        now_ns = time.time_ns()
        now = now_ns / 1e9
        series = self._series.get(key)
        name = event_name(pod.name, name_ns) if name_ns is not None else ""
        if series is not None and series.name == name:  # this process reported it already
            return self._named.get(name) or _done(True)
        if series is not None and now - series.first < SERIES_WINDOW:
            series.count += 1
            if not series.pending_patch and now - series.last_patch >= SERIES_PATCH_INTERVAL:
                series.pending_patch = True
                self._spawn("event-series", self._patch_series(series))
            return None
        name = name or event_name(pod.name, now_ns)
        self._series[key] = _Series(name, pod.namespace, 1, now, now)
        if len(self._series) > 50_000:
            cutoff = now - SERIES_WINDOW
            self._series = {k: s for k, s in self._series.items() if s.first >= cutoff}
        body = {
            "apiVersion": "events.k8s.io/v1",
            "kind": "Event",
            "metadata": {"name": name, "namespace": pod.namespace},
            "eventTime": micro_time(now),
            "reportingController": controller or self.controller,
            "reportingInstance": f"{controller or self.controller}-{self.hostname}",
            "action": action,
            "reason": reason,
            "note": note[:1024],
            "type": type_,
            "regarding": {
                "apiVersion": "v1",
                "kind": "Pod",
                "name": pod.name,
                "namespace": pod.namespace,
                "uid": pod.uid,
            },
        }
        if related is not None:
            body["related"] = {
                "apiVersion": "v1",
                "kind": "Pod",
                "name": related.name,
                "namespace": related.namespace,
                "uid": related.uid,
            }
        path = EVENT.path(pod.namespace)
        if name_ns is None:
            self._spawn("event", self._call("POST", path, body))
            return None
        written: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        self._named[name] = written
        self._spawn("event", self._write_named(key, name, path, body, written))
        return written

    async def _write_named(
        self, key: tuple[str, str, str], name: str, path: str, body: Any, written: asyncio.Future[bool]
    ) -> None:
        ok = False
        try:
            await fault_delay(NAMED_EVENT_DELAY)
            fault_point(BEFORE_NAMED_EVENT)
            status = await self._call("POST", path, body)
            ok = 200 <= status < 300 or status == 409  # 409: it exists (another delivery wrote it)
        finally:
            self._named.pop(name, None)
            series = self._series.get(key)
            if not ok and series is not None and series.name == name:
                del self._series[key]  # not written: a repeat of the report writes it again
            if not written.done():
                written.set_result(ok)

    async def _patch_series(self, series: _Series) -> None:
        await asyncio.sleep(0)
        series.pending_patch = False
        series.last_patch = time.time()
        patch = {"series": {"count": series.count, "lastObservedTime": micro_time(series.last_patch)}}
        await self._call(
            "PATCH",
            EVENT.object_path(series.namespace, series.name),
            patch,
            "application/merge-patch+json",
        )

    # --- pod status --------------------------------------------------------------------------------
    def unschedulable(
        self,
        pod: PodRef,
        message: str,
        nominated_node: str | None = None,
        controller: str = "",
        reason: str = "Unschedulable",
    ) -> asyncio.Task[Any] | None:
        """FailedScheduling event plus PodScheduled=False with ``reason`` (``Unschedulable``, or
        ``SchedulerError`` for an attempt that ended in an error) and nominatedNodeName (``""``
        clears it); ``controller``: the pod's profile (:meth:`event`). Returns the status write's
        task (None when the status already says so): what the attempt's preemption waits for before
        deleting."""
        self.event(pod, "Warning", "FailedScheduling", "Scheduling", message, controller=controller)
        condition = (reason, message)
        if self._conditions.get(pod.uid) == condition and nominated_node is None:
            return None
        self._conditions[pod.uid] = condition
        status: dict[str, Any] = {
            "conditions": [
                {
                    "type": "PodScheduled",
                    "status": "False",
                    "reason": reason,
                    "message": message,
                    "lastProbeTime": None,
                    "lastTransitionTime": rfc3339(),
                }
            ]
        }
        if nominated_node is not None:
            status["nominatedNodeName"] = nominated_node or None
        return self._spawn("pod-status", self.patch_status(pod, status))

    async def patch_status(self, pod: PodRef, status: dict[str, Any]) -> int:
        return await self._call(
            "PATCH",
            POD.object_path(pod.namespace, pod.name, "status"),
            {"status": status},
            "application/strategic-merge-patch+json",
        )

    def scheduled(
        self, pod: PodRef, node: str, name_ns: int | None = None, controller: str = ""
    ) -> asyncio.Future[bool] | None:
        """The Scheduled event of a binding; ``name_ns`` (the placement's time) makes a repeat of
        the same placement's report (a redelivery) the same Event, refused by the API;
        ``controller``: the pod's profile (:meth:`event`). With ``name_ns``: a future, True once
        the Event exists, False when writing it failed."""
        self._conditions.pop(pod.uid, None)
        return self.event(
            pod,
            "Normal",
            "Scheduled",
            "Binding",
            f"Successfully assigned {pod.namespace}/{pod.name} to {node}",
            name_ns=name_ns,
            controller=controller,
        )

    def forget(self, uid: str) -> None:
        self._conditions.pop(uid, None)

    # --- pod groups --------------------------------------------------------------------------------
    def pod_group_scheduled(
        self, namespace: str, name: str, status: str, reason: str, message: str, *, uid: str = ""
    ) -> None:
        """Set the PodGroup's PodGroupScheduled condition as upstream's ``updatePodGroupCondition``:
        never from True back to False, and only when it changes. A Coscheduling PodGroup (no
        v1alpha2 object of that name) is left alone. ``uid``: the PodGroup object's, as the replica
        knows it."""
        wanted = (status, reason, message)
        known = self._group_conditions.get((namespace, name, uid))
        if known == wanted or (known is not None and known[0] == "True" and status != "True"):
            return
        self._group_conditions[(namespace, name, uid)] = wanted
        self._spawn("pod-group-status", self.write_pod_group_condition(namespace, name, wanted))

    def pod_group_committed(self, namespace: str, name: str, *, uid: str = "") -> None:
        """A cycle of the group placed it through a group commit, whose ``PodGroupScheduled=True`` the
        informer writes from the commit record (maybe after a later cycle of the same group ends):
        remember it, so that no later cycle's False is written before or over it. Upstream writes a
        cycle's condition before its next cycle starts, and never regresses a True."""
        self._group_conditions[(namespace, name, uid)] = ("True", REASON_SCHEDULED, "")

    async def write_pod_group_condition(
        self, namespace: str, name: str, wanted: tuple[str, str, str]
    ) -> bool:
        """Write ``wanted`` (status, reason, message) as :meth:`pod_group_scheduled` does, now, and say
        whether the outcome is settled: True when written, when nothing changes (or a True would
        regress), when there is no v1alpha2 PodGroup of that name (404) or the API refuses it for
        good (another 4xx); False when a later try may succeed (no answer, 429, 5xx, three
        conflicts in a row)."""
        path = POD_GROUP.object_path(namespace, name)
        for _ in range(3):  # a 409 (written meanwhile) reads it again
            code, data = await self._request("GET", path)
            if code != 200:
                return _settled(code)
            group = json.loads(data)
            conditions = (group.get("status") or {}).get("conditions") or []
            updated = set_pod_group_condition(conditions, wanted, rfc3339())
            if updated is None:
                return True
            group["status"] = {**(group.get("status") or {}), "conditions": updated}
            code = await self._call("PUT", f"{path}/status", group)
            if code != 409:
                return _settled(code)
        return False


def _done(value: bool) -> asyncio.Future[bool]:
    future: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
    future.set_result(value)
    return future


def _settled(code: int) -> bool:
    """Whether an answer ends a write for good (success, or a refusal a retry would not change)."""
    return 200 <= code < 300 or (400 <= code < 500 and code not in (409, 429))


def set_pod_group_condition(
    conditions: list[dict[str, Any]], wanted: tuple[str, str, str], now: str
) -> list[dict[str, Any]] | None:
    """``conditions`` with PodGroupScheduled set to ``wanted`` (status, reason, message) as
    apimachinery's ``SetStatusCondition`` does it (the transition time moves only with the status);
    None when nothing changes or a True condition would turn False (upstream never regresses it)."""
    status, reason, message = wanted
    kind = POD_GROUP_SCHEDULED
    existing = next((c for c in conditions if c.get("type") == kind), None)
    if existing is None:
        new = {
            "type": kind,
            "status": status,
            "lastTransitionTime": now,
            "reason": reason,
            "message": message,
        }
        return [*conditions, new]
    if existing.get("status") == "True" and status != "True":
        return None
    if (existing.get("status"), existing.get("reason"), existing.get("message")) == wanted:
        return None
    changed = dict(existing, status=status, reason=reason, message=message)
    if existing.get("status") != status:
        changed["lastTransitionTime"] = now
    return [changed if c is existing else c for c in conditions]
