"""A scheduler replica's bookkeeping and decisions at the message level, without NATS or clocks of
its own: how its assumes are numbered (what a decision counted), the placements it builds, the
leases it holds, the placements it keeps for the binder's Unreserve, and what it does with a pop
reply, a replica behind a pod, an assume refused, a pod group's result.

:class:`SchedulerCore` holds the state; ``service.py`` runs the loops and moves the messages
between NATS and it, ``server.py`` is the process around them (as the queue's ``core``,
``service`` and ``server``).
"""

from __future__ import annotations

import uuid
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import msgspec

from ksched.api.core import Pod
from ksched.api.scheduling import PodGroup
from ksched.bus.messages import AssumeRejectCode, AssumeReply, LeasedPod, Placement
from ksched.framework.podgroup_cycle import GroupResult, MemberAttempt
from ksched.framework.results import PostFilterResult
from ksched.framework.status import Code, Status
from ksched.reporting.simulator_results import result_annotations
from ksched_scheduler.cycle import ERROR, UNSCHEDULABLE, CycleOutcome

MAX_REMEMBERED = 10_000
"""Placements kept for Unreserve at most (the oldest are forgotten first)."""

GroupPlaced = Literal["rejected", "committed", "assumed"]
"""How a pod group cycle's members went to binding: a gang's commit rejected or accepted (its outcome
is then the informer's to write), or a basic group's members assumed one by one."""
REJECTED: GroupPlaced = "rejected"
COMMITTED: GroupPlaced = "committed"
ASSUMED: GroupPlaced = "assumed"

Behind = Literal["stalled", "catching-up"]
"""Why a replica still behind a leased pod's newest event gives it back: no delta moved it while it
waited (its stream is lost: it bootstraps again), or it moved but not far enough."""
STALLED: Behind = "stalled"
CATCHING_UP: Behind = "catching-up"


@dataclass(frozen=True)
class Basis:
    """What a decision was made on: the replica's snapshot (epoch, generation) and its own
    placements it counted but had no answer for: its assumes ``first_unanswered`` .. ``seq - 1``."""

    epoch: str
    generation: int
    first_unanswered: int
    seq: int = 0


@dataclass(frozen=True)
class Prepared:
    """A leased pod ready for its cycle: decoded, the replica caught up, timings for the trace."""

    leased: LeasedPod
    pod: Pod
    arrived: float
    waited: float


@dataclass
class InFlight:
    """A placement sent to the informer, kept until the binder is done with it (for Unreserve): until
    the replica sees the pod bound, or the binder asks to unreserve it."""

    leased: LeasedPod
    outcome: CycleOutcome
    sent_at: float


@dataclass(frozen=True)
class Refusal:
    """What a replica does with an assume the informer refused, besides undoing it locally and giving
    the pod back (RETRY): bootstrap its replica again (``resync``: a stale epoch), or first wait until
    its replica has what made the placement fail (``catch_up``: so the next cycle sees it)."""

    resync: bool
    catch_up: bool
    message: str


def new_session() -> str:
    return uuid.uuid4().hex[:16]


class SchedulerCore:
    """One replica's assumes, placements and leases.

    Its assumes are numbered in decision order within a random session (the informer tells from
    them which placements a decision counted); ``unanswered`` holds those without a reply yet."""

    def __init__(self, identity: str, *, session: Callable[[], str] = new_session) -> None:
        self.identity = identity
        self._new_session = session
        self.session = session()
        self.seq = 0
        self.unanswered: set[int] = set()
        self._attempt = 0
        self._loads = 0
        self.held: dict[str, LeasedPod] = {}
        """The leases this replica holds (renewed until their attempt ends), by lease id."""
        self.inflight: OrderedDict[str, InFlight] = OrderedDict()
        """Accepted placements the binder may still unreserve, by placement id, oldest first."""
        self._inflight_of: dict[str, str] = {}  # pod uid -> its placement id in inflight

    # --- assumes ----------------------------------------------------------------------------------
    def basis(self, epoch: str, generation: int, loads: int = 0) -> Basis:
        """What a decision about to be made on the replica at (``epoch``, ``generation``) is based on:
        that and this session's unanswered placements (read before the cycle: with extenders, deltas
        and answers may arrive during it). A replica that loaded an image since the last decision
        (``loads`` changed) starts a new session: the image dropped the session's local assumptions,
        and the informer counts those it accepts after the image's generation as decided on."""
        if loads != self._loads:
            self._loads = loads
            self.session = self._new_session()
        first = min(self.unanswered) if self.unanswered else self.seq + 1
        return Basis(epoch, generation, first)

    def next_seq(self, basis: Basis) -> Basis:
        """Number the next assume of this session; it stays unanswered until its reply."""
        self.seq += 1
        self.unanswered.add(self.seq)
        return Basis(basis.epoch, basis.generation, basis.first_unanswered, self.seq)

    def answered(self, seqs: Iterable[int]) -> None:
        """The assumes ``seqs`` have their reply (or never will)."""
        self.unanswered.difference_update(seqs)

    def unreachable(self) -> None:
        """An assume got no answer. The informer may still accept it, after our next decisions
        stopped counting it: they start a new session, whose accepted placements alone count as theirs."""
        self.session = self._new_session()

    def placement(self, leased: LeasedPod, outcome: CycleOutcome, basis: Basis) -> Placement:
        """The decision of ``outcome`` as the informer assumes it and the binder binds it."""
        self._attempt += 1
        pod = outcome.pod.pod
        return Placement(
            placement_id=f"{pod.metadata.uid}:{leased.attempts}:{self._attempt}",
            pod_uid=pod.metadata.uid,
            namespace=pod.metadata.namespace,
            name=pod.metadata.name,
            node_name=outcome.node,
            scheduler_id=self.identity,
            profile=pod.spec.scheduler_name,
            epoch=basis.epoch,
            snapshot_generation=basis.generation,
            resource_version=pod.metadata.resource_version,
            attempt=leased.attempts,
            trace_id=leased.trace_id,
            initial_attempt_at=leased.initial_attempt_at,
            flushed_from_unschedulable=leased.flushed_from_unschedulable,
            pod=leased.pod.pod,
            plugin_state=export_plugin_state(outcome),
            permit_waits=dict(outcome.permit_waits),
            results=result_annotations(outcome.state.record) if outcome.state.record is not None else {},
        )

    # --- leases -----------------------------------------------------------------------------------
    def hold(self, leased: LeasedPod) -> None:
        self.held[leased.lease_id] = leased

    def release(self, lease_id: str) -> None:
        """The attempt of ``lease_id`` ended (or its lease expired): no longer renewed."""
        self.held.pop(lease_id, None)

    # --- placements kept for Unreserve ------------------------------------------------------------
    def remember(self, placement_id: str, leased: LeasedPod, outcome: CycleOutcome, now: float) -> None:
        """An accepted placement, kept until the pod is seen bound or the binder unreserves it."""
        self.inflight[placement_id] = InFlight(leased, outcome, now)
        self._inflight_of[leased.pod.uid] = placement_id
        while len(self.inflight) > MAX_REMEMBERED:
            _, oldest = self.inflight.popitem(last=False)
            self._inflight_of.pop(oldest.leased.pod.uid, None)

    def bound(self, uid: str) -> CycleOutcome | None:
        """The snapshot shows pod ``uid`` bound: its placement is no longer kept; its outcome (what
        its Reserve put in flight ends) or None when none was kept."""
        placement_id = self._inflight_of.pop(uid, None)
        if placement_id is None:
            return None
        entry = self.inflight.pop(placement_id, None)
        return entry.outcome if entry is not None else None

    def unreserve(self, placement_id: str) -> InFlight | None:
        """The binder failed ``placement_id``: what was kept of it (to undo), None if not kept here."""
        entry = self.inflight.pop(placement_id, None)
        if entry is None:
            return None
        uid = entry.leased.pod.uid
        if self._inflight_of.get(uid) == placement_id:
            del self._inflight_of[uid]
        return entry


# --- decisions ------------------------------------------------------------------------------------
def leased_batches(pods: list[LeasedPod], group_cycles: bool) -> list[list[LeasedPod]]:
    """The pods of a pop reply in order, one per batch, except that the members of a pod group (the
    queue leases them together, one after the other) make one batch when group cycles run."""
    batches: list[list[LeasedPod]] = []
    for leased in pods:
        if group_cycles and leased.group and batches and batches[-1][0].group == leased.group:
            batches[-1].append(leased)
        else:
            batches.append([leased])
    if not group_cycles:
        for batch in batches:
            batch[0] = msgspec.structs.replace(batch[0], group="")
    return batches


def needed_generation(batch: Sequence[LeasedPod], epoch: str) -> int:
    """The generation a replica at ``epoch`` must reach before deciding on the pods leased together
    in ``batch``: the newest event of them all (pods leased in another epoch do not wait: their
    generations are not comparable), 0 for none."""
    return max((leased.min_generation for leased in batch if leased.epoch == epoch), default=0)


def needed_nominations(batch: Sequence[LeasedPod], epoch: str) -> int:
    """The feed stream seq through which a replica at ``epoch`` applies the API's nominations before
    deciding on the pods leased together in ``batch`` (:attr:`LeasedPod.nominated_seq`; 0: none)."""
    return max((leased.nominated_seq for leased in batch if leased.epoch == epoch), default=0)


def behind(epoch: str, seen: int, needed: int, now_epoch: str, now_generation: int) -> Behind | None:
    """After waiting for ``needed`` from generation ``seen`` of ``epoch``: why the replica (now at
    ``now_epoch``, ``now_generation``) is still behind, or None when it caught up (or moved to
    another epoch, where the queue's generation means nothing)."""
    if now_epoch != epoch or now_generation >= needed:
        return None
    return STALLED if now_generation == seen else CATCHING_UP


def refusal(reply: AssumeReply) -> Refusal:
    """What a replica does with the refused assume ``reply``, besides giving the pod back."""
    return Refusal(
        resync=reply.code == AssumeRejectCode.STALE_EPOCH,
        catch_up=reply.code == AssumeRejectCode.DOES_NOT_FIT,
        message=f"{reply.code}: {reply.reason}",
    )


def is_gang(gang_scheduling: bool, pod_group: PodGroup | None) -> bool:
    """Whether a pod group's members are committed together: a gang (``minCount``) with the
    GangScheduling gate on; else a basic group, whose members are assumed one by one."""
    return gang_scheduling and pod_group is not None and pod_group.min_count is not None


def ended(
    outcome: CycleOutcome,
    member: MemberAttempt[CycleOutcome] | None,
    status: Status,
    result: GroupResult[CycleOutcome],
) -> CycleOutcome:
    """A member's outcome as its pod group's result ends it (upstream ``submitPodGroupAlgorithmResult``):
    its own when that is why it failed; else the group's status, without rejecting plugins and, unless
    the group waits for a preemption, without a nomination; a member whose preemption ran then still
    has its victims deleted (:attr:`CycleOutcome.evict_only`: upstream's PostFilter started their
    eviction during the cycle, seed 4101, case 17 of ``ksched differential``'s ``gangs``), and a
    member that fit has the nomination an earlier cycle gave it cleared (``clearNominatedNode``: seed
    9305, case 55, the retry after a cycle that waited for a preemption)."""
    if member is not None and status is member.status and not member.assumed:
        return outcome
    outcome.kind = ERROR if status.code == Code.ERROR else UNSCHEDULABLE
    outcome.message = status.message
    outcome.plugins, outcome.pending_plugins = set(), set()
    if member is not None and result.nominated_where_assumed(member) and outcome.node:
        outcome.nominated_node, outcome.post_filter = outcome.node, PostFilterResult(outcome.node)
    if not result.waiting_on_preemption:
        preempted = member is not None and result.evicts_unnominated(member) and bool(outcome.victims)
        fit = member is not None and member.status is None
        if preempted and status.code != Code.ERROR:
            outcome.nominated_node, outcome.evict_only = "", True
        else:
            cleared = PostFilterResult("") if fit else None
            outcome.nominated_node, outcome.victims, outcome.post_filter = "", [], cleared
    return outcome


def pod_group_result(result: GroupResult[CycleOutcome]) -> str:
    """The ``result`` label of a pod group cycle (upstream's scheduled / unschedulable /
    waiting_on_preemption / error)."""
    if result.status is None:
        return "scheduled"
    if result.status.code == Code.ERROR:
        return "error"
    return "waiting_on_preemption" if result.waiting_on_preemption else "unschedulable"


def export_plugin_state(outcome: CycleOutcome) -> dict[str, bytes]:
    """State plugins need after the cycle (e.g. VolumeBinding's decisions) for the binder."""
    out: dict[str, bytes] = {}
    fw = outcome.fw
    seen: set[str] = set()
    for group in (
        fw.plugins.reserve,
        fw.plugins.permit,
        fw.plugins.pre_bind,
        fw.plugins.bind,
        fw.plugins.post_bind,
    ):
        for pl in group:
            export = getattr(pl, "export_state", None)
            if export is None or pl.name in seen:
                continue
            seen.add(pl.name)
            data = export(outcome.state)
            if data:
                out[pl.name] = data
    return out


def percentiles(samples: Any) -> dict[str, float]:
    """p50 and p99 of ``samples`` (seconds) in milliseconds, and their number; {} for none."""
    values = sorted(samples)
    if not values:
        return {}
    return {
        "p50": round(values[len(values) // 2] * 1000, 2),
        "p99": round(values[min(len(values) - 1, int(len(values) * 0.99))] * 1000, 2),
        "samples": len(values),
    }
