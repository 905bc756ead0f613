"""Every NATS subject, JetStream stream, consumer and KV bucket ksched uses, under one prefix.

The prefix (default ``ksched``) lets several installations share one NATS. Free-form parts of a
subject (pod namespace and name, scheduler name, scheduler id, resource name) go through
:func:`ksched.bus.tokens.encode_token`, so dots and wildcards in them are safe.

``SubjectKind`` is the bounded label used in metrics and logs: it names the subject's family, never
the pod (``trace`` rather than ``ksched.trace.default.web=2E1``); each endpoint of
:mod:`ksched.bus.endpoints` carries its own.
"""

from __future__ import annotations

import re
import zlib
from dataclasses import dataclass
from enum import StrEnum

from ksched.bus.tokens import encode_token

DEFAULT_PREFIX = "ksched"

TRACE_SHARDS = 8
"""Trace shards: every service publishes one message per shard and flush on :meth:`Subjects.trace_shard`.
Readers and writers must agree: changing it needs a reader that looks at both layouts."""
TRACE_SHARD_TOKEN = "=shard"
"""The token after ``trace`` of a shard subject: no :func:`encode_token` output (``=s`` is no escape),
so no namespace can collide with it."""
_PREFIX_RE = re.compile(r"[A-Za-z0-9_-]+(?:\.[A-Za-z0-9_-]+)*")


class SubjectKind(StrEnum):
    """Subject families (the ``subject_kind`` metric label)."""

    SNAPSHOT_DELTA = "snapshot.delta"
    SNAPSHOT_BOOTSTRAP = "snapshot.bootstrap"
    PENDING_POD = "feed.pending"
    CLUSTER_EVENT = "feed.event"
    FEED_BATCH = "feed.batch"
    FEED_NOMINATED = "feed.nominated"
    FEED = "feed"
    """Both feeds in one ordered subscription (the queue)."""
    PENDING_BOOTSTRAP = "cache.pending"
    ASSUME = "cache.assume"
    ASSUME_GROUP = "cache.assume-group"
    ASSUME_BATCH = "cache.assumes"
    FORGET = "cache.forget"
    POP = "queue.pop"
    DONE = "queue.done"
    DONE_BATCH = "queue.dones"
    RENEW = "queue.renew"
    REQUEUE = "queue.requeue"
    QUEUE_LIST = "queue.list"
    PLACEMENT = "binder.placement"
    PERMIT = "binder.permit"
    UNRESERVE = "scheduler.unreserve"
    TRACE = "trace"
    HEALTH = "health"
    BOOTSTRAP_CHUNK = "bootstrap.chunk"
    """Chunks of a bootstrap, delivered to the requester's own inbox."""
    KV = "kv"
    """A value read from a JetStream KV bucket."""
    REPLY = "reply"
    """A reply to a request, read by the requester."""


class SubjectError(ValueError):
    """A prefix or subject that does not fit the ksched layout."""


@dataclass(frozen=True)
class Subjects:
    """Subject names for one installation. ``Subjects()`` uses the default prefix ``ksched``."""

    prefix: str = DEFAULT_PREFIX

    def __post_init__(self) -> None:
        if not _PREFIX_RE.fullmatch(self.prefix):
            raise SubjectError(
                f"subject prefix {self.prefix!r}: expected dot-separated tokens of letters, digits, _ or -"
            )

    # --- informer/cache -> scheduler replicas -------------------------------------------------
    @property
    def snapshot_delta(self) -> str:
        """Ordered snapshot deltas (JetStream stream :attr:`snapshot_stream`)."""
        return f"{self.prefix}.snapshot.delta"

    @property
    def snapshot_bootstrap(self) -> str:
        """Request a full snapshot (request/reply; chunks go to the requester's inbox)."""
        return f"{self.prefix}.snapshot.bootstrap"

    # --- informer/cache -> queue -----------------------------------------------------------------
    def pending_pods(self, scheduler_name: str) -> str:
        """Pending-pod feed for one schedulerName (JetStream stream :attr:`feed_stream`)."""
        return f"{self.prefix}.feed.pending.{encode_token(scheduler_name)}"

    @property
    def pending_pods_all(self) -> str:
        return f"{self.prefix}.feed.pending.*"

    def cluster_events(self, resource: str) -> str:
        """Cluster-event feed for one resource (``Node``, ``storage.k8s.io/CSINode`` ...)."""
        return f"{self.prefix}.feed.event.{encode_token(resource)}"

    @property
    def feed_batch(self) -> str:
        """The informer's feed, one :class:`~ksched.bus.messages.FeedBatch` per flush (stream
        :attr:`feed_stream`; :meth:`pending_pods` and :meth:`cluster_events` carry single events,
        as earlier releases published them; readers still take them)."""
        return f"{self.prefix}.feed.batch"

    @property
    def feed_nominated(self) -> str:
        """The informer's feed batches that concern nominations (a pod nominated, or no longer, or
        deleted while pending): the same stream as :meth:`feed_batch`, in its order; the scheduler
        replicas follow only this subject."""
        return f"{self.prefix}.feed.nominated"

    @property
    def feed_all(self) -> str:
        """Both feeds, in the order the cache published them."""
        return f"{self.prefix}.feed.>"

    @property
    def pending_bootstrap(self) -> str:
        """Request every pending pod (the queue's rebuild after a restart; request/reply + chunks)."""
        return f"{self.prefix}.cache.pending"

    @property
    def assume(self) -> str:
        return f"{self.prefix}.cache.assume"

    @property
    def assume_group(self) -> str:
        """A gang's placements, accepted all or none (docs/gang.md)."""
        return f"{self.prefix}.cache.assume-group"

    @property
    def assume_batch(self) -> str:
        """Several assumes in one request (``AssumeBatchRequest`` -> ``AssumeBatchReply``)."""
        return f"{self.prefix}.cache.assumes"

    @property
    def forget(self) -> str:
        return f"{self.prefix}.cache.forget"

    # --- queue -----------------------------------------------------------------------------------
    @property
    def queue_pop(self) -> str:
        return f"{self.prefix}.queue.pop"

    @property
    def queue_done(self) -> str:
        return f"{self.prefix}.queue.done"

    @property
    def queue_done_batch(self) -> str:
        """Several lease ends in one request (``DoneBatchRequest`` -> ``Ack``)."""
        return f"{self.prefix}.queue.dones"

    @property
    def queue_renew(self) -> str:
        return f"{self.prefix}.queue.renew"

    @property
    def queue_requeue(self) -> str:
        return f"{self.prefix}.queue.requeue"

    @property
    def queue_list(self) -> str:
        """What the queue holds, pod by pod (request/reply; ``ksched ui``)."""
        return f"{self.prefix}.queue.list"

    # --- binder ------------------------------------------------------------------------------------
    @property
    def placements(self) -> str:
        """Accepted placements (JetStream work queue :attr:`placement_stream`)."""
        return f"{self.prefix}.binder.placement"

    def permit(self, pod_uid: str) -> str:
        """Allow/Reject for a pod waiting on Permit in a binder."""
        return f"{self.prefix}.binder.permit.{encode_token(pod_uid)}"

    @property
    def permit_all(self) -> str:
        return f"{self.prefix}.binder.permit.*"

    # --- scheduler replicas --------------------------------------------------------------------------
    def unreserve(self, scheduler_id: str) -> str:
        """Ask the replica that decided a placement to run Unreserve (request/reply)."""
        return f"{self.prefix}.scheduler.{encode_token(scheduler_id)}.unreserve"

    # --- observability -------------------------------------------------------------------------------
    def trace(self, namespace: str, name: str) -> str:
        """Lifecycle trace events of one pod (JetStream stream :attr:`trace_stream`)."""
        return f"{self.prefix}.trace.{encode_token(namespace)}.{encode_token(name)}"

    def trace_shard(self, shard: int) -> str:
        """Trace events of the pods of shard ``shard`` (:func:`trace_shard_of`), a flush of a service each."""
        if not 0 <= shard < TRACE_SHARDS:
            raise SubjectError(f"trace shard {shard}: expected 0 .. {TRACE_SHARDS - 1}")
        return f"{self.prefix}.trace.{TRACE_SHARD_TOKEN}.{shard}"

    @property
    def trace_shard_all(self) -> str:
        return f"{self.prefix}.trace.{TRACE_SHARD_TOKEN}.*"

    def trace_namespace(self, namespace: str) -> str:
        return f"{self.prefix}.trace.{encode_token(namespace)}.*"

    @property
    def trace_all(self) -> str:
        return f"{self.prefix}.trace.>"

    def health(self, service: str, instance: str) -> str:
        """Heartbeats of one service instance (core NATS)."""
        return f"{self.prefix}.health.{encode_token(service)}.{encode_token(instance)}"

    @property
    def health_all(self) -> str:
        return f"{self.prefix}.health.>"

    @property
    def inbox_prefix(self) -> str:
        """Inbox prefix for connections of this installation (keeps permissions prefix-scoped)."""
        return f"{self.prefix}._INBOX"

    # --- JetStream names -----------------------------------------------------------------------------
    @property
    def _name_base(self) -> str:
        return self.prefix.replace(".", "_")

    @property
    def snapshot_stream(self) -> str:
        return f"{self._name_base}_snapshot"

    @property
    def feed_stream(self) -> str:
        return f"{self._name_base}_feed"

    @property
    def placement_stream(self) -> str:
        return f"{self._name_base}_placements"

    @property
    def trace_stream(self) -> str:
        return f"{self._name_base}_trace"

    @property
    def stream_names(self) -> tuple[str, ...]:
        return (self.snapshot_stream, self.feed_stream, self.placement_stream, self.trace_stream)

    #: durable pull consumer shared by every binder worker
    placement_consumer = "binder"

    def kv_bucket(self, name: str) -> str:
        """A KV bucket name owned by this installation (``[A-Za-z0-9_-]`` only)."""
        if not re.fullmatch(r"[A-Za-z0-9_-]+", name):
            raise SubjectError(f"KV bucket name {name!r}: letters, digits, '_' or '-' only")
        return f"{self._name_base}_{name}"


def trace_shard_of(namespace: str, name: str) -> int:
    """The trace shard of pod ``namespace/name`` (CRC-32 of ``namespace/name``: the same in every process)."""
    return zlib.crc32(f"{namespace}/{name}".encode()) % TRACE_SHARDS
