"""The JetStream streams and consumers ksched uses, with their limits in one place.

=============  ============================  ==========  ==================================================
stream         subjects                      retention   why
=============  ============================  ==========  ==================================================
snapshot       ``P.snapshot.delta``          limits      replicas replay deltas after a blip; a replica
                                                         further behind than the stream re-bootstraps
feed           ``P.feed.>``                  limits      the queue reads pending pods and cluster events
                                                         in cache order and resumes after a blip
placements     ``P.binder.placement``        work queue  a crashed binder loses nothing; msg-id dedup
trace          ``P.trace.>``                 limits      bounded lifecycle history for ``ksched trace``
=============  ============================  ==========  ==================================================

KV bucket ``P_assumed`` (:func:`assumed_ledger_bucket`, stream ``KV_P_assumed``): the informer's
ledger of assumed placements. Releases before it named it ``P_P_assumed``
(:func:`legacy_assumed_ledger_bucket`); the informer moves it with
:func:`ksched.bus.jetstream.migrate_kv_bucket` when it starts to lead.

KV bucket ``P_gangs`` (:func:`gang_commits_bucket`): the informer's commit records of group commits
(docs/gang.md); a gang member's ledger entry counts only while its commit record exists.

Replicas: a builder's ``replicas=None`` (the default) leaves the count to
:func:`ksched.bus.jetstream.ensure_stream`, which takes the bus' ``--jetstream-replicas`` setting.
"""

from __future__ import annotations

from nats.js.api import (
    AckPolicy,
    ConsumerConfig,
    DiscardPolicy,
    RetentionPolicy,
    StorageType,
    StreamConfig,
)

from ksched.bus.subjects import Subjects

MiB = 1024 * 1024

ASSUMED_LEDGER = "assumed"
"""Name of the informer's KV ledger of assumed placements, before the prefix."""


GANG_COMMITS = "gangs"
"""Name of the informer's KV bucket of group-commit records, before the prefix."""


ENDED_PLACEMENTS = "ended"
"""Name of the binders' KV bucket of placements whose binding failed, before the prefix."""

ENDED_PLACEMENTS_TTL = 3600.0
"""Seconds a binder's record of a failed placement is kept: its message comes again within the
work queue's ack wait or a nak's delay, unless NATS is down longer than this."""


def ended_placements_bucket(subjects: Subjects) -> str:
    """The binders' records of failed placements: ``P_ended`` (``TypedKV.open(bus, ENDED_PLACEMENTS,
    EndedPlacement)``): a placement recorded there is not bound when its message comes again, to
    this binder or another."""
    return subjects.kv_bucket(ENDED_PLACEMENTS)


def gang_commits_bucket(subjects: Subjects) -> str:
    """The commit records of gangs: ``P_gangs`` (``TypedKV.open(bus, GANG_COMMITS, GangCommit)``)."""
    return subjects.kv_bucket(GANG_COMMITS)


def assumed_ledger_bucket(subjects: Subjects) -> str:
    """The informer's ledger bucket: ``P_assumed`` (``TypedKV.open(bus, ASSUMED_LEDGER, ...)``)."""
    return subjects.kv_bucket(ASSUMED_LEDGER)


def legacy_assumed_ledger_bucket(subjects: Subjects) -> str:
    """The ledger's name before the fix, ``P_P_assumed`` (the prefix applied twice)."""
    return subjects.kv_bucket(subjects.kv_bucket(ASSUMED_LEDGER))


def snapshot_stream(
    subjects: Subjects,
    *,
    max_age: float = 600.0,
    max_bytes: int = 1024 * MiB,
    storage: StorageType = StorageType.FILE,
    replicas: int | None = None,
) -> StreamConfig:
    return StreamConfig(
        name=subjects.snapshot_stream,
        description="ksched snapshot deltas (informer/cache -> scheduler replicas)",
        subjects=[subjects.snapshot_delta],
        retention=RetentionPolicy.LIMITS,
        discard=DiscardPolicy.OLD,
        max_age=max_age,
        max_bytes=max_bytes,
        storage=storage,
        num_replicas=replicas,
    )


def feed_stream(
    subjects: Subjects,
    *,
    max_age: float = 900.0,
    max_bytes: int = 1024 * MiB,
    storage: StorageType = StorageType.FILE,
    replicas: int | None = None,
) -> StreamConfig:
    return StreamConfig(
        name=subjects.feed_stream,
        description="ksched pending pods and cluster events (informer/cache -> queue)",
        subjects=[subjects.feed_all],
        retention=RetentionPolicy.LIMITS,
        discard=DiscardPolicy.OLD,
        max_age=max_age,
        max_bytes=max_bytes,
        storage=storage,
        num_replicas=replicas,
    )


def placement_stream(
    subjects: Subjects,
    *,
    duplicate_window: float = 120.0,
    max_msgs: int = 1_000_000,
    storage: StorageType = StorageType.FILE,
    replicas: int | None = None,
) -> StreamConfig:
    """Work queue of the placements the informer accepted: a message is removed once a binder acks
    it. ``Nats-Msg-Id``: a ``PlacementBatch``'s ``batch_id``, a group commit member's ``placement_id``."""
    return StreamConfig(
        name=subjects.placement_stream,
        description="ksched accepted placements (informer/cache -> binder workers)",
        subjects=[subjects.placements],
        retention=RetentionPolicy.WORK_QUEUE,
        discard=DiscardPolicy.NEW,
        duplicate_window=duplicate_window,
        max_msgs=max_msgs,
        storage=storage,
        num_replicas=replicas,
    )


def trace_stream(
    subjects: Subjects,
    *,
    max_age: float = 3600.0,
    max_msgs: int = 1_000_000,
    max_bytes: int = 256 * MiB,
    storage: StorageType = StorageType.FILE,
    replicas: int | None = None,
) -> StreamConfig:
    return StreamConfig(
        name=subjects.trace_stream,
        description="ksched pod lifecycle trace events (every service -> ksched trace)",
        subjects=[subjects.trace_all],
        retention=RetentionPolicy.LIMITS,
        discard=DiscardPolicy.OLD,
        max_age=max_age,
        max_msgs=max_msgs,
        max_bytes=max_bytes,
        storage=storage,
        num_replicas=replicas,
    )


def all_streams(subjects: Subjects, *, replicas: int | None = None) -> list[StreamConfig]:
    """Every stream with default limits (what ``ensure_streams`` creates)."""
    return [
        snapshot_stream(subjects, replicas=replicas),
        feed_stream(subjects, replicas=replicas),
        placement_stream(subjects, replicas=replicas),
        trace_stream(subjects, replicas=replicas),
    ]


def placement_consumer(
    subjects: Subjects, *, ack_wait: float = 30.0, max_deliver: int = -1, max_ack_pending: int = 1024
) -> ConsumerConfig:
    """The durable pull consumer every binder worker shares (explicit ack; ``in_progress`` extends)."""
    return ConsumerConfig(
        durable_name=subjects.placement_consumer,
        description="ksched binder workers",
        ack_policy=AckPolicy.EXPLICIT,
        ack_wait=ack_wait,
        max_deliver=max_deliver,
        max_ack_pending=max_ack_pending,
        filter_subject=subjects.placements,
    )
