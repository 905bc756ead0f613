"""The queue service's logic at the message level, without NATS: pops with leases, ends of attempts,
lease renewal and expiry, binder requeues, the informer's feed and the rebuild from its pending list.

:class:`QueueCore` turns bus messages into :class:`~ksched_queue.priority_queue.SchedulingQueue`
calls; ``service.py`` only moves messages between NATS and this class.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ksched.api.core import Pod
from ksched.api.lifecycle import PodLifecycle
from ksched.bus.feed import FeedCursor
from ksched.bus.messages import (
    Ack,
    ClusterEventMsg,
    DoneOutcome,
    DoneRequest,
    LeasedPod,
    LeaseRenewReply,
    LeaseRenewRequest,
    PendingPod,
    PendingPodAction,
    PendingPodEvent,
    PopRequest,
    QueueListReply,
    QueueListRequest,
    RequeueRequest,
)
from ksched.framework.changes import pod_changes
from ksched.framework.events import ActionType, ClusterEvent, EventResource

from .device_classes import QueueDeviceClasses
from .events import EVENT_UNSCHEDULED_POD_ADD
from .gangs import QueueGangs
from .leases import Lease, LeaseTable
from .listing import list_queue
from .objects import ObjectDecodeError, decode_object
from .priority_queue import SchedulingQueue
from .queued_pod import PodDecodeError, QueuedPod

log = logging.getLogger(__name__)

MAX_PODS_PER_POP = 256

POD_ADD_LABEL = ClusterEvent(EventResource.UNSCHEDULED_POD, ActionType.ADD).label
POD_UPDATE_LABEL = ClusterEvent(EventResource.UNSCHEDULED_POD, ActionType.UPDATE).label
POD_DELETE_LABEL = ClusterEvent(EventResource.UNSCHEDULED_POD, ActionType.DELETE).label

EventObserver = Callable[[str, float], None]
"""``(event label, seconds)``: how long the queue took to handle one informer event."""


class AckCode:
    """``Ack.code`` values of the queue's replies."""

    LEASE_UNKNOWN = "LeaseUnknown"
    """The lease expired, was released, or its pod stopped being pending: the replica drops the pod."""
    LEASE_MISMATCH = "LeaseMismatch"
    POD_UNKNOWN = "PodUnknown"
    ALREADY_QUEUED = "AlreadyQueued"


@dataclass(slots=True)
class RebuildReport:
    added: int = 0
    updated: int = 0
    dropped: int = 0
    skipped: int = 0


class QueueCore:
    """A :class:`SchedulingQueue` with leases and the feed cursor."""

    def __init__(
        self,
        queue: SchedulingQueue,
        leases: LeaseTable,
        gangs: QueueGangs | None = None,
        gang_events: bool = False,
        device_classes: QueueDeviceClasses | None = None,
    ) -> None:
        self.queue = queue
        self.leases = leases
        #: the DeviceClasses NodeResourcesFit's hints read (DRAExtendedResource; None: gate off)
        self.device_classes = device_classes
        #: pod groups (GenericWorkload): a popped member takes its group's queued members along
        self.gangs = gangs
        #: GangScheduling: a new pending pod is an UnschedulablePod/Add event for the others (upstream)
        self.gang_events = gang_events
        self.cursor = FeedCursor()
        self.nominated_seq = 0
        """Stream seq of the newest feed batch applied that concerns nominations (``P.feed.nominated``;
        0: none since the last rebuild). Every lease carries it: the replica decides the pod with the
        nominations of every event the queue had applied (upstream's nominator follows the same event
        handlers as its queue), not with those of a pod deleted before (gangs-s9517-223)."""
        self.bootstrapped = False
        self.bad_feed_items = 0
        self.on_pop: Callable[[QueuedPod, Lease, str], None] | None = None
        #: trace id -> the ``traceparent`` a lease carries (the OpenTelemetry export only)
        self.lease_context: Callable[[str], str] | None = None
        """``(pod, lease, scheduler id)`` for every pod handed out (the queue's trace events)."""
        self.on_event_handled: EventObserver | None = None
        """Informer events handled, by upstream's label (scheduler_event_handling_duration_seconds)."""
        self._removed_during_repair: dict[str, int] | None = None
        """uid -> stream seq of the feed removals applied since :meth:`begin_repair` (None: no repair)."""

    # --- scheduler replicas ---------------------------------------------------------------------------
    def pop(self, request: PopRequest) -> list[LeasedPod]:
        """Up to ``max_pods`` pods of the requester's profiles (all profiles if it names none), each
        leased to it. Never waits (the service does the long poll)."""
        names = request.scheduler_names or None
        limit = max(1, min(request.max_pods, MAX_PODS_PER_POP))
        out: list[LeasedPod] = []
        while len(out) < limit:
            entry = self.queue.pop(names)
            if entry is None:
                break
            group = self.gangs.group_of(entry.uid) if self.gangs is not None else ""
            out.append(self._lease(entry, request.scheduler_id, group))
            if group:  # the whole group, in the same reply (docs/gang.md)
                out.extend(
                    self._lease(member, request.scheduler_id, group) for member in self._members(entry)
                )
        return out

    def _members(self, entry: QueuedPod) -> list[QueuedPod]:
        """The other queued members of ``entry``'s group (same profile), popped (``PopSpecificPod``)."""
        assert self.gangs is not None
        members = []
        for uid in self.gangs.others(entry.uid):
            other = self.queue.get(uid)
            if other is None or other.scheduler_name != entry.scheduler_name:
                continue
            popped = self.queue.pop_specific(uid)
            if popped is not None:
                members.append(popped)
        return members

    def _lease(self, entry: QueuedPod, scheduler_id: str, group: str) -> LeasedPod:
        stale = self.leases.release_pod(entry.uid)
        if stale is not None:  # a bug if it happens; never hand one pod to two replicas
            log.error("pod uid %s popped while leased to %s; lease revoked", entry.uid, stale.scheduler_id)
        lease = self.leases.grant(entry.uid, scheduler_id, entry.trace_id)
        if self.on_pop is not None:
            self.on_pop(entry, lease, scheduler_id)
        return LeasedPod(
            lease_id=lease.lease_id,
            deadline=lease.deadline,
            lease_seconds=self.leases.lease_seconds,
            pod=entry.pending,
            attempts=entry.info.attempts,
            queued_at=entry.info.timestamp,
            initial_attempt_at=entry.info.initial_attempt_timestamp or entry.info.timestamp,
            trace_id=lease.trace_id,
            min_generation=entry.generation,
            nominated_seq=self.nominated_seq,
            epoch=self.cursor.epoch,
            flushed_from_unschedulable=entry.was_flushed,
            group=group,
            traceparent=self.lease_context(lease.trace_id) if self.lease_context is not None else "",
        )

    def has_poppable(self, request: PopRequest) -> bool:
        return self.queue.has_poppable(request.scheduler_names or None)

    def done(self, request: DoneRequest) -> Ack:
        """End a lease with the attempt's outcome."""
        lease = self.leases.get(request.lease_id)
        if lease is None:
            return Ack(
                ok=False,
                code=AckCode.LEASE_UNKNOWN,
                reason=f"lease {request.lease_id} on pod {request.namespace}/{request.name} is not held "
                "(expired, already ended, or the pod is no longer pending)",
            )
        if lease.uid != request.pod_uid or lease.scheduler_id != request.scheduler_id:
            return Ack(
                ok=False,
                code=AckCode.LEASE_MISMATCH,
                reason=f"lease {request.lease_id} belongs to pod uid {lease.uid} held by "
                f"{lease.scheduler_id}, not pod uid {request.pod_uid} of {request.scheduler_id}",
            )
        self.leases.release(lease.lease_id)
        uid = lease.uid
        outcome = request.outcome
        entry = self.queue.get(uid)
        if entry is not None and outcome != DoneOutcome.SCHEDULED:
            entry.message = request.message
        if outcome == DoneOutcome.SCHEDULED:
            where = self.queue.scheduled(uid)
        elif outcome == DoneOutcome.RETRY:
            where = self.queue.retry(uid)
        elif outcome == DoneOutcome.UNSCHEDULABLE:
            where = self.queue.failed(
                uid,
                request.unschedulable_plugins,
                request.pending_plugins,
                request.nominated_node_name,
                request.preemption_last_victim,
            )
        else:
            where = self.queue.failed(uid, (), (), request.nominated_node_name)
        return Ack(ok=True, code=str(where or ""))

    def renew(self, request: LeaseRenewRequest) -> LeaseRenewReply:
        renewed: list[str] = []
        expired: list[str] = []
        for lease_id in request.lease_ids:
            lease = self.leases.renew(lease_id, request.scheduler_id)
            (renewed if lease is not None else expired).append(lease_id)
        deadline = self.queue.clock.now() + self.leases.lease_seconds
        return LeaseRenewReply(renewed=renewed, expired=expired, deadline=deadline)

    def expire_leases(self) -> list[Lease]:
        """Return the pods of every lease past its deadline to activeQ."""
        expired = self.leases.take_expired()
        for lease in expired:
            log.warning(
                "lease %s of %s on pod uid %s expired; the pod goes back to the active queue",
                lease.lease_id,
                lease.scheduler_id,
                lease.uid,
            )
            self.queue.lease_expired(lease.uid)
        return expired

    # --- binder ---------------------------------------------------------------------------------------
    def requeue(self, request: RequeueRequest) -> Ack:
        """A placement failed after the scheduling cycle (bind): back to backoffQ (or activeQ)."""
        where = self.queue.requeue_assumed(
            request.pod_uid, backoff=request.backoff, unschedulable_plugins=request.unschedulable_plugins
        )
        if where is not None:
            entry = self.queue.get(request.pod_uid)
            if entry is not None:
                entry.message = request.reason
            return Ack(ok=True, code=str(where))
        state = self.queue.state_of(request.pod_uid)
        if state is not None:
            return Ack(ok=True, code=AckCode.ALREADY_QUEUED, reason=f"pod is {state}")
        return Ack(
            ok=False,
            code=AckCode.POD_UNKNOWN,
            reason=f"pod {request.namespace}/{request.name} (uid {request.pod_uid}) is not known to the "
            "queue; the informer's feed re-adds it if it is still pending",
        )

    # --- informer feed --------------------------------------------------------------------------------
    def apply_pending(self, message: PendingPodEvent) -> None:
        observe = self.on_event_handled
        if observe is None:
            self._apply_pending(message)
            return
        started = time.perf_counter()
        before = self.queue.get(message.pod.uid)
        old_pod = before.pod if before is not None else None
        if not self._apply_pending(message):
            return
        elapsed = time.perf_counter() - started
        for label in self._pending_event_labels(message, old_pod):
            observe(label, elapsed)

    def _apply_pending(self, message: PendingPodEvent) -> bool:
        """Apply one pending-pod message; False when it was none of the queue's business (a pod of
        another scheduler it never knew) or has no upstream counterpart (the cache's assume)."""
        pending = message.pod
        if pending.scheduler_name not in self.queue.profiles:
            self._removed(pending.uid)
            if message.action == PendingPodAction.DELETE or self.queue.get(pending.uid) is not None:
                return self._drop(pending.uid, bound=message.reason == PodLifecycle.BOUND) is not None
            return False
        try:
            if message.action == PendingPodAction.ADD:
                self._upsert(pending, message.generation)
            elif message.action == PendingPodAction.UPDATE:
                self._upsert(pending, message.generation, update=True)
            elif message.reason == PodLifecycle.ASSUMED:
                self._removed(pending.uid)
                self.leases.release_pod(pending.uid)  # an attempt in flight ends with it
                self.queue.assumed_by_cache(pending.uid)
                return False
            else:
                self._removed(pending.uid)
                self._drop(pending.uid, bound=message.reason == PodLifecycle.BOUND)
        except PodDecodeError as exc:
            self.bad_feed_items += 1
            log.warning("feed: dropped %s of a pending pod: %s", message.action, exc)
        return True

    def _pending_event_labels(self, message: PendingPodEvent, old_pod: Pod | None) -> list[str]:
        """Upstream's labels for a pending-pod event: Add, Delete, or Update plus each scheduling-
        relevant change (``UnschedulablePodUpdatePodLabel`` ...); none for an update that changed
        nothing (same resourceVersion), which upstream ignores."""
        if message.action == PendingPodAction.ADD:
            return [POD_ADD_LABEL]
        if message.action != PendingPodAction.UPDATE or message.pod.scheduler_name not in self.queue.profiles:
            return [POD_DELETE_LABEL]
        after = self.queue.get(message.pod.uid)
        if after is None or old_pod is None:
            return [POD_UPDATE_LABEL]
        if after.pod is old_pod:
            return []
        changes = (event.label for event in pod_changes(after.pod, old_pod))
        return [POD_UPDATE_LABEL, *(label for label in dict.fromkeys(changes) if label != POD_UPDATE_LABEL)]

    def _upsert(self, pending: PendingPod, generation: int, *, update: bool = False) -> None:
        """Add or update; a pod that moved to another of the profiles starts over (its lease ends)."""
        known = self.queue.get(pending.uid)
        if known is not None and known.scheduler_name != pending.scheduler_name:
            self._drop(pending.uid, bound=True)
            known = None
        if self.gangs is not None:
            self.gangs.note(pending)  # before PreEnqueue reads the group
        if update:
            entry = self.queue.update(pending, generation)
        else:
            entry = self.queue.add(pending, generation)
        if known is None and self.gang_events:
            self.queue.on_cluster_event(EVENT_UNSCHEDULED_POD_ADD, None, entry.pod, generation=generation)

    def _removed(self, uid: str) -> None:
        if self._removed_during_repair is not None:
            self._removed_during_repair[uid] = self.cursor.stream_seq

    # --- the safety net -------------------------------------------------------------------------------
    def begin_repair(self) -> None:
        """Start recording the pods the feed takes out of the queue; call before asking the informer
        for its pending pods, so every removal after the list's stream sequence is recorded."""
        self._removed_during_repair = {}

    def repair(
        self, epoch: str, stream_seq: int, generation: int, listed: list[PendingPod]
    ) -> list[PendingPod] | None:
        """Add back the pods the informer listed as pending at ``stream_seq`` that the queue does not
        hold and the feed did not remove after that sequence; returns them. None when the lists
        cannot be compared: another epoch, or the feed not applied up to ``stream_seq`` yet."""
        removed, self._removed_during_repair = self._removed_during_repair, None
        if removed is None or epoch != self.cursor.epoch or self.cursor.stream_seq < stream_seq:
            return None
        repaired: list[PendingPod] = []
        for pending in listed:
            if pending.scheduler_name not in self.queue.profiles or self.queue.get(pending.uid) is not None:
                continue
            if removed.get(pending.uid, 0) > stream_seq:
                continue  # bound, assumed or deleted after the list was taken
            try:
                self._upsert(pending, generation)
            except PodDecodeError as exc:
                self.bad_feed_items += 1
                log.warning("repair: skipped a pending pod: %s", exc)
                continue
            repaired.append(pending)
        return repaired

    def _drop(self, uid: str, *, bound: bool) -> QueuedPod | None:
        self.leases.release_pod(uid)
        if self.gangs is not None:
            self.gangs.removed(uid)
        return self.queue.delete(uid, bound=bound)

    def apply_cluster_event(self, message: ClusterEventMsg) -> int:
        """Requeue unschedulable pods the event may help; returns how many moved."""
        observe = self.on_event_handled
        if observe is None:
            return self._apply_cluster_event(message)
        started = time.perf_counter()
        moved = self._apply_cluster_event(message)
        observe(ClusterEvent(message.resource, message.action).label, time.perf_counter() - started)
        return moved

    def _apply_cluster_event(self, message: ClusterEventMsg) -> int:
        event = ClusterEvent(message.resource, message.action)
        if message.resource == EventResource.ASSIGNED_POD and self.queue.preemptions.waits_for(message.key):
            self._victim_changed(message)
        pod_group = message.resource == EventResource.POD_GROUP and self.gangs is not None
        device_class = message.resource == EventResource.DEVICE_CLASS and self.device_classes is not None
        wanted = self.queue.wants_events() and self.queue.is_event_of_interest(event)
        if not wanted and not pod_group and not device_class:
            return 0
        try:
            old = decode_object(message.resource, message.old, key=message.key)
            new = decode_object(message.resource, message.new, key=message.key)
        except ObjectDecodeError as exc:
            # hints then get the raw JSON, fail to read it, and requeue (the safe side)
            self.bad_feed_items += 1
            log.warning("feed: %s; hints see the raw bytes", exc)
            old, new = message.old, message.new
        if pod_group and self.gangs is not None:
            self.gangs.pod_group_changed(old, new)  # before the hints: PreEnqueue reads the PodGroup
        if device_class and self.device_classes is not None:
            self.device_classes.changed(old, new)  # before the hints: NodeResourcesFit's read the classes
        return self.queue.on_cluster_event(event, old, new, generation=message.generation) if wanted else 0

    def _victim_changed(self, message: ClusterEventMsg) -> None:
        """A preemption's last victim changed: its preemption is over once it is being deleted or gone
        (upstream ``IsPodRunningPreemption`` reads it from the lister, before the event's handlers)."""
        if message.new is not None:
            try:
                pod = decode_object(message.resource, message.new, key=message.key)
            except ObjectDecodeError:
                return
            if not isinstance(pod, Pod) or pod.metadata.deletion_timestamp is None:
                return
        self.queue.victim_deleting(message.key)

    def rebuild(
        self,
        epoch: str,
        generation: int,
        stream_seq: int,
        pods: list[PendingPod],
        device_classes: Sequence[bytes] = (),
    ) -> RebuildReport:
        """Make the queue hold exactly the informer's pending pods: add new ones, update known ones
        (in-flight pods stay in flight; an assumed pod listed as pending was forgotten by the cache
        and is requeued), drop the rest (deleted, bound or assumed meanwhile); then follow the feed
        after ``stream_seq``. ``device_classes``: the informer's DeviceClasses at ``stream_seq``."""
        report = RebuildReport()
        if self.device_classes is not None:
            self.bad_feed_items += self.device_classes.replace_all(device_classes)
        listed: dict[str, PendingPod] = {}
        for pending in pods:
            if pending.scheduler_name in self.queue.profiles:
                listed[pending.uid] = pending
            else:
                report.skipped += 1
        for uid in self.queue.uids() - listed.keys():
            self._drop(uid, bound=True)
            report.dropped += 1
        for uid in self.leases.pods() - listed.keys():
            self.leases.release_pod(uid)
        if epoch != self.cursor.epoch:
            # Generations of another epoch (a previous informer) do not compare with this one's: a
            # pod keeping the old, higher one would make every scheduler wait for a generation its
            # replica of the new epoch may not reach for a long time.
            for pending in listed.values():
                entry = self.queue.get(pending.uid)
                if entry is not None:
                    entry.generation = 0
        for pending in listed.values():
            known = self.queue.get(pending.uid) is not None
            try:
                self._upsert(pending, generation)  # known pods: updated; assumed ones: forgotten
                if known:
                    report.updated += 1
                else:
                    report.added += 1
            except PodDecodeError as exc:
                self.bad_feed_items += 1
                report.skipped += 1
                log.warning("rebuild: skipped a pending pod: %s", exc)
        self.cursor = FeedCursor(epoch=epoch, stream_seq=stream_seq)
        self.nominated_seq = 0  # which batch before ``stream_seq`` was the last of them is not known
        self._removed_during_repair = None  # a repair under way compares with what the rebuild replaced
        self.bootstrapped = True
        return report

    # --- introspection ------------------------------------------------------------------------------
    def listing(self, request: QueueListRequest) -> QueueListReply:
        """What the queue holds, for ``P.queue.list`` (``ksched ui``)."""
        return list_queue(self.queue, request)

    def debug_state(self) -> dict[str, object]:
        counts = self.queue.counts()
        return {
            "counts": {str(k): v for k, v in counts.items()},
            "leases": len(self.leases),
            "in_flight_events": self.queue.in_flight_events(),
            "nominated": len(self.queue.nominator),
            "feed": {
                "epoch": self.cursor.epoch,
                "stream_seq": self.cursor.stream_seq,
            },
            "bootstrapped": self.bootstrapped,
            "bad_feed_items": self.bad_feed_items,
            "scheduling_cycle": self.queue.scheduling_cycle,
        }

    def state_of(self, uid: str) -> PodLifecycle | None:
        return self.queue.state_of(uid)
