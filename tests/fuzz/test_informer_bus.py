"""Fuzzing the informer's subjects over a real nats-server, with kubesim over HTTP behind it:
``P.snapshot.bootstrap``, ``P.cache.pending`` (bootstraps: chunks go to the request's ``deliver``),
``P.cache.assume`` and ``P.cache.forget``. Each example starts from a fresh pending pod and a valid
request about it, so mutations reach the cache's checks; afterwards the informer still answers a
bootstrap and a valid assume, and never published a chunk anywhere but an inbox."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st
from ksched_informer.service import InformerService
from ksched_kubesim import KubeSim

from ksched.bus.bootstrap import fetch_bootstrap
from ksched.bus.codec import BadMessage, Message, decode
from ksched.bus.connect import Bus
from ksched.bus.messages import (
    Ack,
    AssumeRejectCode,
    AssumeReply,
    AssumeRequest,
    BootstrapChunk,
    BootstrapReply,
    ForgetRequest,
    PendingPod,
    PendingPodsRequest,
    Placement,
    SnapshotBootstrapRequest,
)
from ksched.bus.subjects import SubjectKind, Subjects
from tests.fixtures.nats import BusFactory
from tests.fuzz.bus_checks import Endpoint, check_request
from tests.fuzz.payloads import payloads
from tests.fuzz.profiles import fuzz_settings
from tests.informer.conftest import sim  # noqa: F401 (fixture)
from tests.informer.test_service import informer, node, pod, until  # noqa: F401 (fixture)

_names = itertools.count()

SUBJECTS = ["bootstrap", "pending", "assume", "forget"]


def _stream_subjects(subjects: Subjects) -> list[str]:
    """Stream subjects a confused informer could be made to publish chunks into."""
    return [subjects.snapshot_delta, subjects.pending_pods("default-scheduler"), subjects.placements]


class Informer:
    """The informer under test, a requester connection and a watch on its streams' subjects."""

    def __init__(self, service: InformerService, kube: KubeSim, bus: Bus) -> None:
        self.service = service
        self.kube = kube
        self.bus = bus
        self.misdelivered: list[str] = []

    async def start(self) -> None:
        self.kube.create(node("n1", cpu="64"))
        await until(lambda: "n1" in self.service.cache.snapshot.node_map)
        for subject in _stream_subjects(self.bus.subjects):
            await self.bus.nc.subscribe(subject, cb=self._watch)
        self.inbox = self.bus.nc.new_inbox()
        await self.bus.nc.subscribe(self.inbox)  # chunks of the fuzzed bootstraps land here
        await self.bus.nc.flush()

    async def _watch(self, msg: Any) -> None:
        try:
            decode(msg.data, BootstrapChunk)
        except BadMessage:
            return
        self.misdelivered.append(msg.subject)

    async def fresh_pod(self) -> dict[str, Any]:
        obj = self.kube.create(pod(f"fuzz-{next(_names)}"))
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
            node_name="n1",
            scheduler_id="fuzz",
            profile="default-scheduler",
            epoch=self.service.epoch,
            snapshot_generation=self.service.cache.generation,
            pod=msgspec.json.encode(obj),
            permit_waits={"Coscheduling": 5.0},
        )

    def requests(self, obj: dict[str, Any]) -> dict[str, tuple[Endpoint, Message]]:
        s = self.bus.subjects
        p = self.placement(obj)
        forget = ForgetRequest(
            placement_id=p.placement_id,
            pod_uid=p.pod_uid,
            namespace=p.namespace,
            name=p.name,
            node_name=p.node_name,
            scheduler_id=p.scheduler_id,
            reason="fuzz",
        )
        return {
            "bootstrap": (
                Endpoint(
                    s.snapshot_bootstrap,
                    SubjectKind.SNAPSHOT_BOOTSTRAP,
                    SnapshotBootstrapRequest,
                    BootstrapReply,
                ),
                SnapshotBootstrapRequest(replica_id="fuzz", deliver=self.inbox, max_chunk_bytes=4096),
            ),
            "pending": (
                Endpoint(
                    s.pending_bootstrap, SubjectKind.PENDING_BOOTSTRAP, PendingPodsRequest, BootstrapReply
                ),
                PendingPodsRequest(
                    requester="fuzz", deliver=self.inbox, scheduler_names=["default-scheduler"]
                ),
            ),
            "assume": (
                Endpoint(s.assume, SubjectKind.ASSUME, AssumeRequest, AssumeReply),
                AssumeRequest(placement=p),
            ),
            "forget": (Endpoint(s.forget, SubjectKind.FORGET, ForgetRequest, Ack), forget),
        }


async def serves(harness: Informer, obj: dict[str, Any]) -> None:
    """The informer still bootstraps a requester and judges a valid assume."""
    bus = harness.bus
    reply, items = await fetch_bootstrap(
        bus,
        bus.subjects.pending_bootstrap,
        lambda inbox: PendingPodsRequest(requester="liveness", deliver=inbox),
        PendingPod,
        timeout=5,
    )
    assert reply.epoch == harness.service.epoch and len(items) == reply.items
    answer = await bus.request(
        bus.subjects.assume, AssumeRequest(placement=harness.placement(obj)), AssumeReply
    )
    assert answer.accepted or answer.code in (
        AssumeRejectCode.ALREADY_ASSUMED,
        AssumeRejectCode.POD_NOT_PENDING,
    )


@pytest.fixture
async def harness(
    sim: tuple[KubeSim, Path],  # noqa: F811
    informer: InformerService,  # noqa: F811
    bus_factory: BusFactory,
) -> Informer:
    made = Informer(informer, sim[0], await bus_factory("fuzz"))
    await made.start()
    return made


@fuzz_settings(30)
@given(data=st.data(), which=st.sampled_from(SUBJECTS))
async def test_informer_subjects(harness: Informer, data: st.DataObject, which: str) -> None:
    obj = await harness.fresh_pod()
    endpoint, valid = harness.requests(obj)[which]
    texts = [harness.inbox, *_stream_subjects(harness.bus.subjects)]
    payload = data.draw(payloads(valid, texts=texts), label="payload")
    await check_request(harness.bus, endpoint, payload)
    await serves(harness, obj)
    await harness.bus.nc.flush()
    assert harness.misdelivered == []


async def test_bootstrap_chunks_go_to_inboxes_only(harness: Informer) -> None:
    """Found while writing this fuzzer: ``deliver`` was any subject, so whoever may request a bootstrap could
    make the informer publish chunks into its own streams (the feed, the deltas, the binder's work
    queue), which the consumers then had to drop. The informer now answers with an error instead."""
    bus = harness.bus
    for deliver in [*_stream_subjects(bus.subjects), "", "a b", f"{bus.subjects.prefix}._INBOX"]:
        for subject, request in [
            (bus.subjects.pending_bootstrap, PendingPodsRequest(requester="t", deliver=deliver)),
            (bus.subjects.snapshot_bootstrap, SnapshotBootstrapRequest(replica_id="t", deliver=deliver)),
        ]:
            reply = await bus.request(subject, request, BootstrapReply)
            assert reply.chunks == 0 and "deliver" in reply.error and "inbox" in reply.error, reply
    await bus.nc.flush()
    assert harness.misdelivered == []
    await serves(harness, await harness.fresh_pod())
