"""``ksched kube-scheduler``: a drop-in for kube-scheduler's binary (kubeadm's static pod).

One process tree runs the whole pipeline: an embedded nats-server (unless ``--nats``) and the
informer, queue, scheduler and binder services as child processes (:class:`ksched.launcher.stack.Stack`),
started only while this process holds kube-scheduler's Lease (``kube-system/kube-scheduler`` unless
the configuration or the flags name another). The children run without their own elections: the
whole process is the unit that is elected, as kube-scheduler is.

Losing the Lease stops the pipeline at once (SIGKILL to every child, before any standby may take
over: leaseDuration minus renewDeadline later at the earliest) and exits with status 1, as
kube-scheduler does ("leaderelection lost"). SIGTERM stops the children gracefully, then releases
the Lease and exits 0. The children die with this process even when it is killed with SIGKILL.

One port (``--bind-address``:``--secure-port``, 10259, HTTPS as kube-scheduler's, with its
authentication and authorization; a plain-HTTP loopback port too) serves /healthz, /livez and
/readyz for all of them: while leading, each child's /readyz (polled every second) and that every
child runs; as a standby, the election's own health (a standby is ready, as kube-scheduler's is).
Its /metrics is this process's registry and, while leading, every child's series merged
(:mod:`ksched.launcher.pipeline_metrics`), behind the same authentication and authorization.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import socket
import sys
import tempfile
import uuid
from collections.abc import Sequence
from pathlib import Path

import aiohttp
from prometheus_client import CollectorRegistry

from ksched.aio import cancel_and_wait
from ksched.apimachinery.duration import seconds
from ksched.client.config import api_client
from ksched.client.leader import ElectionConfig, ElectionThread
from ksched.config import ConfigError
from ksched.flags.upstream_flags import write_config
from ksched.launcher.dropin_options import DropInOptions, parse
from ksched.launcher.pipeline_metrics import Child, PipelineMetrics
from ksched.launcher.stack import Stack, StackOptions
from ksched.service.http import HealthServer
from ksched.service.logs import setup_logging

log = logging.getLogger(__name__)

LOST_LEASE_EXIT_CODE = 1
"""kube-scheduler's exit status when it loses its Lease."""
_POLL_SECONDS = 1.0


def service_args(options: DropInOptions) -> list[str]:
    """Flags of the drop-in every service of the pipeline gets as well."""
    master = [f"--master={options.master}"] if options.master else []
    return ["--secure-port=0", *master]  # the drop-in's own port is the one kubelet probes


def election_config(options: DropInOptions) -> ElectionConfig | None:
    """kube-scheduler's election (None with ``leaderElect: false``); identity ``<host>_<uuid>``."""
    le = options.config.leader_election
    if le.leader_elect is False:
        return None
    return ElectionConfig(
        name=le.resource_name or "kube-scheduler",
        namespace=le.resource_namespace or "kube-system",
        identity=f"{socket.gethostname()}_{uuid.uuid4()}",
        lease_duration=seconds(le.lease_duration) if le.lease_duration != "0s" else 15.0,
        renew_deadline=seconds(le.renew_deadline) if le.renew_deadline != "0s" else 10.0,
        retry_period=seconds(le.retry_period) if le.retry_period != "0s" else 2.0,
    )


class DropIn:
    """The elected pipeline and its one health port."""

    def __init__(self, options: DropInOptions, workdir: Path) -> None:
        self.options = options
        self.workdir = workdir
        self.kubeconfig = options.kubeconfig
        self.stack: Stack | None = None
        self.elector: ElectionThread | None = None
        self.children: dict[str, tuple[bool, str]] = {}
        self.metrics = PipelineMetrics(self._metric_children)
        registry = CollectorRegistry(auto_describe=False)
        registry.register(self.metrics)
        self.health = HealthServer(
            "127.0.0.1",
            options.http_port,
            registry=registry,
            secure=options.secure,
            component="kube-scheduler",
            config=options.config,
        )
        self.health.before_metrics = self.metrics.refresh
        self.health.live_checks["pipeline"] = self._live
        self.health.ready_checks["pipeline"] = self._ready
        self.lost = asyncio.Event()
        self.stopping = asyncio.Event()

    # --- health ------------------------------------------------------------------------------------
    def _live(self) -> tuple[bool, str]:
        stack = self.stack
        if stack is None:
            return True, "standby" if self.elector is not None else "starting"
        exited = stack.exited()
        return (not exited, f"exited: {', '.join(exited)}" if exited else "running")

    def _ready(self) -> tuple[bool, str]:
        if self.stack is None:
            if self.elector is None:
                return False, "starting"
            if self.elector.leader == self.elector.identity:  # won (or winning): not a standby
                return False, "leading: starting the pipeline"
            return self.elector.status()
        failing = [f"{name}: {detail}" for name, (ok, detail) in self.children.items() if not ok]
        if not self.children or failing:
            return False, "; ".join(failing) or "services not checked yet"
        return True, "every service ready"

    def _metric_children(self) -> list[Child]:
        """The running services whose /metrics the drop-in's /metrics merges."""
        stack = self.stack
        if stack is None:
            return []
        procs = stack.procs.values()
        return [Child(p.name, p.service, p.http_port) for p in procs if p.http_port and p.running]

    async def _poll_children(self, stack: Stack) -> None:
        timeout = aiohttp.ClientTimeout(total=2)
        async with aiohttp.ClientSession(timeout=timeout) as session:
            while True:
                for name, proc in stack.procs.items():
                    self.children[name] = await _readyz(session, proc.http_port)
                await asyncio.sleep(_POLL_SECONDS)

    # --- running -----------------------------------------------------------------------------------
    def _kill_now(self) -> None:
        """In the election thread, the moment the Lease is lost: stop acting this instant, before
        anyone may take over, however busy this process's loop is."""
        if not self.stopping.is_set() and self.stack is not None:
            self.stack.kill_all_now()

    def _on_stopped_leading(self) -> None:
        if not self.stopping.is_set():
            self.lost.set()

    async def run(self) -> int:
        await self.health.start()
        log.info("/livez and /readyz of the whole pipeline on http://127.0.0.1:%d", self.health.port)
        try:
            config = election_config(self.options)
            if config is None:
                return await self._lead()
            api = await api_client(self.kubeconfig, component="kube-scheduler", master=self.options.master)
            try:
                self.elector = ElectionThread(
                    api,
                    config,
                    on_stopped_leading=self._on_stopped_leading,
                    on_stopped_leading_now=self._kill_now,
                )
                election = self.elector.start()
                if not await _first(self.elector.wait_leader(), self.stopping.wait()):
                    await self.elector.stop()
                    return 0
                code = await self._lead()
                if code == LOST_LEASE_EXIT_CODE:
                    return code
                self.stopping.set()
                await self.elector.stop()
                with contextlib.suppress(asyncio.CancelledError):
                    await election
                return code
            finally:
                await api.close()
        finally:
            await self.health.stop()

    async def _lead(self) -> int:
        """Run the pipeline until SIGTERM (0), the Lease is lost (1) or a service exits (1)."""
        options = self.options
        stack = Stack(
            StackOptions(
                workdir=self.workdir,
                kubeconfig=self.kubeconfig or "",  # "": in-cluster
                config=options.config_file,
                schedulers=options.schedulers,
                binders=options.binders,
                prefix=options.subject_prefix,
                log_level=options.log_level,
                log_format=options.log_format,
                feature_gates=options.feature_gates,
                nats_url=options.nats,
                singleton_election=False,
                service_args=service_args(options),
                parent_death_signal=signal.SIGKILL,
            )
        )
        self.stack = stack
        poller: asyncio.Task[None] | None = None
        try:
            try:
                await stack.start()
            except (RuntimeError, TimeoutError) as exc:
                log.error("the pipeline did not start: %s", exc)
                return LOST_LEASE_EXIT_CODE
            log.info("leading: the pipeline runs (services %s)", ", ".join(stack.procs))
            poller = asyncio.create_task(self._poll_children(stack), name="dropin:poll-children")
            while not (self.stopping.is_set() or self.lost.is_set()):
                exited = stack.exited()
                if exited:
                    log.error("service(s) exited: %s\n%s", ", ".join(exited), stack.log_tail(exited[0]))
                    return LOST_LEASE_EXIT_CODE
                await _first(self.stopping.wait(), self.lost.wait(), asyncio.sleep(_POLL_SECONDS))
            if self.lost.is_set():
                log.error("leaderelection lost")
                return LOST_LEASE_EXIT_CODE
            return 0
        finally:
            if poller is not None:
                await cancel_and_wait(poller)
            if self.lost.is_set():
                stack.kill_all_now()
            await stack.stop()


async def _readyz(session: aiohttp.ClientSession, port: int | None) -> tuple[bool, str]:
    if port is None:
        return True, "no port"
    try:
        async with session.get(f"http://127.0.0.1:{port}/readyz") as r:
            if r.status == 200:
                return True, "ok"
            return False, f"HTTP {r.status}: {(await r.text()).strip().splitlines()[-1:]}"
    except (aiohttp.ClientError, TimeoutError) as exc:
        return False, f"{type(exc).__name__}: {exc}"


async def _first(*aws: object) -> bool:
    """Await the first of ``aws`` to finish, cancel the rest; True when it was the first one."""
    tasks = [asyncio.ensure_future(a) for a in aws]  # type: ignore[call-overload]
    try:
        done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        return tasks[0] in done
    finally:
        for t in tasks:
            with contextlib.suppress(Exception):
                await cancel_and_wait(t)


async def _main(options: DropInOptions, workdir: Path) -> int:
    dropin = DropIn(options, workdir)
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(sig, dropin.stopping.set)
    return await dropin.run()


def main(argv: Sequence[str]) -> int:
    try:
        options = parse(argv)
    except (ConfigError, ValueError) as exc:
        print(f"Error: {exc}", file=sys.stderr)
        return 1
    setup_logging("kube-scheduler", options.log_format, options.log_level)
    if options.write_config_to:
        write_config(options.config, options.write_config_to)
        log.info("wrote configuration to %s", options.write_config_to)
        return 0
    workdir = Path(options.workdir or tempfile.mkdtemp(prefix="ksched-kube-scheduler-"))
    workdir.mkdir(parents=True, exist_ok=True)
    log.info("ksched kube-scheduler pid %d, pipeline files in %s", os.getpid(), workdir)
    return asyncio.run(_main(options, workdir))
