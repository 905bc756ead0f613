"""``ksched kube-scheduler`` as kubeadm runs kube-scheduler: its exact command line (paths replaced by the
test's kubeconfig, a free port for 10259) against kubesim, probed on /livez and /readyz as kubeadm's
static pod probes it. One process schedules pods; of three, one leads the kube-scheduler Lease and runs
the pipeline, and after a kill -9 of it another takes over within the lease timings (15s/10s/2s) and
every pod ends bound exactly once."""

from __future__ import annotations

import asyncio
import contextlib
import re
import signal
import sys
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import aiohttp
import pytest
from kubernetes_asyncio import client
from kubernetes_asyncio.client import ApiClient

from ksched.launcher.stack import free_port
from tests.e2e.testing import (
    all_bound,
    assert_bound_once,
    bound_count,
    create_pods,
    create_pool,
    eventually,
    kube_api,
    pool_pods,
)

pytestmark = pytest.mark.e2e

LEASE_DURATION = 15.0
RETRY_PERIOD = 2.0


def kubeadm_command_line(kubeconfig: str, port: int) -> list[str]:
    """kubeadm's kube-scheduler static pod command (v1.36), its paths replaced, a test port."""
    return [
        f"--authentication-kubeconfig={kubeconfig}",
        f"--authorization-kubeconfig={kubeconfig}",
        "--bind-address=127.0.0.1",
        f"--kubeconfig={kubeconfig}",
        "--leader-elect=true",
        f"--secure-port={port}",
    ]


@dataclass
class DropIn:
    """One ``ksched kube-scheduler`` process."""

    name: str
    port: int
    workdir: Path
    log: Path
    process: asyncio.subprocess.Process

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    def identity(self) -> str:
        found = re.search(r"leader election: (\S+) campaigning", self.log.read_text(errors="replace"))
        return found.group(1) if found else ""

    def runs_pipeline(self) -> bool:
        """Whether it ever started the services (their logs exist only then)."""
        return (self.workdir / "informer.log").exists()


async def start(tmp: Path, name: str, kubeconfig: str, *extra: str) -> DropIn:
    """kubeadm's command line (with ``extra`` flags after it), its log ``tmp/<name>.log``."""
    port = free_port()
    workdir = tmp / name
    workdir.mkdir()
    log = tmp / f"{name}.log"
    with log.open("ab") as out:
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "ksched.cli",
            "kube-scheduler",
            *kubeadm_command_line(kubeconfig, port),
            f"--workdir={workdir}",
            *extra,
            stdout=out,
            stderr=out,
            stdin=asyncio.subprocess.DEVNULL,
            start_new_session=True,
        )
    return DropIn(name, port, workdir, log, process)


async def stop(d: DropIn) -> None:
    if d.process.returncode is None:
        with contextlib.suppress(ProcessLookupError):
            d.process.send_signal(signal.SIGTERM)
        try:
            await asyncio.wait_for(d.process.wait(), 20)
        except TimeoutError:
            d.process.kill()
            await d.process.wait()


async def probe(d: DropIn, path: str) -> int:
    """kubeadm's probe: HTTPS GET ``path`` on the secure port, the certificate not verified (as kubelet
    probes); the HTTP status (0: no answer)."""
    try:
        async with (
            aiohttp.ClientSession() as http,
            http.get(f"{d.url}{path}", timeout=aiohttp.ClientTimeout(total=2), ssl=False) as r,
        ):
            return r.status
    except (aiohttp.ClientError, TimeoutError):
        return 0


@contextlib.asynccontextmanager
async def kubesim(tmp: Path) -> AsyncIterator[str]:
    """A kubesim process (no nodes); yields its kubeconfig."""
    kubeconfig = tmp / "kubeconfig"
    with (tmp / "kubesim.log").open("ab") as out:
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "ksched.cli",
            "kubesim",
            "--listen",
            "127.0.0.1:0",
            "--write-kubeconfig",
            str(kubeconfig),
            "--nodes",
            "0",
            "--pod-start-delay",
            "3600",
            stdout=out,
            stderr=out,
            stdin=asyncio.subprocess.DEVNULL,
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + 60
        while not kubeconfig.exists():
            assert process.returncode is None, (tmp / "kubesim.log").read_text()
            assert time.monotonic() < deadline, "kubesim did not start"
            await asyncio.sleep(0.05)
        yield str(kubeconfig)
    finally:
        process.send_signal(signal.SIGTERM)
        await process.wait()


async def lease_holder(api: ApiClient) -> str:
    """The holder of kube-scheduler's Lease ('' when none, or no Lease yet)."""
    try:
        lease = await client.CoordinationV1Api(api).read_namespaced_lease("kube-scheduler", "kube-system")
    except client.ApiException as exc:
        if exc.status == 404:
            return ""
        raise
    return str(lease.spec.holder_identity or "")


async def test_kubeadm_command_line_schedules_pods_and_passes_the_probes(tmp_path: Path) -> None:
    async with kubesim(tmp_path) as kubeconfig, kube_api(kubeconfig) as api:
        d = await start(tmp_path, "kube-scheduler", kubeconfig)
        try:

            async def probes_pass() -> bool:
                assert d.process.returncode is None, d.log.read_text()
                return await probe(d, "/livez") == 200 and await probe(d, "/readyz") == 200

            await eventually(probes_pass, timeout=90)
            assert d.runs_pipeline()
            assert await probe(d, "/metrics") == 403  # kube-scheduler's secure port: anonymous may not
            assert await lease_holder(api) == d.identity() != ""
            ns = "dropin"
            await create_pool(api, ns, 3)
            await create_pods(api, pool_pods(ns, 30))
            placed = await eventually(lambda: all_bound(api, ns, 30), timeout=90)
            assert set(placed.values()) <= {f"{ns}-{i}" for i in range(3)}
            await assert_bound_once(api, ns)
        finally:
            await stop(d)
        assert d.process.returncode == 0, d.log.read_text()
        assert await lease_holder(api) == ""  # released on SIGTERM, as kube-scheduler's ReleaseOnCancel


async def test_three_processes_one_leads_and_kill_9_hands_over(tmp_path: Path) -> None:
    async with kubesim(tmp_path) as kubeconfig, kube_api(kubeconfig) as api:
        procs = [await start(tmp_path, f"ks-{i}", kubeconfig) for i in range(3)]
        try:
            await _handover(api, procs)
        finally:
            for d in procs:
                await stop(d)


async def _handover(api: ApiClient, procs: list[DropIn]) -> None:
    async def one_leader_ready() -> DropIn | None:
        for d in procs:
            assert d.process.returncode is None, d.log.read_text()
        holder = await lease_holder(api)
        leaders = [d for d in procs if d.identity() and d.identity() == holder]
        if leaders and all([await probe(d, "/readyz") == 200 for d in procs]):
            return leaders[0]
        return None

    leader = await eventually(one_leader_ready, timeout=120, interval=0.5)
    standbys = [d for d in procs if d is not leader]
    assert [d.runs_pipeline() for d in standbys] == [False, False], "a standby started the pipeline"
    for d in procs:
        assert await probe(d, "/livez") == 200, d.name

    ns = "handover"
    await create_pool(api, ns, 5)
    all_pods = pool_pods(ns, 200)
    await create_pods(api, all_pods[:100])

    async def some_bound() -> bool:
        return await bound_count(api, ns) >= 10

    await eventually(some_bound, timeout=90, interval=0.1)
    killed_at = time.monotonic()
    leader.process.kill()
    await leader.process.wait()
    creating = asyncio.create_task(create_pods(api, all_pods[100:]))

    async def new_leader() -> DropIn | None:
        holder = await lease_holder(api)
        return next((d for d in standbys if d.identity() == holder), None)

    successor = await eventually(new_leader, timeout=2 * LEASE_DURATION, interval=0.1)
    took = time.monotonic() - killed_at
    print(f"\nkill -9 of the leader -> {successor.name} holds the Lease after {took:.1f} s")
    assert LEASE_DURATION - RETRY_PERIOD - 0.5 <= took <= LEASE_DURATION + RETRY_PERIOD + 1, took
    await creating
    placed = await eventually(lambda: all_bound(api, ns, 200), timeout=120)
    print(f"all 200 pods bound {time.monotonic() - killed_at:.1f} s after the kill")
    assert set(placed) == {p["metadata"]["name"] for p in all_pods}
    await assert_bound_once(api, ns)
    other = next(d for d in standbys if d is not successor)
    assert not other.runs_pipeline(), "two processes ran the pipeline"
    assert other.process.returncode is None and await probe(other, "/readyz") == 200
