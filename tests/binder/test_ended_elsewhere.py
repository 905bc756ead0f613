"""A placement whose binding failed is forgotten (the informer makes its pod pending again and may
place it, or others on that node, since). If its message comes again — a batch nak'ed for another
placement's unwritten Scheduled event, or left unacknowledged by a binder killed after the failure —
no binder may bind it, including a binder other than the one it failed at: the failing binder
records it in the binders' KV bucket ``P_ended`` before forgetting it, and a redelivery reads it.
Conversely a redelivered placement whose pod an earlier delivery bound is no failure when its binding
cycle fails this time (a Binding the restarting API server refuses, a PreBind): it owes only its
Scheduled event. Two binders on one work queue of a real nats-server, binding against kubesim."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import msgspec
from ksched_binder.options import BinderOptions
from ksched_binder.service import BinderService
from ksched_informer.service import InformerService
from ksched_kubesim import KubeSim

from ksched.bus.connect import Bus, connect
from ksched.bus.embedded import EmbeddedNats
from ksched.bus.endpoints import FORGET, PLACEMENTS
from ksched.bus.jetstream import publish
from ksched.bus.messages import AssumeRequest, ForgetRequest, Placement, PlacementBatch
from ksched.bus.subjects import Subjects
from ksched.config import default_config
from ksched.framework.status import Status
from ksched.framework.testing import make_pod
from ksched.service.options import CommonOptions
from tests.binder.harness import BinderHarness
from tests.fixtures.kubesim import fast_config
from tests.informer.conftest import informer_options
from tests.informer.test_service import assume_request, node, pod
from tests.polling import until

PREFIX = "ended"


class Holds:
    """PreBind of a binder killed mid-binding: every pod waits forever."""

    name = "Holds"

    async def pre_bind(self, state: Any, pi: Any, node_name: str) -> Status | None:
        await asyncio.Event().wait()
        return None


class Refuses:
    """PreBind of a binder whose every binding cycle fails (a write the API server refused)."""

    name = "Refuses"

    async def pre_bind(self, state: Any, pi: Any, node_name: str) -> Status | None:
        return Status.as_error("refused")


class FailsAHoldsB:
    """PreBind of the first binder: pod ``a``'s binding fails (a write the API refused), pod ``b``'s
    waits forever (the binder is killed before the batch is acknowledged)."""

    name = "FailsAHoldsB"

    def __init__(self) -> None:
        self.failed = asyncio.Event()

    async def pre_bind(self, state: Any, pi: Any, node_name: str) -> Status | None:
        if pi.pod.metadata.name == "a":
            self.failed.set()
            return Status.as_error("refused")
        await asyncio.Event().wait()
        return None


async def kill(service: BinderService) -> None:
    """Stop ``service`` as a kill -9 would, as far as NATS can tell: nothing acknowledged."""
    await service.tasks.cancel_all(drain=0.0)
    assert service.bus is not None
    await service.bus.close()


async def close(*services: BinderService) -> None:
    for service in services:
        if service.bus is not None and service.bus.ready:
            await service.stop()
        else:
            if service.api is not None:
                await service.api.close()
            await service.health.stop()


async def deliver(
    service: BinderService, pre_bind: Any, bus: Bus, batch_id: str, placements: list[Placement]
) -> None:
    """Start ``service`` with the extra PreBind plugin ``pre_bind`` and publish ``placements`` to it as one
    batch (the only binder on the work queue yet: the first delivery is its)."""
    await service.start()
    service.frameworks["default-scheduler"].plugins.pre_bind.append(pre_bind)
    await publish(bus, PLACEMENTS, PlacementBatch(batch_id=batch_id, placements=placements), msg_id=batch_id)


def informer_of(url: str, kubeconfig: Path, identity: str) -> InformerService:
    return InformerService(informer_options(url, kubeconfig, PREFIX, identity), default_config())


async def assumed_on_n1(kube: KubeSim, informer: InformerService) -> tuple[str, AssumeRequest]:
    """Pod ``a`` placed on node ``n1`` and accepted by ``informer`` (published to the binders)."""
    await until(lambda: informer.ready)
    kube.create(node("n1"))
    a = kube.create(pod("a"))
    uid = a["metadata"]["uid"]
    await until(lambda: uid in informer.cache.pending and len(informer.cache.snapshot.nodes) == 1)
    return uid, assume_request(a, "n1", informer, informer.cache.generation)


def binder(url: str, kubeconfig: Path, identity: str) -> BinderService:
    common = CommonOptions(identity=identity, nats=url, kubeconfig=str(kubeconfig), subject_prefix=PREFIX)
    return BinderService(BinderOptions(common=common, workers=4, ack_wait=2.0), default_config())


async def test_a_placement_failed_at_one_binder_is_not_bound_by_the_other(tmp_path: Path) -> None:
    async with KubeSim(fast_config()) as kube, EmbeddedNats() as server:
        kubeconfig = kube.write_kubeconfig(tmp_path / "kubeconfig")
        kube.create(node("n1"))
        a, b = (kube.create(pod(name)) for name in ("a", "b"))
        placements = [
            await BinderHarness.placement(
                make_pod(o["metadata"]["name"], "default", uid=o["metadata"]["uid"]), "n1"
            )
            for o in (a, b)
        ]
        first, second = binder(server.url, kubeconfig, "b1"), binder(server.url, kubeconfig, "b2")
        informer = await connect(server.url, name="informer", subjects=Subjects(PREFIX))
        try:
            plugin = FailsAHoldsB()
            await deliver(first, plugin, informer, "e-1", placements)
            await asyncio.wait_for(plugin.failed.wait(), 10)
            await until(lambda: placements[0].placement_id in first._ended, what="a failed at b1")
            await kill(first)  # the batch, not acknowledged, comes to b2 after the ack wait
            await second.start()

            def node_of(name: str) -> str:
                read = kube.get("Pod", name, "default")
                assert read is not None
                return str(read["spec"].get("nodeName") or "")

            await until(lambda: node_of("b") == "n1", timeout=15, what="b bound by b2")
            await asyncio.sleep(1.0)  # a and b are bound together
            assert node_of("a") == ""
            assert second._ended.get(placements[0].placement_id) == "failed"
        finally:
            await informer.close(drain=False)
            await close(first, second)


async def test_a_redelivered_placement_bound_before_is_a_repeat_when_its_cycle_fails(tmp_path: Path) -> None:
    async with KubeSim(fast_config()) as kube, EmbeddedNats() as server:
        kubeconfig = kube.write_kubeconfig(tmp_path / "kubeconfig")
        kube.create(node("n1"))
        a = kube.create(pod("a"))
        decided = await BinderHarness.placement(make_pod("a", "default", uid=a["metadata"]["uid"]), "n1")
        placement = msgspec.structs.replace(decided, assumed_at=time.time())  # as the informer accepts it
        first, second = binder(server.url, kubeconfig, "b1"), binder(server.url, kubeconfig, "b2")
        informer = await connect(server.url, name="informer", subjects=Subjects(PREFIX))
        try:
            await deliver(first, Holds(), informer, "e-2", [placement])
            await until(lambda: first.busy == 1, what="b1 binding a")
            # An earlier delivery bound a and died before its Scheduled event (b1 stands for it).
            kube.bind("default", "a", "n1")
            await kill(first)
            await second.start()
            second.frameworks["default-scheduler"].plugins.pre_bind.append(Refuses())

            def scheduled() -> list[Any]:
                return [
                    e
                    for e in kube.list_objects("Event", namespace="default")
                    if e.get("reason") in ("Scheduled", "FailedScheduling")
                ]

            await until(scheduled, timeout=15, what="an event of a")
            await asyncio.sleep(0.5)
            assert [e["reason"] for e in scheduled()] == ["Scheduled"]
            assert placement.placement_id not in second._ended
        finally:
            await informer.close(drain=False)
            await close(first, second)


async def test_a_failed_placement_published_again_is_forgotten_again(
    tmp_path: Path,
) -> None:
    """The forget of a failed placement may reach no leading informer (leaders changing under an
    overloaded API server): the next leader restores the assumption from the ledger and publishes the
    placement again, and the binder that failed it skips it. It forgets it again then, so the pod is
    pending again instead of assumed, unbound, until the assumption expires (15 min; the full-size
    chaos run on the real API server, 3 pods). The informer forgets only that placement's assumption."""
    async with KubeSim(fast_config()) as kube, EmbeddedNats() as server:
        kubeconfig = kube.write_kubeconfig(tmp_path / "kubeconfig")
        informer = informer_of(server.url, kubeconfig, "informer-again")
        await informer.start()
        first = binder(server.url, kubeconfig, "b1")
        scheduler = await connect(server.url, name="scheduler", subjects=Subjects(PREFIX))
        try:
            uid, req = await assumed_on_n1(kube, informer)
            await first.start()
            first._remember_ended(req.placement.placement_id, "failed")  # its forget was lost
            [reply] = await informer.accept([req])
            assert reply.accepted  # the binder may have forgotten it again already
            await until(lambda: uid not in informer.cache.assumed, what="the assumption forgotten again")
            assert uid in informer.cache.pending
            assert (kube.get("Pod", "a", "default") or {})["spec"].get("nodeName") is None

            # placed on n1 anew: a forget of the old placement (sent again late) leaves it assumed
            again = msgspec.structs.replace(
                req, placement=msgspec.structs.replace(req.placement, placement_id=f"{uid}:2")
            )
            await first.stop()
            [reply] = await informer.accept([again])
            assert reply.accepted
            late = await scheduler.request(FORGET, ForgetRequest.of(req.placement, "late"), timeout=5)
            assert (late.ok, late.code) == (False, "NotAssumed")
            assert informer.cache.assumed[uid].node == "n1"
        finally:
            await scheduler.close(drain=False)
            await close(first)
            await informer.stop()


async def test_a_forget_no_informer_answered_is_sent_again(tmp_path: Path) -> None:
    """A binding fails while no informer leads (the leader just exited): its forget is answered by
    none. The next leader restores the assumption from the ledger, and its publish of the placement
    again is dropped as a duplicate (same msg id, within the stream's window), so only the binder can
    undo it: it sends the forget again until a leader done restoring answers (the full-size chaos run
    on the real API server: 4 pods left assumed and unbound)."""
    async with KubeSim(fast_config()) as kube, EmbeddedNats() as server:
        kubeconfig = kube.write_kubeconfig(tmp_path / "kubeconfig")
        old = informer_of(server.url, kubeconfig, "informer-old")
        new = informer_of(server.url, kubeconfig, "informer-new")
        first = binder(server.url, kubeconfig, "b1")
        await old.start()
        try:
            uid, req = await assumed_on_n1(kube, old)
            [reply] = await old.accept([req])
            assert reply.accepted
            await old.stop()  # gone before the binding fails; its ledger entry stays
            await first.start()
            first.frameworks["default-scheduler"].plugins.pre_bind.append(Refuses())
            await until(lambda: req.placement.placement_id in first._ended, what="the binding failed")
            await new.start()
            await until(lambda: new.ready, timeout=15)
            await until(
                lambda: uid not in new.cache.assumed, timeout=20, what="the restored assumption forgotten"
            )
            assert uid in new.cache.pending
        finally:
            await close(first)
            await new.stop()


async def test_a_failed_placement_restored_past_the_duplicate_window_is_not_bound(tmp_path: Path) -> None:
    """A binding fails while no informer leads: the failing binder records the placement in
    ``P_ended`` and its forget is answered by none, and the ledger entry stays (the old leader died
    before dropping it). The next leader restores the assumption and publishes the placement again;
    past the stream's duplicate window (2 min; here the stream deleted and created again, which forgets
    its msg ids as the window's passing does) that copy is a new message, whose FIRST delivery reaches
    another binder. The leader marks what it publishes again, and the binder reads ``P_ended`` for it
    as for a redelivery: not bound (it would be bound where the cache no longer counts it once the
    forget lands), forgotten again instead."""
    async with KubeSim(fast_config()) as kube, EmbeddedNats() as server:
        kubeconfig = kube.write_kubeconfig(tmp_path / "kubeconfig")
        old = informer_of(server.url, kubeconfig, "informer-old")
        new = informer_of(server.url, kubeconfig, "informer-new")
        first, second = binder(server.url, kubeconfig, "b1"), binder(server.url, kubeconfig, "b2")
        await old.start()
        try:
            uid, req = await assumed_on_n1(kube, old)
            decided = await BinderHarness.placement(make_pod("a", "default", uid=uid), "n1")
            placement = msgspec.structs.replace(req.placement, plugin_state=decided.plugin_state)
            [reply] = await old.accept([msgspec.structs.replace(req, placement=placement)])
            assert reply.accepted
            await old.stop()  # gone before the binding fails; its ledger entry stays
            await first.start()
            first.frameworks["default-scheduler"].plugins.pre_bind.append(Refuses())
            await until(lambda: placement.placement_id in first._ended, what="the binding failed at b1")
            await first.stop()
            admin = await connect(server.url, name="admin", subjects=Subjects(PREFIX))
            try:  # the duplicate window passes: the stream forgets the placement's msg id
                await admin.js.delete_stream(admin.subjects.placement_stream)
            finally:
                await admin.close(drain=False)
            await new.start()
            await until(lambda: new.ready, timeout=15)
            assert uid in new.cache.assumed  # restored, published again
            await second.start()  # the restored placement's first delivery is b2's
            await until(
                lambda: placement.placement_id in second._ended or uid not in new.cache.assumed,
                timeout=15,
                what="the restored placement handled by b2",
            )
            await asyncio.sleep(0.5)
            assert (kube.get("Pod", "a", "default") or {})["spec"].get("nodeName") is None
            assert second._ended.get(placement.placement_id) == "failed"
            await until(lambda: uid not in new.cache.assumed, what="the restored assumption forgotten again")
            assert uid in new.cache.pending
        finally:
            await close(first, second)
            await new.stop()
