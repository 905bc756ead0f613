"""An accepted placement whose publish to the binders times out may be stored all the same: a
nats-server paused (SIGSTOP) past the informer's publish timeout reads the publish from its socket
when it resumes, and a binder binds it. The informer must keep the pod assumed on its node, or a
later placement that the first one rules out is accepted too and both are bound (the hard
constraints the chaos run found broken: ``ksched bench chaos``, pause-nats-server). Likewise a gang's
commit record whose put timed out: the server stores it on resuming, and a successor informer would
restore and publish the members, so the members must stay assumed and be published."""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path
from typing import Any, cast

from ksched_informer.service import InformerService
from ksched_kubesim import KubeSim

from ksched.bus import endpoints
from ksched.bus.connect import connect
from ksched.bus.embedded import EmbeddedNats
from ksched.bus.jetstream import TypedKV
from ksched.bus.messages import AssumeGroupRequest, GangCommit, Placement
from ksched.bus.streams import GANG_COMMITS
from ksched.bus.subjects import Subjects
from ksched.config import default_config
from tests.fixtures.kubesim import fast_config
from tests.informer.conftest import informer_options
from tests.informer.test_group_commit import GATES, gang, placement, start_informer
from tests.informer.test_service import assume_request, node, pod
from tests.polling import until

HOST = "kubernetes.io/hostname"


async def test_a_placement_whose_publish_timed_out_keeps_its_node(tmp_path: Path) -> None:
    term = {"labelSelector": {"matchLabels": {"app": "x"}}, "topologyKey": HOST}
    anti = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}
    async with KubeSim(fast_config()) as kube, EmbeddedNats() as server:
        kubeconfig = kube.write_kubeconfig(tmp_path / "kubeconfig")
        options = informer_options(server.url, kubeconfig, "frozen", "informer-frozen")
        informer = InformerService(options, default_config())
        await informer.start()
        scheduler = await connect(server.url, name="scheduler", subjects=Subjects("frozen"))
        try:
            await until(lambda: informer.ready)
            kube.create(node("n1"))
            a = kube.create(pod("a", affinity=anti))
            b = kube.create(pod("b", labels={"app": "x"}))
            await until(lambda: len(informer.cache.pending) == 2 and len(informer.cache.snapshot.nodes) == 1)
            uid = a["metadata"]["uid"]
            decided = informer.cache.generation  # both replicas decide on this snapshot
            pid = server.pid
            assert pid is not None
            os.kill(pid, signal.SIGSTOP)  # what the informer sends now waits in the server's socket
            try:
                # the assume as the bus handler makes it (its request could not reach a stopped server)
                sent = asyncio.create_task(informer.accept([assume_request(a, "n1", informer, decided)]))
                await until(lambda: uid in informer.cache.assumed)
                await asyncio.sleep(6.0)  # past the publish's 5 s ack timeout
            finally:
                os.kill(pid, signal.SIGCONT)
            await asyncio.wait_for(sent, 20)

            # The server stored the placement it read on resuming: a binder would bind a to n1.
            async def stored() -> int:
                info = await scheduler.js.stream_info(scheduler.subjects.placement_stream)
                return info.state.messages

            await until(stored, timeout=15)
            second = await scheduler.request(
                endpoints.ASSUME,
                assume_request(b, "n1", informer, decided, "s2"),
                timeout=10,
            )
            assert (second.accepted, second.code) == (False, "DoesNotFit"), second
            assert await stored() == 1
            assert informer.cache.assumed[uid].node == "n1"
        finally:
            await scheduler.close(drain=False)
            await informer.stop()


async def test_a_group_commit_whose_record_put_timed_out_is_kept(tmp_path: Path) -> None:
    async with KubeSim(fast_config(feature_gates=GATES)) as kube, EmbeddedNats() as server:
        kubeconfig = kube.write_kubeconfig(tmp_path / "kubeconfig")
        informer = await start_informer(kubeconfig, server.url, "gangrec", "informer-gangrec")
        scheduler = await connect(server.url, name="scheduler", subjects=Subjects("gangrec"))
        try:
            pods = await gang(kube, informer, cpu="4", size=2)
            pid = server.pid
            assert pid is not None
            put_each = informer.ledger.put_each

            async def entries_then_pause(placements: list[Placement]) -> None:
                await put_each(placements)  # the members' entries are stored; the record is next
                os.kill(pid, signal.SIGSTOP)

            informer.ledger.put_each = entries_then_pause  # type: ignore[method-assign]
            req = AssumeGroupRequest(
                group="default/train",
                commit_id="c-1",
                placements=[placement(informer, p, "n1") for p in pods],
            )
            try:
                sent = asyncio.create_task(informer.on_assume_group(req, cast(Any, None)))
                await asyncio.sleep(6.0)  # past the record put's 5 s ack timeout
            finally:
                os.kill(pid, signal.SIGCONT)
            reply = await asyncio.wait_for(sent, 20)
            commits = await TypedKV.open(scheduler, GANG_COMMITS, GangCommit)
            assert await commits.get("c-1") is not None  # stored when the server resumed
            assert reply.accepted, reply
            assert {p["metadata"]["uid"] for p in pods} <= set(informer.cache.assumed)

            async def published() -> bool:
                info = await scheduler.js.stream_info(scheduler.subjects.placement_stream)
                return info.state.messages == 2

            await until(published, timeout=15)
        finally:
            await scheduler.close(drain=False)
            await informer.stop()
