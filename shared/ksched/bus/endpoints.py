"""Every subject bound to its message types, in one place: what may be sent where, and what comes back.

A service never names a subject and a message type separately. It passes an endpoint, and
``Bus.publish`` / ``request`` / ``reply`` / ``subscribe`` and ``ksched.bus.jetstream``'s publish and
consumers take the subject (under the bus's prefix) and the types from it, so mypy refuses a message
of another type on a subject, a reply decoded as the wrong type and a handler of the wrong shape.

- :class:`RequestEndpoint` ``[Q, R]``: request/reply, request type ``Q``, reply type ``R``;
- :class:`PublishEndpoint` ``[M]``: publish (core NATS or a JetStream stream), message type ``M``;
- :class:`Wildcard` ``[M]``: a wildcard over publish endpoints, to subscribe to only;
- :class:`RequestFamily` / :class:`PublishFamily`: one subject per pod, scheduler, resource ...,
  built from the :class:`~ksched.bus.subjects.Subjects` method with ``to(...)`` (typed like it), e.g.
  ``UNRESERVE.to(scheduler_id)``, ``TRACE_SHARD.to(shard)``, ``PERMIT.any``.

docs/bus.md's table of subjects lists exactly these (``tests/bus/test_endpoints.py`` checks both
ways). Replies travel on the requester's inbox, bootstrap chunks on the inbox the request names
(``ksched.bus.bootstrap``): they belong to their request endpoint and have none of their own.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Concatenate, Generic, ParamSpec, TypeVar

from ksched.bus.codec import Message
from ksched.bus.messages import (
    Ack,
    AssumeBatchReply,
    AssumeBatchRequest,
    AssumeGroupRequest,
    AssumeReply,
    AssumeRequest,
    BootstrapReply,
    ClusterEventMsg,
    DoneBatchRequest,
    DoneRequest,
    FeedBatch,
    ForgetRequest,
    LeaseRenewReply,
    LeaseRenewRequest,
    PendingPodEvent,
    PendingPodsRequest,
    PermitDecision,
    Placement,
    PlacementBatch,
    PopReply,
    PopRequest,
    QueueListReply,
    QueueListRequest,
    RequeueRequest,
    SnapshotBootstrapRequest,
    SnapshotDelta,
    TraceBatch,
    TraceEvent,
    UnreserveRequest,
)
from ksched.bus.subjects import SubjectKind, Subjects

M = TypeVar("M", bound=Message)
Q = TypeVar("Q", bound=Message)
R = TypeVar("R", bound=Message)
P = ParamSpec("P")

At = Callable[[Subjects], str]
"""Where an endpoint is under a bus's prefix."""


def _member(name: str) -> At:
    """A fixed subject: the :class:`Subjects` property ``name`` (checked at import)."""
    if not isinstance(getattr(Subjects, name, None), property):
        raise AttributeError(f"Subjects has no subject property {name!r}")
    return lambda subjects: str(getattr(subjects, name))


def _union(types: tuple[type[Message], ...]) -> object:
    """What ``decode`` takes: the type, or the union of the types."""
    target: object = types[0]
    for t in types[1:]:
        target = target | t
    return target


@dataclass(frozen=True, slots=True)
class PublishEndpoint(Generic[M]):
    """Messages of ``types`` (``M``, one type or a union) published on one subject."""

    types: tuple[type[M], ...]
    at: At
    kind: SubjectKind | str
    """The ``subject_kind`` label of its metrics (the subject's family, never a pod)."""
    name: str
    """The ``Subjects`` member (docs/bus.md's table, log lines)."""
    decode_as: object = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "decode_as", _union(self.types))

    def subject(self, subjects: Subjects) -> str:
        return self.at(subjects)

    def check(self, message: Message) -> None:
        """TypeError for a message of another type (what mypy catches in typed code)."""
        if not isinstance(message, self.types):
            raise TypeError(f"{self.name}: {type(message).__name__} is not {_names(self.types)}")

    def envelope(self, message: M) -> Envelope:
        """``message`` addressed to this endpoint, for a list of messages to several endpoints."""
        self.check(message)
        return Envelope(self, message)


@dataclass(frozen=True, slots=True)
class Envelope:
    """A message and the publish endpoint it goes to (type-checked by ``PublishEndpoint.envelope``)."""

    endpoint: PublishEndpoint[Any]
    message: Message


@dataclass(frozen=True, slots=True)
class Wildcard(Generic[M]):
    """A wildcard subject over publish endpoints of ``types``: to subscribe to, never to publish on."""

    types: tuple[type[M], ...]
    at: At
    kind: SubjectKind | str
    name: str
    decode_as: object = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "decode_as", _union(self.types))

    def subject(self, subjects: Subjects) -> str:
        return self.at(subjects)


@dataclass(frozen=True, slots=True)
class RequestEndpoint(Generic[Q, R]):
    """Requests of type ``Q`` on one subject, answered by an ``R`` (or an error reply)."""

    request: type[Q]
    reply: type[R]
    at: At
    kind: SubjectKind | str
    name: str

    def subject(self, subjects: Subjects) -> str:
        return self.at(subjects)


@dataclass(frozen=True, slots=True)
class PublishFamily(Generic[P, M]):
    """A publish endpoint per value of the subject's free part(s): ``to(...)`` takes what the
    ``Subjects`` method ``build`` takes; ``any`` (if the family has one) is its wildcard."""

    build: Callable[Concatenate[Subjects, P], str]
    types: tuple[type[M], ...]
    kind: SubjectKind | str
    wildcard: str = ""
    """The ``Subjects`` property of the wildcard over the whole family ('' for none)."""

    @property
    def name(self) -> str:
        return self.build.__name__

    def to(self, *args: P.args, **kwargs: P.kwargs) -> PublishEndpoint[M]:
        build = self.build
        return PublishEndpoint(self.types, lambda s: build(s, *args, **kwargs), self.kind, self.name)

    @property
    def any(self) -> Wildcard[M]:
        if not self.wildcard:
            raise AttributeError(f"{self.name} has no wildcard")
        return Wildcard(self.types, _member(self.wildcard), self.kind, self.wildcard)


@dataclass(frozen=True, slots=True)
class RequestFamily(Generic[P, Q, R]):
    """A request endpoint per value of the subject's free part(s) (``to(...)`` as ``build``)."""

    build: Callable[Concatenate[Subjects, P], str]
    request: type[Q]
    reply: type[R]
    kind: SubjectKind | str

    @property
    def name(self) -> str:
        return self.build.__name__

    def to(self, *args: P.args, **kwargs: P.kwargs) -> RequestEndpoint[Q, R]:
        build = self.build
        return RequestEndpoint(
            self.request, self.reply, lambda s: build(s, *args, **kwargs), self.kind, self.name
        )


def _names(types: tuple[type[Message], ...]) -> str:
    return " | ".join(t.__name__ for t in types)


def _request(name: str, request: type[Q], reply: type[R], kind: SubjectKind) -> RequestEndpoint[Q, R]:
    return RequestEndpoint(request, reply, _member(name), kind, name)


def _publish(name: str, message: type[M], kind: SubjectKind) -> PublishEndpoint[M]:
    return PublishEndpoint((message,), _member(name), kind, name)


# --- informer/cache -> scheduler replicas -------------------------------------------------------------
SNAPSHOT_DELTA = _publish("snapshot_delta", SnapshotDelta, SubjectKind.SNAPSHOT_DELTA)
SNAPSHOT_BOOTSTRAP = _request(
    "snapshot_bootstrap", SnapshotBootstrapRequest, BootstrapReply, SubjectKind.SNAPSHOT_BOOTSTRAP
)

# --- informer/cache feeds -> queue (and the replicas' nominations) -----------------------------------
PENDING_PODS = PublishFamily(
    Subjects.pending_pods, (PendingPodEvent,), SubjectKind.PENDING_POD, wildcard="pending_pods_all"
)
CLUSTER_EVENTS = PublishFamily(Subjects.cluster_events, (ClusterEventMsg,), SubjectKind.CLUSTER_EVENT)
"""Single feed events, as informers of earlier releases published them (readers still take them)."""
FEED_BATCH = _publish("feed_batch", FeedBatch, SubjectKind.FEED_BATCH)
"""What the informer publishes: its feed, one batch per flush."""
FEED_NOMINATED = _publish("feed_nominated", FeedBatch, SubjectKind.FEED_NOMINATED)
"""A flush's batch that concerns nominations, instead of on ``FEED_BATCH`` (the replicas follow it)."""
FEED: Wildcard[FeedBatch | PendingPodEvent | ClusterEventMsg] = Wildcard(
    (FeedBatch, PendingPodEvent, ClusterEventMsg), _member("feed_all"), SubjectKind.FEED, "feed_all"
)
"""Both feeds in the order the cache published them (the queue's ordered consumer)."""
PENDING_BOOTSTRAP = _request(
    "pending_bootstrap", PendingPodsRequest, BootstrapReply, SubjectKind.PENDING_BOOTSTRAP
)

# --- cache: assume / forget -----------------------------------------------------------------------------
ASSUME = _request("assume", AssumeRequest, AssumeReply, SubjectKind.ASSUME)
ASSUME_GROUP = _request("assume_group", AssumeGroupRequest, AssumeReply, SubjectKind.ASSUME_GROUP)
"""A gang's placements, accepted all or none (docs/gang.md)."""
ASSUME_BATCH = _request("assume_batch", AssumeBatchRequest, AssumeBatchReply, SubjectKind.ASSUME_BATCH)
"""One loop turn's placements, checked in order, each accepted or refused on its own (docs/bus.md)."""
FORGET = _request("forget", ForgetRequest, Ack, SubjectKind.FORGET)

# --- queue ------------------------------------------------------------------------------------------------
QUEUE_POP = _request("queue_pop", PopRequest, PopReply, SubjectKind.POP)
QUEUE_DONE = _request("queue_done", DoneRequest, Ack, SubjectKind.DONE)
QUEUE_DONE_BATCH = _request("queue_done_batch", DoneBatchRequest, Ack, SubjectKind.DONE_BATCH)
QUEUE_RENEW = _request("queue_renew", LeaseRenewRequest, LeaseRenewReply, SubjectKind.RENEW)
QUEUE_REQUEUE = _request("queue_requeue", RequeueRequest, Ack, SubjectKind.REQUEUE)
QUEUE_LIST = _request("queue_list", QueueListRequest, QueueListReply, SubjectKind.QUEUE_LIST)

# --- binder -----------------------------------------------------------------------------------------------
PLACEMENTS: PublishEndpoint[Placement | PlacementBatch] = PublishEndpoint(
    (Placement, PlacementBatch), _member("placements"), SubjectKind.PLACEMENT, "placements"
)
"""A batch's accepted placements as one ``PlacementBatch``; a group commit's (and an older informer's)
as one ``Placement`` each: binders read both."""
PERMIT = PublishFamily(Subjects.permit, (PermitDecision,), SubjectKind.PERMIT, wildcard="permit_all")

# --- scheduler replicas -----------------------------------------------------------------------------------
UNRESERVE = RequestFamily(Subjects.unreserve, UnreserveRequest, Ack, SubjectKind.UNRESERVE)

# --- observability ----------------------------------------------------------------------------------------
TRACE: PublishFamily[[str, str], TraceEvent | TraceBatch] = PublishFamily(
    Subjects.trace, (TraceEvent, TraceBatch), SubjectKind.TRACE, wildcard="trace_all"
)
"""A pod's events of one flush (releases before trace shards; still read, no longer written)."""
TRACE_SHARD: PublishFamily[[int], TraceEvent | TraceBatch] = PublishFamily(
    Subjects.trace_shard, (TraceEvent, TraceBatch), SubjectKind.TRACE, wildcard="trace_all"
)
"""The events of every pod of one shard from one flush of one service (docs/tracing.md)."""
