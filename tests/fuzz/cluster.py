"""A cluster for the service fuzzers: kubesim (HTTP) and a real informer on a real nats-server,
fresh pending pods on demand, valid requests about them to mutate, and a watch that catches
bootstrap chunks published anywhere but an inbox."""

from __future__ import annotations

import itertools
from typing import Any

import msgspec
from ksched_informer.service import InformerService
from ksched_kubesim import KubeSim
from nats.aio.msg import Msg

from ksched.bus import endpoints
from ksched.bus.codec import BadMessage, Message, decode
from ksched.bus.connect import Bus
from ksched.bus.endpoints import RequestEndpoint
from ksched.bus.messages import (
    AssumeRequest,
    BootstrapChunk,
    ForgetRequest,
    PendingPodsRequest,
    Placement,
    SnapshotBootstrapRequest,
)
from ksched.bus.subjects import Subjects
from ksched.plugins.volumebinding.plugin import NAME
from ksched.plugins.volumebinding.state import VolumeBindingState, export_state
from tests.informer.test_service import node, pod
from tests.polling import until

_names = itertools.count()


def stream_subjects(subjects: Subjects) -> list[str]:
    """Stream subjects a confused informer could be made to publish chunks into."""
    return [subjects.snapshot_delta, subjects.pending_pods("default-scheduler"), subjects.placements]


class Cluster:
    """The informer under test, a requester connection and a watch on its streams' subjects."""

    def __init__(self, service: InformerService, kube: KubeSim, bus: Bus) -> None:
        self.service = service
        self.kube = kube
        self.bus = bus
        self.misdelivered: list[str] = []
        self.inbox = ""
        self.node = ""
        """The newest node: pods are placed there (a node holds 110 pods)."""
        self.pods = 0

    async def start(self) -> None:
        await self.fresh_node()
        for subject in stream_subjects(self.bus.subjects):
            await self.bus.nc.subscribe(subject, cb=self._watch)
        self.inbox = self.bus.nc.new_inbox()
        await self.bus.nc.subscribe(self.inbox)  # chunks of the fuzzed bootstraps land here
        await self.bus.nc.flush()

    async def _watch(self, msg: Msg) -> None:
        try:
            decode(msg.data, BootstrapChunk)
        except BadMessage:
            return
        self.misdelivered.append(msg.subject)

    async def fresh_node(self) -> str:
        name = f"n{next(_names)}"
        self.kube.create(node(name, cpu="64"))
        await until(lambda: name in self.service.cache.snapshot.node_map)
        self.node, self.pods = name, 0
        return name

    async def fresh_pod(self) -> dict[str, Any]:
        self.pods += 1
        if self.pods > 50:  # each pod may be assumed (fuzzed or not): keep room on the node
            await self.fresh_node()
        obj: dict[str, Any] = self.kube.create(pod(f"fuzz-{next(_names)}"))
        uid = obj["metadata"]["uid"]
        await until(lambda: uid in self.service.cache.pending)
        return obj

    def placement(self, obj: dict[str, Any]) -> Placement:
        meta = obj["metadata"]
        return Placement(
            placement_id=f"{meta['uid']}:1",
            pod_uid=meta["uid"],
            namespace=meta["namespace"],
            name=meta["name"],
            node_name=self.node,
            scheduler_id="fuzz",
            profile="default-scheduler",
            epoch=self.service.epoch,
            snapshot_generation=self.service.cache.generation,
            pod=msgspec.json.encode(obj),
            plugin_state={NAME: export_state(VolumeBindingState(skip=True))},  # a pod without volumes
            permit_waits={"Coscheduling": 5.0},
        )

    def requests(self, obj: dict[str, Any]) -> dict[str, tuple[RequestEndpoint[Any, Any], Message]]:
        """Each subject the informer serves, with a valid request about pending pod ``obj``."""
        p = self.placement(obj)
        forget = ForgetRequest.of(p, "fuzz")
        bootstrap = SnapshotBootstrapRequest(replica_id="fuzz", deliver=self.inbox, max_chunk_bytes=4096)
        pending = PendingPodsRequest(
            requester="fuzz", deliver=self.inbox, scheduler_names=["default-scheduler"]
        )
        return {
            "bootstrap": (
                endpoints.SNAPSHOT_BOOTSTRAP,
                bootstrap,
            ),
            "pending": (
                endpoints.PENDING_BOOTSTRAP,
                pending,
            ),
            "assume": (
                endpoints.ASSUME,
                AssumeRequest(placement=p),
            ),
            "forget": (endpoints.FORGET, forget),
        }
