"""A local stack of processes: an embedded nats-server, kubesim (or a given kubeconfig), and the
informer, queue, scheduler and binder services, each a separate ``ksched`` process."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import aiohttp

from ksched.bus.cluster import EmbeddedCluster
from ksched.bus.embedded import EmbeddedNats


def _names(service: str, count: int) -> list[str]:
    """``informer`` for a single instance (as before), ``informer-0``, ``informer-1`` ... for several."""
    return [service] if count == 1 else [f"{service}-{i}" for i in range(count)]


def _die_with_parent(sig: int = signal.SIGTERM) -> None:
    """In the child before exec: get ``sig`` when the launcher dies, even by SIGKILL (Linux)."""
    try:
        import ctypes

        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, sig)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


UI_PORT = 10263
"""``ksched ui``'s port in ``ksched up`` and the demo (another free one when it is taken)."""


def free_port(preferred: int = 0) -> int:
    """``preferred`` if it is free on loopback, else (or when 0) any free port."""
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", preferred))
        except OSError:
            s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@dataclass
class Proc:
    """One service process of the stack."""

    name: str
    service: str
    args: list[str]
    http_port: int | None
    log_path: Path
    process: asyncio.subprocess.Process | None = None

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process is not None else None

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.returncode is None


@dataclass
class StackOptions:
    workdir: Path
    nodes: int = 0
    scenarios: Sequence[str] = ()
    kubeconfig: str | None = None
    """None: start kubesim; "": the in-cluster configuration (the services get no --kubeconfig)."""
    kubeconfigs: Mapping[str, str] = field(default_factory=dict)
    """A kubeconfig of its own per service (``informer``, ``queue``, ``scheduler``, ``binder``, ``ui``),
    e.g. a token of that service's ServiceAccount, as each Deployment of deploy/ runs under its own;
    a service not named gets ``kubeconfig``. Every replica of a service gets the same one."""
    config: str | None = None
    schedulers: int = 1
    binders: int = 1
    informers: int = 1
    """More than one: leader election picks the active one, the others stand by (docs/ha.md)."""
    queues: int = 1
    binder_workers: int = 32
    prefix: str = "ksched"
    pod_start_delay: float = 1.0
    time_scale: float = 1.0
    log_level: str = "INFO"
    kubesim_tls: bool = False
    """kubesim serves HTTPS with a self-signed certificate (its CA in the kubeconfig)."""
    log_format: str = "text"
    """``text`` or ``json`` (one JSON object per line, docs/metrics.md "Logs") for every service."""
    extra_env: dict[str, str] = field(default_factory=dict)
    repair_interval: str | None = None
    """The queues' ``--repair-interval`` (Go duration; None: the queue's default)."""
    queue_lease_duration: str | None = None
    """The queues' ``--lease-duration`` for popped pods (Go duration; None: the queue's default)."""
    feature_gates: str = ""
    """``--feature-gates`` of every service and kubesim (upstream's syntax; docs/gang.md)."""
    ui: bool = False
    """Also run ``ksched ui`` (process ``ui``; its page at :meth:`Stack.http_url`)."""
    ui_port: int = 0
    """The UI's port if free (0: any free port)."""
    service_args: Sequence[str] = ()
    """More flags for every service (informer, queue, scheduler, binder)."""
    nats_url: str | None = None
    """Use this NATS server instead of starting an embedded one."""
    nats_config: str | None = None
    """A nats-server configuration file for the single embedded server (users, permissions, TLS)."""
    nats_servers: int = 1
    """Embedded nats-servers: 1, or a JetStream cluster of that many (3 as deploy/ runs it): the
    services connect to all of them and keep their streams with min(3, n) replicas."""
    nats_monitoring: bool = False
    """Serve the embedded nats-server's monitoring endpoints (``/varz``, ``/connz``) on a free loopback
    port: :attr:`Stack.nats_monitor_url`."""
    singleton_election: bool = True
    """False: the informer and queue run with ``--no-leader-elect`` (the launcher itself is elected,
    as ``ksched kube-scheduler``)."""
    parent_death_signal: int = signal.SIGTERM
    """What the services get when the launcher dies, even by SIGKILL (``ksched kube-scheduler``: SIGKILL,
    so that nothing of a dead leader's pipeline outlives it)."""


class Stack:
    def __init__(self, options: StackOptions) -> None:
        self.options = options
        self.workdir = options.workdir
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.nats_monitor_port = free_port() if options.nats_monitoring else None
        self.cluster: EmbeddedCluster | None = None
        self._nats: EmbeddedNats | None = None
        if options.nats_servers > 1:
            if options.nats_config:
                raise ValueError("StackOptions.nats_config applies to a single nats-server only")
            self.cluster = EmbeddedCluster(
                options.nats_servers, self.workdir / "jetstream", monitor_port=self.nats_monitor_port
            )
        else:
            self._nats = self._single_nats()
        self.nats_url = options.nats_url
        self.kubeconfig = options.kubeconfig or str(self.workdir / "kubeconfig")
        self.procs: dict[str, Proc] = {}

    def _single_nats(self, port: int = 0) -> EmbeddedNats:
        return EmbeddedNats(
            port=port,
            store_dir=str(self.workdir / "jetstream"),
            config_file=self.options.nats_config,
            http_port=self.nats_monitor_port,
        )

    @property
    def nats(self) -> EmbeddedNats:
        """The embedded nats-server (the first of a cluster)."""
        if self.cluster is not None:
            return self.cluster.servers[0]
        assert self._nats is not None
        return self._nats

    @property
    def nats_urls(self) -> str:
        """What the services get as ``--nats``: every embedded server, comma-separated."""
        if self.nats_url:
            return self.nats_url
        return ",".join(self.cluster.urls) if self.cluster is not None else self.nats.url

    def _nats_pid(self, name: str) -> int | None:
        """``nats-server`` (the first server) or ``nats-server-<i>`` of a cluster."""
        index = int(name.rpartition("-")[2]) if name != "nats-server" else 0
        return self.cluster.pid(index) if self.cluster is not None else self.nats.pid

    # --- building ----------------------------------------------------------------------------------
    def _common(self, service: str = "") -> list[str]:
        args = ["--nats", self.nats_urls, "--subject-prefix", self.options.prefix]
        if self.cluster is not None and self.nats_url is None:
            args += ["--jetstream-replicas", str(min(3, self.cluster.size))]
        own_kubeconfig = self.options.kubeconfigs.get(service)
        if own_kubeconfig:
            args += ["--kubeconfig", own_kubeconfig]
        elif self.options.kubeconfig != "":
            args += ["--kubeconfig", self.kubeconfig]
        args += ["--log-level", self.options.log_level, "--log-format", self.options.log_format]
        if self.options.config:
            args += ["--config", self.options.config]
        if self.options.feature_gates:
            args += ["--feature-gates", self.options.feature_gates]
        return args

    def _service(self, name: str, service: str, extra: Sequence[str] = (), port: int = 0) -> Proc:
        port = free_port(port)
        own = self.options.service_args if service in ("informer", "queue", "scheduler", "binder") else ()
        args = [service, *self._common(service), "--http-port", str(port), "--id", name, *own, *extra]
        if not self.options.singleton_election and service in ("informer", "queue"):
            args.append("--no-leader-elect")
        proc = Proc(name, service, args, port, self.workdir / f"{name}.log")
        self.procs[name] = proc
        return proc

    def _replica(self, service: str, index: int) -> Proc:
        """Replica ``index`` of a replicated service (``scheduler-0``, ``binder-1``...)."""
        extra = ["--workers", str(self.options.binder_workers)] if service == "binder" else []
        return self._service(f"{service}-{index}", service, extra)

    async def _spawn(self, proc: Proc) -> None:
        env = dict(os.environ)
        env.update(self.options.extra_env)
        env.setdefault("PYTHONUNBUFFERED", "1")
        log = proc.log_path.open("ab")
        try:
            proc.process = await asyncio.create_subprocess_exec(
                sys.executable,
                "-m",
                "ksched.cli",
                *proc.args,
                stdout=log,
                stderr=log,
                stdin=asyncio.subprocess.DEVNULL,
                env=env,
                start_new_session=True,
                preexec_fn=self._preexec if sys.platform == "linux" else None,
            )
        finally:
            log.close()

    def _preexec(self) -> None:
        _die_with_parent(self.options.parent_death_signal)

    # --- lifecycle ---------------------------------------------------------------------------------
    async def start(self, timeout: float = 60.0) -> None:
        if self.nats_url is None:
            await (self.cluster.start() if self.cluster is not None else self.nats.start())
        if self.options.kubeconfig is None:
            await self._start_kubesim(timeout)
        for name in _names("informer", self.options.informers):
            self._service(name, "informer")
        queue_args = (
            ["--repair-interval", self.options.repair_interval] if self.options.repair_interval else []
        )
        if self.options.queue_lease_duration:
            queue_args += ["--lease-duration", self.options.queue_lease_duration]
        for name in _names("queue", self.options.queues):
            self._service(name, "queue", queue_args)
        for i in range(self.options.schedulers):
            self._replica("scheduler", i)
        for i in range(self.options.binders):
            self._replica("binder", i)
        if self.options.ui:
            self._service("ui", "ui", port=self.options.ui_port)
        for proc in self.procs.values():
            if proc.service != "kubesim":
                await self._spawn(proc)
        await self.wait_ready(timeout)

    async def _start_kubesim(self, timeout: float) -> None:
        kubeconfig = Path(self.kubeconfig)
        with contextlib.suppress(FileNotFoundError):
            kubeconfig.unlink()
        args = ["kubesim", "--listen", "127.0.0.1:0", "--write-kubeconfig", str(kubeconfig)]
        args += ["--nodes", str(self.options.nodes), "--pod-start-delay", str(self.options.pod_start_delay)]
        args += ["--time-scale", str(self.options.time_scale)]
        if self.options.kubesim_tls:
            args.append("--tls")
        for scenario in self.options.scenarios:
            args += ["--scenario", scenario]
        if self.options.feature_gates:
            args += ["--feature-gates", self.options.feature_gates]
        proc = Proc("kubesim", "kubesim", args, None, self.workdir / "kubesim.log")
        self.procs["kubesim"] = proc
        await self._spawn(proc)
        deadline = time.monotonic() + timeout
        while not kubeconfig.exists():
            if not proc.running:
                raise RuntimeError(f"kubesim exited; see {proc.log_path}:\n{self.log_tail('kubesim')}")
            if time.monotonic() > deadline:
                raise TimeoutError("kubesim did not start in time")
            await asyncio.sleep(0.05)

    async def wait_ready(self, timeout: float = 60.0, names: Sequence[str] | None = None) -> None:
        """Until every service answers /readyz with 200."""
        deadline = time.monotonic() + timeout
        pending = [p for p in self.procs.values() if p.http_port and (names is None or p.name in names)]
        answer = "no answer"
        async with aiohttp.ClientSession() as session:
            while pending:
                proc = pending[0]
                if not proc.running:
                    raise RuntimeError(
                        f"{proc.name} exited; see {proc.log_path}:\n{self.log_tail(proc.name)}"
                    )
                with contextlib.suppress(aiohttp.ClientError, asyncio.TimeoutError):
                    async with session.get(
                        f"http://127.0.0.1:{proc.http_port}/readyz", timeout=aiohttp.ClientTimeout(total=2)
                    ) as r:
                        if r.status == 200:
                            pending.pop(0)
                            answer = "no answer"
                            continue
                        answer = f"HTTP {r.status}: {(await r.text()).strip()}"
                if time.monotonic() > deadline:
                    raise TimeoutError(
                        f"{proc.name} not ready in {timeout:g} s (its /readyz: {answer}); "
                        f"see {proc.log_path}:\n{self.log_tail(proc.name)}\n{self._other_tails(proc.name)}"
                    )
                await asyncio.sleep(0.1)

    def _other_tails(self, name: str, lines: int = 10) -> str:
        """The last lines of every other process's log: a service waits on another (the queue on the
        informer's bootstrap), and the one to blame is often not the one that timed out."""
        return "\n".join(
            f"--- {other} ({'running' if proc.running else 'exited'}), {proc.log_path}:\n"
            f"{self.log_tail(other, lines)}"
            for other, proc in self.procs.items()
            if other != name
        )

    def log_tail(self, name: str, lines: int = 20) -> str:
        try:
            return "\n".join(self.procs[name].log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    async def kill(self, name: str, sig: int = signal.SIGKILL) -> None:
        proc = self.procs[name]
        if proc.process is not None and proc.running:
            with contextlib.suppress(ProcessLookupError):
                proc.process.send_signal(sig)
            await proc.process.wait()

    async def restart(self, name: str, timeout: float = 60.0) -> None:
        await self.kill(name, signal.SIGTERM)
        await self._spawn(self.procs[name])
        await self.wait_ready(timeout, [name])

    async def pause(self, name: str, seconds: float) -> None:
        """SIGSTOP ``name`` (a service, ``kubesim``, ``nats-server`` or a cluster's ``nats-server-<i>``)
        for ``seconds``, then SIGCONT: a process that hangs (a long GC, a throttled container, a VM
        stall) and comes back."""
        pid = self._nats_pid(name) if name.startswith("nats-server") else self.procs[name].pid
        if pid is None:
            raise RuntimeError(f"{name} is not running")
        os.kill(pid, signal.SIGSTOP)
        try:
            await asyncio.sleep(seconds)
        finally:
            os.kill(pid, signal.SIGCONT)

    async def restart_nats(self, sig: int = signal.SIGKILL, index: int = 0) -> None:
        """Stop nats-server (server ``index`` of a cluster) with ``sig`` and start a new one on the same
        port with the same JetStream store on disk (what a restarted pod of the StatefulSet sees)."""
        if self.cluster is not None:
            await self.cluster.restart(index, sig)
            return
        port, pid = self.nats.port, self.nats.pid
        if pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)
        await self.nats.stop()
        self._nats = self._single_nats(port)
        await self._nats.start()

    @property
    def nats_monitor_url(self) -> str | None:
        """The embedded nats-server's monitoring base URL (``StackOptions.nats_monitoring``)."""
        return f"http://127.0.0.1:{self.nats_monitor_port}" if self.nats_monitor_port else None

    def hang_up(self, name: str) -> None:
        """SIGHUP ``name``: kubesim restarts as an API server would (docs/kubesim.md)."""
        pid = self.procs[name].pid
        if pid is None:
            raise RuntimeError(f"{name} is not running")
        os.kill(pid, signal.SIGHUP)

    async def scale(self, service: str, count: int, timeout: float = 60.0) -> None:
        """Run ``count`` replicas of ``service`` (``scheduler`` or ``binder``), as a Deployment scaled
        by KEDA or an HPA would: surplus replicas get SIGTERM (newest first) and are awaited, new
        ones start under fresh names and are awaited until ready."""
        if service not in ("scheduler", "binder"):
            raise ValueError(f"{service}: only scheduler and binder replicas scale")
        mine = [p for p in self.procs.values() if p.service == service]
        running = [p for p in mine if p.running]
        for proc in reversed(running[count:]):
            await self._terminate(proc, timeout)
        started = [self._replica(service, len(mine) + i) for i in range(count - len(running))]
        for proc in started:
            await self._spawn(proc)
        await self.wait_ready(timeout, [p.name for p in started])

    def replicas(self, service: str) -> list[str]:
        """The names of ``service``'s running replicas."""
        return [p.name for p in self.procs.values() if p.service == service and p.running]

    async def _terminate(self, proc: Proc, timeout: float) -> None:
        """SIGTERM, as the kubelet does, then SIGKILL after ``timeout``."""
        if proc.process is None or not proc.running:
            return
        with contextlib.suppress(ProcessLookupError):
            proc.process.send_signal(signal.SIGTERM)
        try:
            await asyncio.wait_for(proc.process.wait(), timeout)
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                proc.process.kill()
            await proc.process.wait()

    async def stop(self, timeout: float = 10.0) -> None:
        """SIGTERM services in reverse start order (graceful), then kubesim and NATS; kill leftovers."""
        order = [p for p in reversed(list(self.procs.values())) if p.service != "kubesim"]
        order += [p for p in self.procs.values() if p.service == "kubesim"]
        for proc in order:
            if proc.running and proc.process is not None:
                with contextlib.suppress(ProcessLookupError):
                    proc.process.send_signal(signal.SIGTERM)
        for proc in order:
            if proc.process is None:
                continue
            try:
                await asyncio.wait_for(proc.process.wait(), timeout)
            except TimeoutError:
                with contextlib.suppress(ProcessLookupError):
                    proc.process.kill()
                await proc.process.wait()
        if self.nats_url is None:
            await (self.cluster.stop() if self.cluster is not None else self.nats.stop())

    def kill_all_now(self) -> None:
        """SIGKILL every service and the embedded nats-server at once, without waiting (a leader that
        lost its Lease stops acting this instant)."""
        pids = [p.pid for p in self.procs.values() if p.running]
        if self.nats_url is None:
            pids += self.cluster.pids() if self.cluster is not None else [self.nats.pid]
        for pid in pids:
            if pid is not None:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)

    def exited(self) -> list[str]:
        """The services that have exited (a pipeline missing one)."""
        return [p.name for p in self.procs.values() if p.process is not None and not p.running]

    async def restart_exited(self, timeout: float = 120.0) -> list[str]:
        """Start again every service that exited, as its kubelet would (a leader that lost its Lease
        exits with status 75 to come back as a standby); the names restarted."""
        names = self.exited()
        for name in names:
            await self.restart(name, timeout)
        return names

    def http_url(self, name: str) -> str:
        return f"http://127.0.0.1:{self.procs[name].http_port}"
