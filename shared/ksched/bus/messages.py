"""Every message the ksched services exchange (see docs/bus.md for who sends what where).

Kubernetes objects in feeds and placements travel as JSON bytes (``pod``, ``old``/``new``, ``raw``);
a service decodes them with ``ksched.api`` only when it needs them. Compact copies of the fields a
receiver acts on (uid, namespace, name, node, priority ...) sit beside them so routing and
bookkeeping never parse JSON. Snapshot ops are the exception: every replica decodes every op, so
they carry the object model's ``Node`` / ``Pod`` structs (already trimmed to what plugins read).
Times are Unix seconds (``time.time()``), durations seconds.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

import msgspec

from ksched.api.core import Node, Pod
from ksched.api.lifecycle import PodLifecycle
from ksched.bus.codec import BadMessage, Message, current_version, decode, encode

__all__ = [
    "ALL_MESSAGE_TYPES",
    "Ack",
    "AssumeBatchReply",
    "AssumeBatchRequest",
    "AssumeGroupRequest",
    "AssumeRejectCode",
    "AssumeReply",
    "AssumeRequest",
    "BadMessage",
    "BootstrapChunk",
    "BootstrapReply",
    "ClusterEventMsg",
    "DoneBatchRequest",
    "DoneOutcome",
    "DoneRequest",
    "EndedPlacement",
    "FeedBatch",
    "ForgetRequest",
    "GangCommit",
    "GangRef",
    "Heartbeat",
    "LeaseRenewReply",
    "LeaseRenewRequest",
    "LeasedPod",
    "Message",
    "NodeRemove",
    "NodeUpsert",
    "ObjectRemove",
    "ObjectUpsert",
    "PendingPod",
    "PendingPodAction",
    "PendingPodEvent",
    "PendingPodGroup",
    "PendingPodsRequest",
    "PermitDecision",
    "Placement",
    "PlacementBatch",
    "PodPlace",
    "PodRemove",
    "PopReply",
    "PopRequest",
    "QueueListEntry",
    "QueueListReply",
    "QueueListRequest",
    "RequeueRequest",
    "SnapshotBootstrapRequest",
    "SnapshotDelta",
    "SnapshotOp",
    "TraceBatch",
    "TraceEvent",
    "TracePhase",
    "UnreserveRequest",
    "current_version",
    "decode",
    "encode",
]


# --- building blocks (nested in messages, versioned by their enclosing message) -------------------


class PendingPodGroup(msgspec.Struct, kw_only=True):
    """What the queue's GangScheduling PreEnqueue reads of a pending pod's group (docs/gang.md)."""

    name: str = ""
    """The group's name (the pod's ``spec.schedulingGroup.podGroupName``; same namespace)."""
    pod_group: bytes = b""
    """The group's PodGroup as API JSON (a Coscheduling one as the v1alpha2 PodGroup it stands for);
    empty when it does not exist."""
    all_pods: int = 0
    """Pods of the group the cache knows: pending, assumed and bound (upstream ``AllPodsCount``)."""


class PendingPod(msgspec.Struct, kw_only=True):
    """A pod waiting to be scheduled, as the queue tracks it."""

    uid: str
    namespace: str
    name: str
    scheduler_name: str
    priority: int = 0
    creation_timestamp: str = ""
    """RFC 3339, as in the pod's metadata."""
    scheduling_gates: list[str] = msgspec.field(default_factory=list)
    resource_version: str = ""
    nominated_node_name: str = ""
    pod: bytes = b""
    """The full pod as API JSON (the queue's PreEnqueue and hints, the scheduler's cycle)."""
    group: PendingPodGroup | None = None
    """Its pod group as the cache sees it now, for a pod in one (GenericWorkload on)."""


class NodeUpsert(msgspec.Struct, tag="node+", array_like=True):
    """A node added or changed (the object model's Node: only what plugins read)."""

    node: Node


class NodeRemove(msgspec.Struct, tag="node-", array_like=True):
    name: str


class PodPlace(msgspec.Struct, tag="pod+", array_like=True):
    """A pod placed on ``node``: bound (seen by the watch) or assumed (accepted, not yet bound)."""

    pod: Pod
    node: str
    assumed: bool = False


class PodRemove(msgspec.Struct, tag="pod-", array_like=True):
    uid: str


class ObjectUpsert(msgspec.Struct, tag="obj+", array_like=True):
    """Another kind plugins read (Namespace, Service, PV, PVC, StorageClass, CSINode ...)."""

    kind: str
    key: str
    """``name`` for cluster-scoped objects, ``namespace/name`` otherwise."""
    raw: bytes
    """The object as JSON (plain bytes: a ``msgspec.Raw`` would be spliced into msgpack unencoded)."""


class ObjectRemove(msgspec.Struct, tag="obj-", array_like=True):
    kind: str
    key: str


SnapshotOp = NodeUpsert | NodeRemove | PodPlace | PodRemove | ObjectUpsert | ObjectRemove
"""One change to the snapshot. Compact positional arrays tagged ``node+``, ``pod-`` ...; versioned by
the message that carries them (SnapshotDelta, or the items of a snapshot bootstrap)."""


class LeasedPod(msgspec.Struct, kw_only=True):
    """A pod handed to one scheduler replica until ``deadline`` (queue clock) unless renewed."""

    lease_id: str
    deadline: float
    lease_seconds: float
    pod: PendingPod
    attempts: int = 0
    """Scheduling attempts so far, this one included."""
    queued_at: float = 0.0
    """When the pod last entered the active queue (upstream QueuedPodInfo.Timestamp)."""
    initial_attempt_at: float = 0.0
    trace_id: str = ""
    min_generation: int = 0
    """Snapshot generation that includes the pod's newest event: schedule on nothing older."""
    nominated_seq: int = 0
    """Feed stream seq of the newest batch on ``P.feed.nominated`` the queue had applied when it leased
    the pod: decide with the nominations of that batch and every one before (0: no wait)."""
    epoch: str = ""
    flushed_from_unschedulable: bool = False
    """The pod last left the unschedulable pool by the flush timeout, not by an event (upstream
    ``WasFlushedFromUnschedulable``); a successful binding then counts in
    scheduler_pod_scheduled_after_flush_total."""
    group: str = ""
    """``namespace/name`` of the pod group popped with it: every queued member of a group is leased
    together, one after the other in the same reply (docs/gang.md); empty for a pod popped alone."""
    traceparent: str = ""
    """W3C trace context of the queue's ``popped`` span, with the OpenTelemetry export only (a pop
    reply carries several pods: each carries its own context, as a NATS header cannot; optional)."""


# --- informer/cache feeds ----------------------------------------------------------------------------


class PendingPodAction(StrEnum):
    ADD = "add"
    UPDATE = "update"
    DELETE = "delete"


class PendingPodEvent(Message, kw_only=True):
    """A pending pod appeared, changed, or stopped being pending (deleted, bound, other scheduler)."""

    action: PendingPodAction
    pod: PendingPod
    reason: str = ""
    """For DELETE: ``deleted``, ``scheduler-changed``, or the state the pod left pending for
    (``PodLifecycle.ASSUMED`` / ``BOUND``)."""
    epoch: str
    generation: int
    ts: float = 0.0


class ClusterEventMsg(Message, kw_only=True):
    """A cluster change for the queue's requeueing (ksched.framework.events.ClusterEvent on the wire)."""

    resource: str
    action: int
    """ksched.framework.events.ActionType bits."""
    key: str
    old: bytes | None = None
    """The object before the change, API JSON (None for an add)."""
    new: bytes | None = None
    """The object after the change, API JSON (None for a delete)."""
    epoch: str
    generation: int
    ts: float = 0.0


class FeedBatch(Message, kw_only=True):
    """One flush of the informer's feed: its pending-pod and cluster events in the cache's order, one
    stream message (one stored write, one delivery to each reader) for all of them."""

    epoch: str
    events: list[PendingPodEvent | ClusterEventMsg]


class SnapshotDelta(Message, kw_only=True):
    """The changes that took the cache from generation ``base`` to ``generation`` within ``epoch``.

    A replica at a generation other than ``base`` (a gap) or in another epoch re-bootstraps.
    """

    epoch: str
    base: int
    generation: int
    ops: list[SnapshotOp]
    ts: float = 0.0


class SnapshotBootstrapRequest(Message, kw_only=True):
    """Ask the cache for a full snapshot; chunks are published to ``deliver`` before the reply."""

    replica_id: str
    deliver: str
    max_chunk_bytes: int = 512 * 1024


class PendingPodsRequest(Message, kw_only=True):
    """Ask the cache for every pending pod of these schedulerNames (all if empty)."""

    requester: str
    deliver: str
    scheduler_names: list[str] = msgspec.field(default_factory=list)
    max_chunk_bytes: int = 512 * 1024
    device_classes: bool = False
    """Also send every DeviceClass in the reply (the queue's NodeResourcesFit hints, DRAExtendedResource)."""


class BootstrapChunk(Message, kw_only=True):
    """One part of a bootstrap: ``data`` holds compressed items (see ksched.bus.bootstrap)."""

    epoch: str
    generation: int
    index: int
    total: int
    codec: str = "zlib"
    data: bytes


class BootstrapReply(Message, kw_only=True):
    """Sent after the last chunk: the state is that of ``generation``; deltas/feed continue after
    stream sequence ``stream_seq``. ``error`` is set (and no chunks sent) when the cache is not ready."""

    epoch: str = ""
    generation: int = 0
    chunks: int = 0
    items: int = 0
    stream_seq: int = 0
    error: str = ""
    device_classes: list[bytes] = msgspec.field(default_factory=list)
    """Every DeviceClass (API JSON) at ``stream_seq``, when the pending-pods request asked for them."""


# --- queue -------------------------------------------------------------------------------------------


class PopRequest(Message, kw_only=True):
    scheduler_id: str
    scheduler_names: list[str]
    """Profiles this replica serves."""
    max_pods: int = 1
    wait_seconds: float = 0.5
    """Long poll: the queue answers at once if a pod is ready, else within this time (maybe empty)."""


class PopReply(Message, kw_only=True):
    pods: list[LeasedPod] = msgspec.field(default_factory=list)


class QueueListRequest(Message, kw_only=True):
    """What the queue holds now (``ksched ui``): pods whose name contains ``name_contains``, at most
    ``limit`` of them (the queue caps it at :data:`QUEUE_LIST_MAX`), active first."""

    requester: str = ""
    name_contains: str = ""
    limit: int = 500


QUEUE_LIST_MAX = 2000
"""The most entries one :class:`QueueListReply` carries (its size stays far below 1 MiB)."""


class QueueListEntry(msgspec.Struct, kw_only=True):
    """One pod the queue holds, and why it waits."""

    uid: str
    namespace: str
    name: str
    scheduler_name: str
    queue: str
    """active, backoff, unschedulable, gated, in-flight or assumed."""
    priority: int = 0
    attempts: int = 0
    queued_at: float = 0.0
    initial_attempt_at: float = 0.0
    backoff_until: float | None = None
    plugins: list[str] = msgspec.field(default_factory=list)
    """The plugins that rejected its last attempt (unschedulable and pending plugins)."""
    gating_plugin: str = ""
    message: str = ""
    """The last attempt's message (the FailedScheduling message of an unschedulable pod)."""
    nominated_node: str = ""
    trace_id: str = ""


class QueueListReply(Message, kw_only=True):
    pods: list[QueueListEntry] = msgspec.field(default_factory=list)
    counts: dict[str, int] = msgspec.field(default_factory=dict)
    """Pods per queue (all of them, not only those listed)."""
    matched: int = 0
    """Pods that matched ``name_contains`` (more than listed when the limit cut the list)."""


class DoneOutcome(StrEnum):
    SCHEDULED = "scheduled"
    """The cache accepted the placement; the pod is now the binder's."""
    UNSCHEDULABLE = "unschedulable"
    ERROR = "error"
    RETRY = "retry"
    """The cache rejected the assume: back to the active queue without a backoff penalty."""


class DoneRequest(Message, kw_only=True):
    """Ends a lease (request/reply, answered by :class:`Ack`)."""

    lease_id: str
    scheduler_id: str
    pod_uid: str
    namespace: str
    name: str
    outcome: DoneOutcome
    node_name: str = ""
    unschedulable_plugins: list[str] = msgspec.field(default_factory=list)
    pending_plugins: list[str] = msgspec.field(default_factory=list)
    message: str = ""
    nominated_node_name: str = ""
    trace_id: str = ""
    traceparent: str = ""
    """The W3C ``traceparent`` of the span that ended the attempt when sent in a batch (a lone request
    carries it as a header; optional, added without a version bump)."""
    preemption_last_victim: str = ""
    """``namespace/name`` of the last victim the preemption this attempt started deletes (the replica
    runs it in the background): until the queue's feed shows that pod being deleted or gone, the pod
    waits in the unschedulable pool, DefaultPreemption's PreEnqueue holding it back (upstream's
    ``IsPodRunningPreemption``). Optional, added without a version bump."""


class DoneBatchRequest(Message, kw_only=True):
    """Several :class:`DoneRequest` of one replica in one request (``P.queue.dones``), applied in
    order; answered by one :class:`Ack` (``ok`` false only if the queue could not apply them)."""

    items: list[DoneRequest]


class LeaseRenewRequest(Message, kw_only=True):
    scheduler_id: str
    lease_ids: list[str]


class LeaseRenewReply(Message, kw_only=True):
    renewed: list[str] = msgspec.field(default_factory=list)
    expired: list[str] = msgspec.field(default_factory=list)
    """Leases the queue no longer holds: the replica must drop those pods."""
    deadline: float = 0.0


class RequeueRequest(Message, kw_only=True):
    """Put a pod whose placement failed after the scheduling cycle (e.g. Bind) back in the queue."""

    pod_uid: str
    namespace: str
    name: str
    reason: str
    backoff: bool = True
    unschedulable_plugins: list[str] = msgspec.field(default_factory=list)
    sender: str = ""
    trace_id: str = ""


# --- cache: assume / forget --------------------------------------------------------------------------


class Placement(Message, kw_only=True):
    """A scheduling decision: sent inside an AssumeRequest, then (accepted) on the binder work queue
    by the informer, in a :class:`PlacementBatch` or, a group commit's member, alone.

    ``placement_id`` (``<pod uid>:<attempt>``) is the JetStream msg id of a placement published alone,
    so a repeat is dropped.
    """

    placement_id: str
    pod_uid: str
    namespace: str
    name: str
    node_name: str
    scheduler_id: str
    profile: str
    """The pod's schedulerName (whose Filter plugins the cache re-runs if the node changed)."""
    epoch: str
    snapshot_generation: int
    """Generation of the replica's snapshot the decision was based on."""
    resource_version: str = ""
    """The pod's resourceVersion the decision was made on."""
    attempt: int = 0
    trace_id: str = ""
    assumed_at: float = 0.0
    initial_attempt_at: float = 0.0
    """When the pod first entered the active queue (the start of scheduler_pod_scheduling_sli_duration)."""
    flushed_from_unschedulable: bool = False
    """Copied from the lease: the binder counts scheduler_pod_scheduled_after_flush_total when bound."""
    pod: bytes = b""
    """The pod as the scheduler saw it, API JSON (for PreBind / Bind / PostBind plugins)."""
    plugin_state: dict[str, bytes] = msgspec.field(default_factory=dict)
    """Per plugin, the opaque state it saved during the cycle and needs after it."""
    permit_waits: dict[str, float] = msgspec.field(default_factory=dict)
    """Plugins whose Permit returned Wait, with their timeout in seconds."""
    gang: GangRef | None = None
    """Set for a member of a gang placed by a group commit (``AssumeGroupRequest``)."""
    results: dict[str, str] = msgspec.field(default_factory=dict)
    """The scheduling cycle's kube-scheduler-simulator result annotations (the scheduler's
    ``--record-results`` only; added without a version bump): the binder completes them with
    PreBind's and Bind's results and writes them on the pod."""


class GangRef(msgspec.Struct, kw_only=True):
    """The group commit a gang member's placement belongs to (docs/gang.md)."""

    group: str
    """``namespace/name`` of the PodGroup."""
    commit_id: str
    members: list[str] = msgspec.field(default_factory=list)
    """Pod uids placed by this commit."""


class AssumeRequest(Message, kw_only=True):
    """Ask the cache to accept ``placement``; on acceptance the cache records the assumption and
    publishes ``placement`` to the binder work queue itself, before replying (nothing is lost if the
    deciding replica dies right after)."""

    placement: Placement
    """Version-checked like a top-level message; the cache publishes ``encode(placement)``."""
    session: str = ""
    """The deciding replica process (random per process); with ``seq`` and ``basis_from`` the
    cache knows which of its placements the decision counted (optional, added without a version
    bump, as the next two and ``spread_slack``)."""
    seq: int = 0
    """This assume's number in the session, in the order the replica decided."""
    basis_from: int = 0
    """The first of the session's assumes without an answer when this decision's cycle began
    (``seq`` when none): those placements were in the state the replica decided on."""
    spread_slack: int | None = None
    """For a pod with hard topology spread: how far its skew at the node stayed below maxSkew when
    decided (the least over its constraints; optional, added without a version bump)."""
    traceparent: str = ""
    """The W3C ``traceparent`` of the attempt's assumed span when sent in a batch (a lone request
    carries it as a header; optional, added without a version bump)."""


class AssumeGroupRequest(Message, kw_only=True):
    """Ask the cache to accept every placement of a gang at once or none (docs/gang.md): each is checked
    as an :class:`AssumeRequest` would be, then the group's quorum is re-counted; on acceptance the
    cache records them with a commit record and publishes them, before replying."""

    group: str
    """``namespace/name`` of the PodGroup."""
    commit_id: str
    placements: list[Placement]
    session: str = ""
    """As :attr:`AssumeRequest.session`; member ``i`` is assume ``seq + i`` of the session (the group
    cycle decided them in this order, each counting the members before it)."""
    seq: int = 0
    basis_from: int = 0
    """As :attr:`AssumeRequest.basis_from`, for every member."""
    spread_slacks: list[int | None] = msgspec.field(default_factory=list)
    """Per member, as :attr:`AssumeRequest.spread_slack` (missing entries: not known)."""
    traceparents: list[str] = msgspec.field(default_factory=list)
    """Per member, as :attr:`AssumeRequest.traceparent` in a batch: the W3C trace context of the
    member's ``assumed`` span, with the OpenTelemetry export only (each member is its own attempt's
    trace, which one NATS header cannot carry; missing entries: none)."""

    def member(self, i: int) -> AssumeRequest:
        """Member ``i`` as the single :class:`AssumeRequest` it is checked as."""
        slacks, parents = self.spread_slacks, self.traceparents
        return AssumeRequest(
            placement=self.placements[i],
            session=self.session,
            seq=self.seq + i if self.session else 0,
            basis_from=self.basis_from,
            spread_slack=slacks[i] if i < len(slacks) else None,
            traceparent=parents[i] if i < len(parents) else "",
        )


class GangCommit(Message, kw_only=True):
    """The commit record of a group commit (KV bucket ``P_gangs``): its members' ledger entries count
    only while it exists."""

    commit_id: str
    group: str
    members: list[str] = msgspec.field(default_factory=list)
    ts: float = 0.0


class EndedPlacement(Message, kw_only=True):
    """A binder's record of a placement whose binding failed (KV bucket ``P_ended``, key: the
    placement id), written before its assumption is forgotten: a redelivery of its message, to any
    binder, does not bind it."""

    placement_id: str
    pod_uid: str
    node_name: str
    reason: str = ""
    binder: str = ""


class AssumeRejectCode(StrEnum):
    POD_NOT_PENDING = "PodNotPending"
    ALREADY_ASSUMED = "AlreadyAssumed"
    NODE_NOT_FOUND = "NodeNotFound"
    DOES_NOT_FIT = "DoesNotFit"
    STALE_EPOCH = "StaleEpoch"
    STALE_POD = "StalePod"
    NOT_READY = "NotReady"
    QUORUM_NOT_MET = "QuorumNotMet"
    """A group commit whose members, with the group's assumed and bound pods, miss ``minCount``."""
    POD_GROUP_NOT_FOUND = "PodGroupNotFound"


class AssumeReply(Message, kw_only=True):
    accepted: bool
    code: str = ""
    """An :class:`AssumeRejectCode` value when rejected (a plain string, so new codes stay readable)."""
    reason: str = ""
    epoch: str = ""
    generation: int = 0
    """The cache generation that includes this decision; when rejected, the cache's generation then
    (a replica retries once its snapshot has it)."""


class AssumeBatchRequest(Message, kw_only=True):
    """Several assumes of one replica in one request, in decision order (``P.cache.assumes``).
    The cache checks them one after the other exactly as single ones, so a later placement sees
    the earlier accepted ones assumed; it records the accepted ones together (one ledger entry, one
    :class:`PlacementBatch` to the binders) and answers :class:`AssumeBatchReply`."""

    items: list[AssumeRequest]


class AssumeBatchReply(Message, kw_only=True):
    """One :class:`AssumeReply` per item of the :class:`AssumeBatchRequest`, in its order."""

    replies: list[AssumeReply]


class PlacementBatch(Message, kw_only=True):
    """Placements the cache accepted together: one ledger entry (key ``batch_id``) and one message
    on the binder work queue (msg id ``batch_id``), acknowledged once all are bound or failed."""

    batch_id: str
    placements: list[Placement]


class ForgetRequest(Message, kw_only=True):
    """Drop an assumption whose binding failed (request/reply, answered by :class:`Ack`)."""

    placement_id: str
    pod_uid: str
    namespace: str
    name: str
    node_name: str
    scheduler_id: str
    reason: str = ""

    @classmethod
    def of(cls, placement: Placement, reason: str) -> ForgetRequest:
        """Forget ``placement``'s assumption."""
        p = placement
        return cls(
            placement_id=p.placement_id,
            pod_uid=p.pod_uid,
            namespace=p.namespace,
            name=p.name,
            node_name=p.node_name,
            scheduler_id=p.scheduler_id,
            reason=reason,
        )


# --- binder ------------------------------------------------------------------------------------------


class PermitDecision(Message, kw_only=True):
    """Allow or reject one plugin's wait on a pod held in WaitOnPermit."""

    pod_uid: str
    namespace: str
    name: str
    plugin: str
    allow: bool
    message: str = ""
    sender: str = ""


class UnreserveRequest(Message, kw_only=True):
    """Ask the deciding replica to run Unreserve for a failed placement (answered by :class:`Ack`)."""

    placement_id: str
    pod_uid: str
    namespace: str
    name: str
    node_name: str
    scheduler_id: str
    reason: str = ""
    plugin_state: dict[str, bytes] = msgspec.field(default_factory=dict)


# --- observability and generic replies ---------------------------------------------------------------


class TracePhase(StrEnum):
    """The steps of a pod attempt that services trace (docs/tracing.md). A phase that reports the
    pod reaching a state of :class:`~ksched.api.lifecycle.PodLifecycle` has that state's name; the
    ``queued`` and ``requeued`` events name the queue state in their ``queue`` detail."""

    QUEUED = "queued"
    """Into one of the queue's states (``details.queue``: a ``QUEUED`` PodLifecycle value)."""
    POPPED = "popped"
    """Leased to a replica: ``PodLifecycle.IN_FLIGHT``."""
    SNAPSHOT = "snapshot"
    FILTER = "filter"
    SCORE = "score"
    ASSUMED = PodLifecycle.ASSUMED.value
    ASSUME_CONFLICT = "assume_conflict"
    ASSUME_CHECK = "assume_check"
    """The informer checked a placement (accepted, or refused with a code)."""
    UNSCHEDULABLE = PodLifecycle.UNSCHEDULABLE.value
    """No node fits: the attempt ends, the pod goes back to the queue as unschedulable."""
    ERROR = "error"
    """A plugin failed with an error during the scheduling cycle (not a rejection)."""
    PERMIT_WAIT = "permit_wait"
    PREBIND = "prebind"
    BOUND = PodLifecycle.BOUND.value
    """The Bind call succeeded (the informer's watch then confirms it)."""
    BIND_FAILED = "bind_failed"
    REQUEUED = "requeued"
    """The attempt ended and the pod is back in the queue (``details.queue``)."""


class TraceEvent(Message, kw_only=True):
    """One step of one pod attempt (``phase`` is a :class:`TracePhase` value or a newer string)."""

    trace_id: str
    pod_uid: str
    namespace: str
    name: str
    service: str
    instance: str
    phase: str
    ts: float
    duration: float | None = None
    details: dict[str, Any] = msgspec.field(default_factory=dict)
    """Small plain values: counts per plugin, top scores, node, generation, reason ..."""


class TraceBatch(Message, kw_only=True):
    """The trace events of one pod from one flush of one service: one message (one stream write)."""

    events: list[TraceEvent]


class Heartbeat(Message, kw_only=True):
    service: str
    instance: str
    ready: bool
    ts: float
    version: str = ""
    details: dict[str, str] = msgspec.field(default_factory=dict)


class Ack(Message, kw_only=True):
    """Generic answer to a request that returns nothing but success or a reason."""

    ok: bool = True
    code: str = ""
    reason: str = ""


ALL_MESSAGE_TYPES: tuple[type[Message], ...] = (
    PendingPodEvent,
    ClusterEventMsg,
    FeedBatch,
    SnapshotDelta,
    SnapshotBootstrapRequest,
    PendingPodsRequest,
    BootstrapChunk,
    BootstrapReply,
    PopRequest,
    PopReply,
    QueueListRequest,
    QueueListReply,
    DoneRequest,
    LeaseRenewRequest,
    LeaseRenewReply,
    RequeueRequest,
    AssumeRequest,
    AssumeGroupRequest,
    AssumeReply,
    AssumeBatchRequest,
    AssumeBatchReply,
    DoneBatchRequest,
    ForgetRequest,
    GangCommit,
    EndedPlacement,
    Placement,
    PlacementBatch,
    PermitDecision,
    UnreserveRequest,
    TraceEvent,
    TraceBatch,
    Heartbeat,
    Ack,
)
