"""One realistic, fully populated instance of every bus message (dotted pod names on purpose)."""

from __future__ import annotations

import json
from typing import TypeVar

import msgspec

from ksched.api.core import Node, Pod
from ksched.bus.bootstrap import pack_items
from ksched.bus.messages import (
    ALL_MESSAGE_TYPES,
    Ack,
    AssumeBatchReply,
    AssumeBatchRequest,
    AssumeGroupRequest,
    AssumeRejectCode,
    AssumeReply,
    AssumeRequest,
    BootstrapChunk,
    BootstrapReply,
    ClusterEventMsg,
    DoneBatchRequest,
    DoneOutcome,
    DoneRequest,
    EndedPlacement,
    FeedBatch,
    ForgetRequest,
    GangCommit,
    GangRef,
    Heartbeat,
    LeasedPod,
    LeaseRenewReply,
    LeaseRenewRequest,
    Message,
    NodeRemove,
    NodeUpsert,
    ObjectRemove,
    ObjectUpsert,
    PendingPod,
    PendingPodAction,
    PendingPodEvent,
    PendingPodGroup,
    PendingPodsRequest,
    PermitDecision,
    Placement,
    PlacementBatch,
    PodPlace,
    PodRemove,
    PopReply,
    PopRequest,
    QueueListEntry,
    QueueListReply,
    QueueListRequest,
    RequeueRequest,
    SnapshotBootstrapRequest,
    SnapshotDelta,
    SnapshotOp,
    TraceBatch,
    TraceEvent,
    TracePhase,
    UnreserveRequest,
)

NS = "team.a"
NAME = "web.frontend-0"
UID = "5f0c6a8e-1b2c-4d3e-9f00-0123456789ab"
NODE = "node-1.zone-a.example.com"

POD_JSON = json.dumps(
    {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": NAME,
            "namespace": NS,
            "uid": UID,
            "resourceVersion": "42",
            "labels": {"app.kubernetes.io/name": "web"},
        },
        "spec": {
            "schedulerName": "my.scheduler",
            "priority": 1000,
            "containers": [
                {"name": "c", "image": "nginx", "resources": {"requests": {"cpu": "250m", "memory": "64Mi"}}}
            ],
            "tolerations": [
                {"key": "dedicated", "operator": "Equal", "value": "web", "effect": "NoSchedule"}
            ],
        },
        "status": {"phase": "Pending"},
    }
).encode()
NODE_JSON = json.dumps(
    {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": NODE, "labels": {"topology.kubernetes.io/zone": "zone-a"}},
        "spec": {"taints": [{"key": "dedicated", "value": "web", "effect": "NoSchedule"}]},
        "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}},
    }
).encode()
POD = msgspec.json.decode(POD_JSON, type=Pod)
NODE_OBJ = msgspec.json.decode(NODE_JSON, type=Node)

PENDING = PendingPod(
    uid=UID,
    namespace=NS,
    name=NAME,
    scheduler_name="my.scheduler",
    priority=1000,
    creation_timestamp="2026-01-02T03:04:05Z",
    scheduling_gates=["example.com/gate"],
    resource_version="42",
    nominated_node_name=NODE,
    pod=POD_JSON,
    group=PendingPodGroup(name="train.a", pod_group=b'{"metadata":{"name":"train.a"}}', all_pods=8),
)

OPS: list[SnapshotOp] = [
    NodeUpsert(NODE_OBJ),
    NodeRemove("node-2.zone-b"),
    PodPlace(POD, NODE, assumed=True),
    PodRemove("u-2"),
    ObjectUpsert("PersistentVolumeClaim", f"{NS}/data.claim", b'{"metadata":{"name":"data.claim"}}'),
    ObjectRemove("StorageClass", "fast.ssd"),
]

LEASED = LeasedPod(
    lease_id="lease-1",
    deadline=1_800_000_000.5,
    lease_seconds=30.0,
    pod=PENDING,
    attempts=2,
    queued_at=1_799_999_990.0,
    initial_attempt_at=1_799_999_900.0,
    trace_id="trace-1",
    min_generation=17,
    epoch="epoch-1",
    group=f"{NS}/train.a",
)

PLACEMENT = Placement(
    placement_id=f"{UID}:2",
    pod_uid=UID,
    namespace=NS,
    name=NAME,
    node_name=NODE,
    scheduler_id="sched-1",
    profile="my.scheduler",
    epoch="epoch-1",
    snapshot_generation=17,
    resource_version="42",
    attempt=2,
    trace_id="trace-1",
    assumed_at=1_800_000_001.0,
    pod=POD_JSON,
    plugin_state={"VolumeBinding": b"\x00\x01state"},
    permit_waits={"Coscheduling": 10.0},
    gang=GangRef(group=f"{NS}/train.a", commit_id="commit-1", members=[UID, "u-2"]),
)

TRACE_EVENT = TraceEvent(
    trace_id="trace-1",
    pod_uid=UID,
    namespace=NS,
    name=NAME,
    service="scheduler",
    instance="sched-1",
    phase=TracePhase.FILTER,
    ts=1_800_000_000.25,
    duration=0.004,
    details={"rejected": {"NodeResourcesFit": 2}, "feasible": 1, "generation": 17, "top": [[NODE, 87]]},
)

PENDING_EVENT = PendingPodEvent(
    action=PendingPodAction.UPDATE, pod=PENDING, reason="", epoch="epoch-1", generation=17, ts=1.5
)
CLUSTER_EVENT = ClusterEventMsg(
    resource="storage.k8s.io/CSINode",
    action=4,
    key=NODE,
    old=b"{}",
    new=NODE_JSON,
    epoch="e",
    generation=3,
)

SAMPLES: dict[type[Message], Message] = {
    PendingPodEvent: PENDING_EVENT,
    ClusterEventMsg: CLUSTER_EVENT,
    FeedBatch: FeedBatch(epoch="epoch-1", events=[PENDING_EVENT, CLUSTER_EVENT]),
    SnapshotDelta: SnapshotDelta(epoch="epoch-1", base=16, generation=17, ops=OPS, ts=2.5),
    SnapshotBootstrapRequest: SnapshotBootstrapRequest(
        replica_id="sched-1", deliver="_INBOX.abc", max_chunk_bytes=1024
    ),
    PendingPodsRequest: PendingPodsRequest(
        requester="queue-0", deliver="_INBOX.def", scheduler_names=["my.scheduler"], max_chunk_bytes=2048
    ),
    BootstrapChunk: BootstrapChunk(
        epoch="epoch-1", generation=17, index=0, total=1, data=pack_items([PENDING])[0]
    ),
    BootstrapReply: BootstrapReply(epoch="epoch-1", generation=17, chunks=1, items=1, stream_seq=99),
    PopRequest: PopRequest(
        scheduler_id="sched-1",
        scheduler_names=["default-scheduler", "my.scheduler"],
        max_pods=4,
        wait_seconds=0.2,
    ),
    PopReply: PopReply(pods=[LEASED]),
    DoneRequest: DoneRequest(
        lease_id="lease-1",
        scheduler_id="sched-1",
        pod_uid=UID,
        namespace=NS,
        name=NAME,
        outcome=DoneOutcome.UNSCHEDULABLE,
        unschedulable_plugins=["NodeResourcesFit", "TaintToleration"],
        pending_plugins=["VolumeBinding"],
        message="0/3 nodes are available: 3 Insufficient cpu.",
        trace_id="trace-1",
    ),
    DoneBatchRequest: DoneBatchRequest(
        items=[
            DoneRequest(
                lease_id="lease-2",
                scheduler_id="sched-1",
                pod_uid=UID,
                namespace=NS,
                name=NAME,
                outcome=DoneOutcome.SCHEDULED,
                node_name=NODE,
            )
        ]
    ),
    LeaseRenewRequest: LeaseRenewRequest(scheduler_id="sched-1", lease_ids=["lease-1", "lease-2"]),
    QueueListRequest: QueueListRequest(requester="ui-1", name_contains="web", limit=50),
    QueueListReply: QueueListReply(
        pods=[
            QueueListEntry(
                uid=UID,
                namespace=NS,
                name=NAME,
                scheduler_name="default-scheduler",
                queue="unschedulable",
                priority=10,
                attempts=2,
                queued_at=1_800_000_000.0,
                initial_attempt_at=1_799_999_990.0,
                plugins=["NodeResourcesFit"],
                message="0/3 nodes are available: 3 Insufficient cpu.",
                trace_id="trace-1",
            )
        ],
        counts={"active": 0, "unschedulable": 1},
        matched=1,
    ),
    LeaseRenewReply: LeaseRenewReply(renewed=["lease-1"], expired=["lease-2"], deadline=1_800_000_030.0),
    RequeueRequest: RequeueRequest(
        pod_uid=UID,
        namespace=NS,
        name=NAME,
        reason="binding rejected: 500",
        backoff=True,
        unschedulable_plugins=["DefaultBinder"],
        sender="binder-0",
        trace_id="trace-1",
    ),
    AssumeRequest: AssumeRequest(placement=PLACEMENT),
    AssumeReply: AssumeReply(
        accepted=False,
        code=AssumeRejectCode.DOES_NOT_FIT,
        reason="Insufficient cpu",
        epoch="e",
        generation=18,
    ),
    AssumeBatchRequest: AssumeBatchRequest(
        items=[AssumeRequest(placement=PLACEMENT, session="s1", seq=3, basis_from=2, spread_slack=1)]
    ),
    AssumeBatchReply: AssumeBatchReply(
        replies=[AssumeReply(accepted=True, epoch="e", generation=19), AssumeReply(accepted=False)]
    ),
    PlacementBatch: PlacementBatch(batch_id="e-7", placements=[PLACEMENT]),
    ForgetRequest: ForgetRequest(
        placement_id=f"{UID}:2",
        pod_uid=UID,
        namespace=NS,
        name=NAME,
        node_name=NODE,
        scheduler_id="sched-1",
        reason="bind failed",
    ),
    Placement: PLACEMENT,
    PermitDecision: PermitDecision(
        pod_uid=UID, namespace=NS, name=NAME, plugin="Coscheduling", allow=True, message="", sender="sched-2"
    ),
    UnreserveRequest: UnreserveRequest(
        placement_id=f"{UID}:2",
        pod_uid=UID,
        namespace=NS,
        name=NAME,
        node_name=NODE,
        scheduler_id="sched-1",
        reason="bind failed",
        plugin_state={"VolumeBinding": b"\x00"},
    ),
    TraceEvent: TRACE_EVENT,
    TraceBatch: TraceBatch(
        events=[TRACE_EVENT, msgspec.structs.replace(TRACE_EVENT, phase=TracePhase.ASSUMED, details={})]
    ),
    Heartbeat: Heartbeat(
        service="queue",
        instance="queue-0",
        ready=True,
        ts=1_800_000_000.0,
        version="0.1.0",
        details={"a": "b"},
    ),
    Ack: Ack(ok=False, code="LeaseExpired", reason="lease-1 expired"),
    AssumeGroupRequest: AssumeGroupRequest(
        group=f"{NS}/train.a", commit_id="commit-1", placements=[PLACEMENT]
    ),
    EndedPlacement: EndedPlacement(
        placement_id="p-1", pod_uid=UID, node_name="n1", reason="binding rejected", binder="b1"
    ),
    GangCommit: GangCommit(commit_id="commit-1", group=f"{NS}/train.a", members=[UID, "u-2"], ts=1.0),
}

REQUEST_REPLY_PAIRS: list[tuple[type[Message], type[Message]]] = [
    (SnapshotBootstrapRequest, BootstrapReply),
    (PendingPodsRequest, BootstrapReply),
    (PopRequest, PopReply),
    (DoneRequest, Ack),
    (LeaseRenewRequest, LeaseRenewReply),
    (QueueListRequest, QueueListReply),
    (RequeueRequest, Ack),
    (AssumeRequest, AssumeReply),
    (AssumeGroupRequest, AssumeReply),
    (AssumeBatchRequest, AssumeBatchReply),
    (DoneBatchRequest, Ack),
    (ForgetRequest, Ack),
    (UnreserveRequest, Ack),
]

assert set(SAMPLES) == set(ALL_MESSAGE_TYPES), "every message type needs a sample"

M = TypeVar("M", bound=Message)


def sample(msg_type: type[M]) -> M:
    """``SAMPLES[msg_type]`` with its precise type."""
    msg = SAMPLES[msg_type]
    assert isinstance(msg, msg_type)
    return msg
