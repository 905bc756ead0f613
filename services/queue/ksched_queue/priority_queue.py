"""The scheduling queue proper: upstream's ``PriorityQueue`` (``pkg/scheduler/backend/queue``) with
queueing hints and SchedulerPopFromBackoffQ on, as in kube-scheduler 1.36. Pure and synchronous: no
I/O, no asyncio, time from an injected :class:`~ksched_queue.clock.Clock`.

- **activeQ**: pods ready to be tried, ordered by the profiles' QueueSort ``less`` (ties first-in
  first-out). One heap per schedulerName so a replica pops only the profiles it serves; every profile
  has the same QueueSort, so heads of different heaps compare.
- **backoffQ** (:mod:`ksched_queue.backoff_queue`): pods waiting out ``initial * 2^(n-1)`` seconds
  (capped at ``max``; ``n`` = unschedulable attempts, or consecutive errors after an error), end
  aligned to whole seconds. Pods that failed with an error (no rejecting plugin) wait in a separate
  error heap, as upstream.
- **unschedulable**: pods rejected by plugins, until a cluster event one of those plugins registered
  gets a Queue hint (:mod:`ksched_queue.queueing_hints`), or ``pod_max_in_unschedulable`` passes.
  Pods a PreEnqueue plugin gates (SchedulingGates) wait here too, reported as *gated*.
- **in flight**: popped pods. Events arriving meanwhile are remembered and replayed through the hints
  when the pod comes back unschedulable (upstream ``inFlightEvents``).

Pods are keyed by uid. Every pending pod the queue knows is in exactly one of those places
(:meth:`SchedulingQueue.state_of`); pods whose attempt ended ``scheduled`` are *assumed*: in no queue,
kept only until the informer reports them bound, so a failed bind can be requeued.
"""

from __future__ import annotations

import logging
import time
from collections import deque
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping

from ksched.api.core import Pod
from ksched.api.lifecycle import PodLifecycle
from ksched.bus.messages import PendingPod
from ksched.framework.changes import pod_changes
from ksched.framework.events import ClusterEvent
from ksched.framework.nominator import Nominator
from ksched.framework.podinfo import pod_priority
from ksched.framework.runtime import PluginObserver
from ksched.framework.status import Code, Status
from ksched.plugins.defaultpreemption import NAME as DEFAULT_PREEMPTION
from ksched.plugins.defaultpreemption import DefaultPreemption

from .backoff_queue import DEFAULT_POD_INITIAL_BACKOFF, DEFAULT_POD_MAX_BACKOFF, BackoffQueue
from .clock import Clock
from .events import (
    ASSUME_REJECTED,
    BACKOFF_COMPLETE,
    EVENT_ASSIGNED_POD_DELETE,
    EVENT_FORCE_ACTIVATE,
    EVENT_UNSCHEDULABLE_TIMEOUT,
    EVENT_UNSCHEDULED_POD_ADD,
    EVENT_UNSCHEDULED_POD_UPDATE,
    LEASE_EXPIRED,
    POP_FROM_BACKOFF_Q,
    SCHEDULE_ATTEMPT_FAILURE,
    event_label,
    matches_any,
)
from .heap import KeyedHeap, SortKeyHeap
from .nominations import Nominations
from .preemptions import QueuePreemptions
from .profiles import LessFn, QueueProfile, SortKeyFn, plugin_events
from .queued_pod import QueuedPod, decode_pending_pod
from .queueing_hints import (
    InFlightEvent,
    Strategy,
    hint_for_in_flight,
    is_event_of_interest,
    newest_generation,
    worth_requeuing,
)
from .rejections import RejectorTally

log = logging.getLogger(__name__)

DEFAULT_POD_MAX_IN_UNSCHEDULABLE = 300.0

IncomingObserver = Callable[[str, str], None]
"""``(queue, event label)`` for every pod entering activeQ / backoffQ / unschedulable."""
MoveObserver = Callable[[QueuedPod, str, str], None]
"""``(pod, queue, event label)`` for the same moves (the queue's trace events)."""
PreCheck = Callable[[Pod], bool]

POD_POPPED_IN_FLIGHT_EVENT = "PodPopped"
"""Upstream's scheduler_inflight_events label for the pods in flight."""


def _never() -> bool:
    return False


_UNSCHEDULED_POD_EVENT_LABELS = frozenset(
    {event_label(EVENT_UNSCHEDULED_POD_ADD), event_label(EVENT_UNSCHEDULED_POD_UPDATE)}
)


class UnknownProfile(KeyError):
    """A pod whose schedulerName is none of the queue's profiles."""


class SchedulingQueue:
    """See the module docstring. Not thread-safe: one asyncio loop owns it."""

    def __init__(
        self,
        profiles: Mapping[str, QueueProfile],
        less: LessFn,
        *,
        clock: Clock,
        pod_initial_backoff: float = DEFAULT_POD_INITIAL_BACKOFF,
        pod_max_backoff: float = DEFAULT_POD_MAX_BACKOFF,
        pod_max_in_unschedulable: float = DEFAULT_POD_MAX_IN_UNSCHEDULABLE,
        pop_from_backoff: bool = True,
        on_incoming: IncomingObserver | None = None,
        group_scheduling: bool = False,
        sort_key: SortKeyFn | None = None,
    ) -> None:
        if not profiles:
            raise ValueError("the scheduling queue needs at least one profile")
        self.profiles = dict(profiles)
        self._of_interest: dict[ClusterEvent, bool] = {}
        self.clock = clock
        self.pod_max_in_unschedulable = pod_max_in_unschedulable
        self.pop_from_backoff = pop_from_backoff
        #: GenericWorkload: a pod group member's failed attempt is retried on backoff alone (upstream:
        #: event-based requeueing is not implemented at the pod group level)
        self.group_scheduling = group_scheduling
        self._on_incoming = on_incoming
        self.on_move: MoveObserver | None = None
        self._less = less
        self._plugin_events = plugin_events(self.profiles.values())
        self._active: dict[str, KeyedHeap[QueuedPod] | SortKeyHeap[QueuedPod]]
        if sort_key is None:
            self._active = {name: KeyedHeap(_uid, self._active_less) for name in self.profiles}
        else:  # the same order as _active_less: the plugin's, then first in first out

            def active_key(entry: QueuedPod) -> tuple[tuple[float, ...], int]:
                return (sort_key(entry.info), entry.seq)

            self._active = {name: SortKeyHeap(_uid, active_key) for name in self.profiles}
        self.backoff = BackoffQueue(
            self.profiles,
            self._active_less,
            clock=clock,
            initial=pod_initial_backoff,
            maximum=pod_max_backoff,
            pop_from_backoff=pop_from_backoff,
        )
        self._unschedulable: dict[str, QueuedPod] = {}
        self._in_flight: dict[str, QueuedPod] = {}
        """Popped pods in pop order."""
        self._flight_order: deque[tuple[int, str]] = deque()
        """(in-flight sequence number, uid) of each pop, oldest first; entries of pods no longer in
        flight are dropped lazily. A dict's first item is no cheap lookup once many of its first
        items were popped (the iteration walks their empty slots), so the oldest is found here."""
        self._assumed: dict[str, QueuedPod] = {}
        self._events: deque[InFlightEvent] = deque()
        self._event_seq = 0
        self._seq = 0
        self._nominations = Nominations()
        self.preemptions = QueuePreemptions()
        """Pods whose preemption a replica runs (DefaultPreemption's PreEnqueue gates them)."""
        self.scheduling_cycle = 0
        self.rejections = RejectorTally()
        """scheduler_unschedulable_pods: queued pods per rejecting (plugin, profile)."""
        self.observe_plugin: PluginObserver | None = None
        """PreEnqueue plugin durations, on the runs ``sample_plugin_metrics`` picks (upstream 10 %)."""
        self.sample_plugin_metrics: Callable[[], bool] = _never
        self.observe_pre_enqueue: Callable[[str, str, float], None] | None = None
        """``(profile, status label, seconds)`` of each PreEnqueue run: upstream's
        scheduler_framework_extension_point_duration_seconds{extension_point="PreEnqueue"}."""

    # --- orderings -----------------------------------------------------------------------------------
    def _active_less(self, a: QueuedPod, b: QueuedPod) -> bool:
        if self._less(a.info, b.info):
            return True
        return not self._less(b.info, a.info) and a.seq < b.seq

    # --- lookups ---------------------------------------------------------------------------------------
    def _entry(self, uid: str) -> QueuedPod | None:
        for table in (self._in_flight, self._unschedulable, self._assumed):
            entry = table.get(uid)
            if entry is not None:
                return entry
        for heap in self._active.values():
            found = heap.get(uid)
            if found is not None:
                return found
        return self.backoff.get(uid)

    def get(self, uid: str) -> QueuedPod | None:
        """The tracked pod (queued, in flight, or assumed)."""
        return self._entry(uid)

    def state_of(self, uid: str) -> PodLifecycle | None:
        entry = self._entry(uid)
        return None if entry is None else entry.state

    def locations(self, uid: str) -> list[PodLifecycle]:
        """Every structure holding ``uid``, found by scanning them (invariant checks: one at most)."""
        found: list[PodLifecycle] = []
        if any(uid in h for h in self._active.values()):
            found.append(PodLifecycle.ACTIVE)
        if uid in self.backoff:
            found.append(PodLifecycle.BACKOFF)
        entry = self._unschedulable.get(uid)
        if entry is not None:
            found.append(PodLifecycle.GATED if entry.gated else PodLifecycle.UNSCHEDULABLE)
        if uid in self._in_flight:
            found.append(PodLifecycle.IN_FLIGHT)
        if uid in self._assumed:
            found.append(PodLifecycle.ASSUMED)
        return found

    def uids(self) -> set[str]:
        """Every pod the queue tracks, assumed ones included."""
        out = set(self._unschedulable) | set(self._in_flight) | set(self._assumed)
        for heap in self._active.values():
            out.update(e.uid for e in heap)
        out.update(e.uid for e in self.backoff)
        return out

    def entries(self) -> Iterator[tuple[PodLifecycle, QueuedPod]]:
        """Every tracked pod with its state: active, backoff, unschedulable or gated, in flight,
        assumed (each structure in its own order; ``ksched ui``'s listing)."""
        for heap in self._active.values():
            for entry in heap:
                yield PodLifecycle.ACTIVE, entry
        for entry in self.backoff:
            yield PodLifecycle.BACKOFF, entry
        for entry in self._unschedulable.values():
            yield (PodLifecycle.GATED if entry.gated else PodLifecycle.UNSCHEDULABLE), entry
        for table, state in (
            (self._in_flight, PodLifecycle.IN_FLIGHT),
            (self._assumed, PodLifecycle.ASSUMED),
        ):
            for entry in table.values():
                yield state, entry

    def counts(self) -> dict[str, int]:
        """Pods per state (``scheduler_pending_pods`` plus in-flight and assumed)."""
        gated = sum(1 for e in self._unschedulable.values() if e.gated)
        return {
            PodLifecycle.ACTIVE: sum(len(h) for h in self._active.values()),
            PodLifecycle.BACKOFF: len(self.backoff),
            PodLifecycle.UNSCHEDULABLE: len(self._unschedulable) - gated,
            PodLifecycle.GATED: gated,
            PodLifecycle.IN_FLIGHT: len(self._in_flight),
            PodLifecycle.ASSUMED: len(self._assumed),
        }

    def has_poppable(self, scheduler_names: Collection[str] | None = None) -> bool:
        """Whether :meth:`pop` would return a pod now."""
        for name in self._served(scheduler_names):
            if len(self._active[name]) or self.backoff.has_poppable(name):
                return True
        return False

    def wants_events(self) -> bool:
        """Whether a cluster event can change anything (some pod unschedulable or in flight)."""
        return bool(self._unschedulable) or bool(self._in_flight)

    def in_flight_events(self) -> int:
        return len(self._events)

    def in_flight_event_counts(self) -> dict[str, int]:
        """scheduler_inflight_events: events remembered for in-flight pods by label, and the pods in
        flight as ``PodPopped`` (upstream's list holds both)."""
        counts = {POD_POPPED_IN_FLIGHT_EVENT: len(self._in_flight)}
        for recorded in self._events:
            label = event_label(recorded.event)
            counts[label] = counts.get(label, 0) + 1
        return counts

    @property
    def nominator(self) -> Nominator:
        return self._nominations.nominator

    # --- metrics -----------------------------------------------------------------------------------------
    def _incoming(self, queue: PodLifecycle, event: str, entry: QueuedPod) -> None:
        if self._on_incoming is not None:
            self._on_incoming(queue, event)
        if self.on_move is not None:
            self.on_move(entry, queue, event)

    # --- PreEnqueue --------------------------------------------------------------------------------------
    def _run_pre_enqueue(self, entry: QueuedPod) -> None:
        """Upstream ``runPreEnqueuePlugins``, timed for the PreEnqueue extension point when observed
        (every run, whether or not a plugin gates the pod)."""
        observe = self.observe_pre_enqueue
        if observe is None:
            self._run_pre_enqueue_plugins(entry)
            return
        started = time.perf_counter()
        status = self._run_pre_enqueue_plugins(entry)
        label = status.code.label if status is not None else Code.SUCCESS.label
        observe(entry.scheduler_name, label, time.perf_counter() - started)

    def _run_pre_enqueue_plugins(self, entry: QueuedPod) -> Status | None:
        """The gating plugin first; the first failure gates the pod and is returned."""
        plugins = self.profiles[entry.scheduler_name].pre_enqueue
        gating = entry.info.gating_plugin
        order = list(plugins)
        if gating in plugins:
            order.remove(gating)
            order.insert(0, gating)
        observe = (
            self.observe_plugin if self.observe_plugin is not None and self.sample_plugin_metrics() else None
        )
        for name in order:
            started = time.perf_counter() if observe is not None else 0.0
            try:
                status = plugins[name].pre_enqueue(entry.pod)
            except Exception as exc:
                status = Status.as_error(exc)
            if observe is not None:
                label = status.code.label if status is not None else Code.SUCCESS.label
                observe(name, "PreEnqueue", label, time.perf_counter() - started, 1)
            if status is None or status.code == Code.SUCCESS:
                continue
            entry.info.unschedulable_plugins.add(name)
            entry.info.gating_plugin = name
            entry.gating_events = self._plugin_events.get(name, [])
            if status.code == Code.ERROR:
                log.error("PreEnqueue plugin %s failed for pod %s: %s", name, entry.key, status.message)
            self.rejections.sync(entry)
            return status
        entry.info.gating_plugin = ""
        return None

    # --- moves between the queues --------------------------------------------------------------------
    def _remove_from_queues(self, entry: QueuedPod) -> None:
        """Take ``entry`` out of activeQ, backoffQ or unschedulable (whichever holds it)."""
        state = entry.state
        name = entry.scheduler_name
        if state == PodLifecycle.ACTIVE:
            self._active[name].delete(entry.uid)
        elif state == PodLifecycle.BACKOFF:
            self.backoff.delete(entry)
        elif state in (PodLifecycle.UNSCHEDULABLE, PodLifecycle.GATED):
            del self._unschedulable[entry.uid]
        else:
            return
        entry.state = None
        self.rejections.sync(entry)

    def _to_unschedulable(self, entry: QueuedPod, event: str) -> None:
        """Upstream ``unschedulablePods.addOrUpdate``."""
        if entry.uid not in self._unschedulable:
            self._remove_from_queues(entry)
            self._incoming(PodLifecycle.UNSCHEDULABLE, event, entry)
            self._unschedulable[entry.uid] = entry
        entry.state = PodLifecycle.GATED if entry.gated else PodLifecycle.UNSCHEDULABLE
        self.rejections.sync(entry)

    def _move_to_active(self, entry: QueuedPod, event: str, from_backoff: bool = False) -> bool:
        """Upstream ``moveToActiveQ``: PreEnqueue (unless coming from backoffQ), then activeQ or gated."""
        if not (self.pop_from_backoff and from_backoff):
            self._run_pre_enqueue(entry)
        if entry.gated:
            if entry.state in (PodLifecycle.ACTIVE, PodLifecycle.BACKOFF):
                return False
            self._to_unschedulable(entry, event)
            return False
        if entry.info.initial_attempt_timestamp is None:
            entry.info.initial_attempt_timestamp = self.clock.now()
        self._remove_from_queues(entry)
        self._active[entry.scheduler_name].add_or_update(entry)
        entry.state = PodLifecycle.ACTIVE
        self.rejections.sync(entry)
        self._incoming(PodLifecycle.ACTIVE, event, entry)
        if event in _UNSCHEDULED_POD_EVENT_LABELS:
            self._nominations.add(entry)
        return True

    def _move_to_backoff(self, entry: QueuedPod, event: str) -> bool:
        """Upstream ``moveToBackoffQ``: PreEnqueue runs here (SchedulerPopFromBackoffQ)."""
        if self.pop_from_backoff:
            self._run_pre_enqueue(entry)
            if entry.gated:
                self._to_unschedulable(entry, event)
                return False
        self._remove_from_queues(entry)
        self.backoff.add(entry)
        entry.state = PodLifecycle.BACKOFF
        self.rejections.sync(entry)
        self._incoming(PodLifecycle.BACKOFF, event, entry)
        return True

    def _requeue(self, entry: QueuedPod, strategy: Strategy, event: str) -> PodLifecycle:
        """Upstream ``requeuePodWithQueueingStrategy``; returns where the pod went."""
        if strategy == Strategy.SKIP:
            self._to_unschedulable(entry, event)
            return entry.state or PodLifecycle.UNSCHEDULABLE
        if strategy == Strategy.AFTER_BACKOFF and self.backoff.is_backing_off(entry):
            if self._move_to_backoff(entry, event):
                return PodLifecycle.BACKOFF
            return entry.state or PodLifecycle.UNSCHEDULABLE
        if self._move_to_active(entry, event):
            return PodLifecycle.ACTIVE
        return entry.state or PodLifecycle.UNSCHEDULABLE

    # --- queueing hints --------------------------------------------------------------------------------
    def is_event_of_interest(self, event: ClusterEvent) -> bool:
        """Known per event (resource, action, label) once asked: the profiles' hints never change."""
        known = self._of_interest.get(event)
        if known is None:
            known = self._of_interest[event] = is_event_of_interest(self.profiles, event)
        return known

    def _worth_requeuing(self, entry: QueuedPod, event: ClusterEvent, old: object, new: object) -> Strategy:
        return worth_requeuing(self.profiles[entry.scheduler_name], entry, event, old, new)

    def _record_in_flight(self, event: ClusterEvent, old: object, new: object, generation: int = 0) -> None:
        if self._in_flight:
            self._event_seq += 1
            self._events.append(InFlightEvent(self._event_seq, event, old, new, generation))

    def _move_pods(
        self, entries: Iterable[QueuedPod], event: ClusterEvent, old: object, new: object, generation: int = 0
    ) -> int:
        """Upstream ``movePodsToActiveOrBackoffQueue``; returns how many pods left unschedulable. A pod
        moved is to be scheduled on a snapshot that has the event (``generation``, the cache's): upstream
        updates its cache before it moves pods; here the replica waits for it (LeasedPod.min_generation)."""
        if not self.is_event_of_interest(event):
            return 0
        label = event_label(event)
        moved = 0
        for entry in entries:
            if entry.gated and not matches_any(event, entry.gating_events):
                continue
            strategy = self._worth_requeuing(entry, event, old, new)
            if strategy == Strategy.SKIP:
                continue
            entry.generation = max(entry.generation, generation)
            self._remove_from_queues(entry)
            if self._requeue(entry, strategy, label) in (PodLifecycle.ACTIVE, PodLifecycle.BACKOFF):
                moved += 1
        self._record_in_flight(event, old, new, generation)
        return moved

    # --- cluster events ------------------------------------------------------------------------------------
    def on_cluster_event(
        self,
        event: ClusterEvent,
        old: object = None,
        new: object = None,
        pre_check: PreCheck | None = None,
        generation: int = 0,
    ) -> int:
        """Upstream ``MoveAllToActiveOrBackoffQueue``; returns how many pods moved to active/backoff.
        ``generation``: the cache generation that includes the change (:meth:`_move_pods`)."""
        if not self.is_event_of_interest(event):
            return 0
        entries = [e for e in self._unschedulable.values() if pre_check is None or pre_check(e.pod)]
        return self._move_pods(entries, event, old, new, generation)

    # --- pending-pod feed --------------------------------------------------------------------------------
    def add(self, pending: PendingPod, generation: int = 0) -> QueuedPod:
        """A new pending pod (upstream ``Add``); a pod already known is updated instead. An assumed
        pod pending again means the cache forgot its assumption (bind failed or expired): it goes
        back through backoff, as upstream requeues a pod whose binding cycle failed."""
        entry = self._entry(pending.uid)
        if entry is None:
            return self._add_new(pending, generation, event_label(EVENT_UNSCHEDULED_POD_ADD))
        entry = self.update(pending, generation)
        if entry.state == PodLifecycle.ASSUMED:
            self.requeue_assumed(entry.uid)
        elif entry.state == PodLifecycle.IN_FLIGHT and entry.cache_assumed:
            entry.cache_assumed = False
            entry.requeue_after_done = (True, ())
        return entry

    def _add_new(self, pending: PendingPod, generation: int, event: str) -> QueuedPod:
        if pending.scheduler_name not in self.profiles:
            raise UnknownProfile(
                f"pod {pending.namespace}/{pending.name}: schedulerName {pending.scheduler_name!r} "
                f"is not one of the queue's profiles {sorted(self.profiles)}"
            )
        pod = decode_pending_pod(pending)
        self._seq += 1
        entry = QueuedPod(pending, pod, self.clock.now(), self._seq, generation)
        self._move_to_active(entry, event)
        return entry

    def update(self, pending: PendingPod, generation: int = 0) -> QueuedPod:
        """A pending pod changed (upstream ``Update`` plus the event handler's nomination move)."""
        entry = self._entry(pending.uid)
        if entry is None:
            return self._add_new(pending, generation, event_label(EVENT_UNSCHEDULED_POD_UPDATE))
        if pending.scheduler_name != entry.scheduler_name:
            self.delete(pending.uid)
            return self._add_new(pending, generation, event_label(EVENT_UNSCHEDULED_POD_UPDATE))
        entry.generation = max(entry.generation, generation)
        old_pod = entry.pod
        if pending.resource_version and pending.resource_version == entry.pending.resource_version:
            return entry
        new_pod = decode_pending_pod(pending)
        events = pod_changes(new_pod, old_pod)
        state = entry.state
        if state == PodLifecycle.IN_FLIGHT:
            entry.set_pod(pending, new_pod)
            for event in events:
                self._event_seq += 1
                self._events.append(InFlightEvent(self._event_seq, event, old_pod, new_pod))
        elif state == PodLifecycle.ASSUMED:
            entry.set_pod(pending, new_pod)
        elif state == PodLifecycle.ACTIVE:
            entry.set_pod(pending, new_pod)
            self._active[entry.scheduler_name].add_or_update(entry)
            self._nominations.update(old_pod, entry)
        elif state == PodLifecycle.BACKOFF:
            entry.set_pod(pending, new_pod)
            self.backoff.update(entry)
            self._nominations.update(old_pod, entry)
        else:  # unschedulable or gated: the update itself may make it schedulable
            entry.set_pod(pending, new_pod)
            self._nominations.update(old_pod, entry)
            for event in events:
                strategy = self._worth_requeuing(entry, event, old_pod, new_pod)
                if self._requeue(entry, strategy, event_label(event)) in (
                    PodLifecycle.ACTIVE,
                    PodLifecycle.BACKOFF,
                ):
                    break
        old_nominated = old_pod.status.nominated_node_name or ""
        if old_nominated and old_nominated != (new_pod.status.nominated_node_name or ""):
            self._nominated_pod_gone(old_pod)
        return entry

    def delete(self, uid: str, *, bound: bool = False) -> QueuedPod | None:
        """The pod is no longer pending: deleted, bound, or moved to another scheduler (upstream
        ``Delete``). A deleted pod that held a nomination wakes lower-or-equal priority pods."""
        entry = self._entry(uid)
        if entry is None:
            return None
        self._nominations.delete(uid)
        self.preemptions.end(uid)
        if entry.state == PodLifecycle.IN_FLIGHT:
            self._done(uid)
        elif entry.state == PodLifecycle.ASSUMED:
            del self._assumed[uid]
        else:
            self._remove_from_queues(entry)
        entry.state = None
        if not bound and entry.pod.status.nominated_node_name:
            self._nominated_pod_gone(entry.pod)
        return entry

    def _nominated_pod_gone(self, pod: Pod) -> None:
        priority = pod_priority(pod)
        self.on_cluster_event(EVENT_ASSIGNED_POD_DELETE, pod, None, lambda p: pod_priority(p) <= priority)

    def activate(self, uids: Iterable[str]) -> int:
        """Upstream ``Activate``: move pods from unschedulable/backoffQ to activeQ at once; an in-flight
        pod gets a ForceActivate event for when it comes back. Returns how many moved."""
        moved = 0
        for uid in uids:
            entry = self._entry(uid)
            if entry is None:
                continue
            if entry.state in (PodLifecycle.UNSCHEDULABLE, PodLifecycle.GATED, PodLifecycle.BACKOFF):
                from_backoff = entry.state == PodLifecycle.BACKOFF
                if from_backoff:
                    self._remove_from_queues(entry)
                if self._move_to_active(entry, EVENT_FORCE_ACTIVATE.label, from_backoff):
                    moved += 1
            elif entry.state == PodLifecycle.IN_FLIGHT:
                self._event_seq += 1
                self._events.append(InFlightEvent(self._event_seq, EVENT_FORCE_ACTIVATE, None, entry.pod))
        return moved

    # --- popping and the end of an attempt ------------------------------------------------------------
    def _served(self, scheduler_names: Collection[str] | None) -> list[str]:
        if scheduler_names is None:
            return list(self.profiles)
        return [n for n in scheduler_names if n in self.profiles]

    def pop(self, scheduler_names: Collection[str] | None = None) -> QueuedPod | None:
        """The head of activeQ among ``scheduler_names`` (all profiles when None); when activeQ is
        empty, the head of backoffQ (SchedulerPopFromBackoffQ). The pod is then in flight."""
        names = self._served(scheduler_names)
        best: QueuedPod | None = None
        for name in names:
            head = self._active[name].peek()
            if head is not None and (best is None or self._active_less(head, best)):
                best = head
        if best is not None:
            self._active[best.scheduler_name].pop()
        elif self.pop_from_backoff:
            best = self.backoff.head(names)
            if best is None:
                return None
            self.backoff.pop_head(best)
            self._incoming(PodLifecycle.ACTIVE, POP_FROM_BACKOFF_Q, best)
        else:
            return None
        return self._start_flight(best)

    def _start_flight(self, entry: QueuedPod) -> QueuedPod:
        entry.info.attempts += 1
        entry.in_flight_seq = self._event_seq
        entry.state = PodLifecycle.IN_FLIGHT
        self.rejections.sync(entry)
        self._in_flight[entry.uid] = entry
        self._flight_order.append((entry.in_flight_seq, entry.uid))
        self.scheduling_cycle += 1
        return entry

    def pop_specific(self, uid: str) -> QueuedPod | None:
        """Upstream ``PopSpecificPod``: activate the pod (from backoffQ or the unschedulable pool,
        PreEnqueue permitting), then pop it from activeQ; None if it is not there (gated, in flight,
        assumed, unknown)."""
        entry = self._entry(uid)
        if entry is None:
            return None
        if entry.state in (PodLifecycle.UNSCHEDULABLE, PodLifecycle.GATED, PodLifecycle.BACKOFF):
            self.activate([uid])
        if entry.state != PodLifecycle.ACTIVE:
            return None
        self._active[entry.scheduler_name].delete(uid)
        return self._start_flight(entry)

    def _done(self, uid: str) -> QueuedPod | None:
        """Upstream ``Done``: the pod is no longer in flight; drop events nobody in flight needs."""
        entry = self._in_flight.pop(uid, None)
        if entry is None:
            return None
        entry.state = None
        self.rejections.sync(entry)
        if not self._in_flight:
            self._events.clear()
            self._flight_order.clear()
        else:
            oldest = self._oldest_in_flight_seq()
            while self._events and self._events[0].seq <= oldest:
                self._events.popleft()
        return entry

    def _oldest_in_flight_seq(self) -> int:
        order, flying = self._flight_order, self._in_flight
        while order:
            seq, uid = order[0]
            entry = flying.get(uid)
            if entry is not None and entry.in_flight_seq == seq:
                return seq
            order.popleft()
        raise AssertionError("pods in flight but none in the flight order")

    def _end_attempt(
        self, entry: QueuedPod, unschedulable_plugins: Iterable[str], pending_plugins: Iterable[str]
    ) -> None:
        """Upstream ``AddUnschedulableIfNotPresent`` bookkeeping (counters, timestamp, plugins)."""
        entry.clear_rejectors()
        entry.info.unschedulable_plugins = set(unschedulable_plugins)
        entry.info.pending_plugins = set(pending_plugins)
        if entry.rejector_plugins:
            entry.unschedulable_count += 1
            entry.info.consecutive_errors = 0
        else:
            entry.info.consecutive_errors += 1
        entry.info.timestamp = self.clock.now()
        entry.backoff_expiration = None
        entry.was_flushed = False

    def failed(
        self,
        uid: str,
        unschedulable_plugins: Iterable[str] = (),
        pending_plugins: Iterable[str] = (),
        nominated_node: str | None = None,
        preemption_last_victim: str = "",
    ) -> PodLifecycle | None:
        """An in-flight attempt ended unschedulable (rejecting plugins given) or with an error (none):
        back to backoffQ/activeQ if an event seen meanwhile may help (or no plugin rejected it), else
        unschedulable. ``nominated_node`` overrides the nomination (upstream AddNominatedPod).
        ``preemption_last_victim``: the attempt started a preemption that deletes that pod last; until
        the feed shows it being deleted, DefaultPreemption's PreEnqueue holds the pod back
        (:mod:`.preemptions`). A pod the cache has meanwhile assumed (its placement was accepted) is
        assumed, whatever the replica reports."""
        entry = self._in_flight.get(uid)
        if entry is None:
            return None
        if entry.cache_assumed:
            return self._settle_assumed(entry)
        entry.retried = False
        entry.requeue_after_done = None
        self._end_attempt(entry, unschedulable_plugins, pending_plugins)
        if preemption_last_victim:
            self._preemption_started(entry, preemption_last_victim)
        if self.group_scheduling and entry.pod.spec.scheduling_group is not None:
            strategy = Strategy.AFTER_BACKOFF
        else:
            strategy = hint_for_in_flight(self.profiles[entry.scheduler_name], entry, self._events)
        if strategy != Strategy.SKIP:  # an event the attempt did not see: the next one must
            entry.generation = max(entry.generation, newest_generation(entry, self._events))
        self._done(uid)
        where = self._requeue(entry, strategy, SCHEDULE_ATTEMPT_FAILURE)
        if nominated_node is not None:
            self._nominations.add(entry, nominated_node)
        return where

    # --- preemptions run by the replicas ---------------------------------------------------------------
    def _preemption_started(self, entry: QueuedPod, victim: str) -> None:
        plugin = self.profiles[entry.scheduler_name].pre_enqueue.get(DEFAULT_PREEMPTION)
        if isinstance(plugin, DefaultPreemption):
            self.preemptions.begin(entry.uid, victim, plugin.executor, self.clock.now())

    def victim_deleting(self, victim: str) -> None:
        """The feed shows ``victim`` (``namespace/name``) being deleted or gone: the preemptions it
        ends are over. Their pods stay where they are (gated): a Pod/Delete event moves them, as
        upstream (DefaultPreemption's gating events)."""
        self.preemptions.victim_deleting(victim)

    def expire_preemptions(self) -> int:
        """Preemptions the feed did not see end in time are taken for failed: their pods are
        activated, as upstream activates a preemptor whose preemption's API calls failed."""
        uids = self.preemptions.expired(self.clock.now())
        return self.activate(uids) if uids else 0

    def retry(self, uid: str) -> PodLifecycle | None:
        """The cache rejected the attempt's assume: straight back to activeQ, no backoff. A second
        rejection in a row counts as an error (backoff), so a pod the cache keeps refusing cannot
        spin through the replicas."""
        entry = self._in_flight.get(uid)
        if entry is None:
            return None
        if entry.retried or entry.cache_assumed:
            return self.failed(uid)
        entry.retried = True
        entry.requeue_after_done = None
        self._done(uid)
        return self._requeue(entry, Strategy.IMMEDIATELY, ASSUME_REJECTED)

    def lease_expired(self, uid: str) -> PodLifecycle | None:
        """The replica holding the pod went silent: back to activeQ as it was (or assumed, if the
        cache accepted its placement before the replica vanished)."""
        entry = self._in_flight.get(uid)
        if entry is None:
            return None
        if entry.cache_assumed:
            return self._settle_assumed(entry)
        self._done(uid)
        entry.requeue_after_done = None
        return self._requeue(entry, Strategy.IMMEDIATELY, LEASE_EXPIRED)

    def scheduled(self, uid: str) -> PodLifecycle | None:
        """The attempt ended with an accepted placement: the pod leaves the queue (kept as *assumed*
        until the informer reports it bound, so a failed bind can be requeued). A binder requeue or a
        forget that overtook this report is applied now."""
        entry = self._in_flight.get(uid)
        if entry is None:
            return None
        return self._settle_assumed(entry)

    def _settle_assumed(self, entry: QueuedPod) -> PodLifecycle | None:
        """End the in-flight attempt of a pod whose placement the cache accepted."""
        self._done(entry.uid)
        entry.retried = False
        entry.cache_assumed = False
        self._nominations.delete(entry.uid)
        entry.state = PodLifecycle.ASSUMED
        self._assumed[entry.uid] = entry
        early, entry.requeue_after_done = entry.requeue_after_done, None
        if early is not None:
            return self.requeue_assumed(entry.uid, backoff=early[0], unschedulable_plugins=early[1])
        return PodLifecycle.ASSUMED

    def assumed_by_cache(self, uid: str) -> PodLifecycle | None:
        """The informer's cache accepted a placement for the pod (its feed says delete, ``assumed``):
        the pod leaves the queue now, an in-flight one too (its attempt ends with the placement the
        cache accepted, whatever its replica reports later: the replica sends no end of its own for
        it)."""
        entry = self._entry(uid)
        if entry is None:
            return None
        if entry.state == PodLifecycle.IN_FLIGHT:
            entry.requeue_after_done = None  # the newest word of the cache: assumed (again)
            return self._settle_assumed(entry)
        if entry.state != PodLifecycle.ASSUMED:
            self._remove_from_queues(entry)
            self._nominations.delete(uid)
            entry.state = PodLifecycle.ASSUMED
            self._assumed[uid] = entry
        return PodLifecycle.ASSUMED

    def requeue_assumed(
        self, uid: str, *, backoff: bool = True, unschedulable_plugins: Iterable[str] = ()
    ) -> PodLifecycle | None:
        """The pod's placement failed after the cycle (the binder's requeue, or the cache forgot the
        assumption): back to backoffQ (activeQ without ``backoff``). For a pod still in flight the
        requeue waits for the end of its attempt. None when the pod is unknown or already queued."""
        entry = self._assumed.pop(uid, None)
        if entry is None:
            in_flight = self._in_flight.get(uid)
            if in_flight is not None:
                in_flight.requeue_after_done = (backoff, tuple(unschedulable_plugins))
                return PodLifecycle.IN_FLIGHT
            return None
        entry.state = None
        self._end_attempt(entry, unschedulable_plugins, ())
        strategy = Strategy.AFTER_BACKOFF if backoff else Strategy.IMMEDIATELY
        return self._requeue(entry, strategy, SCHEDULE_ATTEMPT_FAILURE)

    # --- periodic flushes ---------------------------------------------------------------------------------
    def flush_backoff_completed(self) -> int:
        """Move every pod whose backoff ended to activeQ (upstream ``flushBackoffQCompleted``, 1 s)."""
        done = self.backoff.pop_all_completed()
        for entry in done:
            entry.state = None
        return sum(1 for entry in done if self._move_to_active(entry, BACKOFF_COMPLETE, from_backoff=True))

    def flush_unschedulable_leftover(self) -> int:
        """Move pods unschedulable for longer than ``pod_max_in_unschedulable`` (upstream, every 30 s)."""
        now = self.clock.now()
        stale = [
            e for e in self._unschedulable.values() if now - e.info.timestamp > self.pod_max_in_unschedulable
        ]
        for entry in stale:
            entry.was_flushed = True
        if not stale:
            return 0
        return self._move_pods(stale, EVENT_UNSCHEDULABLE_TIMEOUT, None, None)

    # --- rebuilding ----------------------------------------------------------------------------------------


def _uid(entry: QueuedPod) -> str:
    return entry.uid
