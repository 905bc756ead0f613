"""A real Kubernetes control plane on loopback, from a folder laid out as ``../shared/kube-1.36``
(its ``cluster.sh up DIR [--with controller-manager,scheduler]`` runs etcd, kube-apiserver and, on
request, kube-controller-manager and kube-scheduler v1.36.2 on free ports).

Tests start one per session (``tests/fixtures/kube136.py``); ``ksched bench compare --kube PATH``
starts a fresh one for each side. Nothing here is needed at run time: ksched itself only ever gets
a kubeconfig.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shlex
import signal
import socket
import ssl
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

GANG_GATES = "GenericWorkload=true,GangScheduling=true"
"""The alpha gates of workload-aware (gang) scheduling, on the API server and the schedulers."""
GANG_APISERVER_ARGS = f"--feature-gates={GANG_GATES} --runtime-config=scheduling.k8s.io/v1alpha2=true"
"""kube-apiserver flags that serve scheduling.k8s.io/v1alpha2 PodGroups and Workloads."""


class ControlPlaneError(RuntimeError):
    """``cluster.sh`` failed; the message carries its last lines of output."""


@contextlib.contextmanager
def unpacking(kube: Path, env: dict[str, str]) -> Iterator[None]:
    """Around a ``cluster.sh up``: while its binaries are not unpacked yet, one start at a time.

    ``cluster.sh`` unpacks them on first use into ``$KUBE136_CACHE/<content id>`` through a
    ``.tmp`` folder of the same name for every caller, so starts at once on a fresh machine (test
    workers, differential runs side by side) unpack into each other's folder and fail (``mv: cannot
    stat …tmp``, a checksum that does not match). The first start holds a lock on the cache while the
    others wait; they then find the binaries and skip the unpacking. Once unpacked, no lock."""
    cache = Path(env.get("KUBE136_CACHE") or Path.home() / ".cache" / "kube-1.36")
    found = subprocess.run(  # the content id as cluster.sh computes it (its glob, its locale)
        ["bash", "-c", 'cat "$1"/bin/*.sha256 | sha256sum | cut -c1-12', "-", str(kube)],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if os.access(cache / found.stdout.strip() / "kube-apiserver", os.X_OK):
        yield
        return
    cache.mkdir(parents=True, exist_ok=True)
    with (cache / ".unpack.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


@dataclass
class ControlPlane:
    """One cluster under ``dir``, started by ``<kube>/cluster.sh``.

    ``parts`` are the optional parts (``controller-manager``, ``scheduler``); ``*_args`` are extra
    flags of each part (the ``KUBE136_*_ARGS`` of cluster.sh)."""

    kube: Path
    dir: Path
    parts: tuple[str, ...] = ()
    apiserver_args: str = ""
    controller_manager_args: str = ""
    scheduler_args: str = ""
    env: dict[str, str] = field(default_factory=dict)
    """``DIR/env`` once up: ``KUBE136_APISERVER``, ``KUBE136_SCHEDULER_PORT``, ``KUBE136_BIN`` …"""
    restarted: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    """Parts started again by :meth:`restart` (children of this process)."""

    @property
    def script(self) -> Path:
        return self.kube / "cluster.sh"

    @property
    def admin_kubeconfig(self) -> Path:
        """``system:masters``: for tests, setup and kubectl."""
        return self.dir / "admin.kubeconfig"

    @property
    def scheduler_kubeconfig(self) -> Path:
        """The user ``system:kube-scheduler``: kubeadm's ``scheduler.conf``, nothing more."""
        return self.dir / "scheduler.kubeconfig"

    @property
    def server(self) -> str:
        return self.env["KUBE136_APISERVER"]

    @property
    def ca_file(self) -> Path:
        return self.dir / "pki" / "ca.crt"

    def pid(self, part: str) -> int | None:
        """The pid of a running part (``apiserver``, ``scheduler`` …), None when not started."""
        path = self.dir / f"{part}.pid"
        try:
            return int(path.read_text().strip())
        except (FileNotFoundError, ValueError):
            return None

    def log(self, part: str) -> Path:
        return self.dir / f"{part}.log"

    def up(self, timeout: float = 240.0) -> ControlPlane:
        """Start a fresh cluster (blocking, 5-15 s); raises :class:`ControlPlaneError`."""
        if not self.script.is_file():
            raise ControlPlaneError(f"{self.script}: no such file (a folder laid out as ../shared/kube-1.36)")
        env = {
            **os.environ,
            "KUBE136_APISERVER_ARGS": self.apiserver_args,
            "KUBE136_CONTROLLER_MANAGER_ARGS": self.controller_manager_args,
            "KUBE136_SCHEDULER_ARGS": self.scheduler_args,
        }
        command = ["bash", str(self.script), "up", str(self.dir)]
        if self.parts:
            command += ["--with", ",".join(self.parts)]
        self.dir.mkdir(parents=True, exist_ok=True)
        try:
            with unpacking(self.kube, env):
                done = subprocess.run(
                    command, env=env, capture_output=True, text=True, timeout=timeout, check=False
                )
        except subprocess.TimeoutExpired as exc:
            self.down()
            raise ControlPlaneError(f"{shlex.join(command)}: not up in {timeout:.0f} s") from exc
        if done.returncode != 0:
            tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-20:])
            raise ControlPlaneError(f"{shlex.join(command)} exited {done.returncode}:\n{tail}")
        self.env = read_env(self.dir / "env")
        return self

    def restart(self, part: str = "apiserver", downtime: float = 0.0, timeout: float = 120.0) -> None:
        """kill -9 ``part`` and start it again after ``downtime`` seconds with the same command line
        (ports, flags, certificates, the same etcd), as a kubelet restarts a crashed static pod; for
        the API server, wait until it answers /readyz (blocking). Every connection and watch to it
        is gone meanwhile."""
        pid = self.pid(part)
        if pid is None:
            raise ControlPlaneError(f"{part} is not running")
        argv = [a.decode() for a in Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0") if a]
        os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + 30
        while _alive(pid) and time.monotonic() < deadline:
            if (old := self.restarted.get(part)) is not None:
                old.poll()
            time.sleep(0.001)
        with _held_port(_secure_port(argv)):
            time.sleep(downtime)
            with self.log(part).open("ab") as log:
                proc = subprocess.Popen(
                    argv, stdout=log, stderr=log, stdin=subprocess.DEVNULL, start_new_session=True
                )
            self.restarted[part] = proc
            (self.dir / f"{part}.pid").write_text(f"{proc.pid}\n")
            if part == "apiserver":
                self.wait_ready(timeout)

    def pause(self, part: str) -> None:
        """SIGSTOP ``part`` (a hung process: every request to it hangs, nothing is refused)."""
        pid = self.pid(part)
        if pid is None:
            raise ControlPlaneError(f"{part} is not running")
        os.kill(pid, signal.SIGSTOP)

    def resume(self, part: str) -> None:
        pid = self.pid(part)
        if pid is not None:
            os.kill(pid, signal.SIGCONT)

    def ssl_context(self) -> ssl.SSLContext:
        """TLS to the API server as the admin (system:masters)."""
        context = ssl.create_default_context(cafile=str(self.ca_file))
        pki = self.dir / "pki"
        context.load_cert_chain(str(pki / "admin.crt"), str(pki / "admin.key"))
        return context

    def get(self, path: str, timeout: float = 5.0) -> tuple[int, bytes]:
        """GET ``path`` from the API server as the admin: (status, body); status 0 without an answer."""
        return self._send(urllib.request.Request(self.server + path), timeout)

    def post(self, path: str, body: object, timeout: float = 5.0) -> tuple[int, bytes]:
        """POST ``body`` (JSON) to ``path`` as the admin: (status, body); status 0 without an answer."""
        request = urllib.request.Request(
            self.server + path,
            data=json.dumps(body).encode(),
            headers={"Content-Type": "application/json"},
            method="POST",
        )
        return self._send(request, timeout)

    def _send(self, request: urllib.request.Request, timeout: float) -> tuple[int, bytes]:
        try:
            with urllib.request.urlopen(request, timeout=timeout, context=self.ssl_context()) as r:
                return r.status, r.read()
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read()
        except (OSError, ValueError):
            return 0, b""

    def wait_ready(self, timeout: float = 120.0) -> None:
        deadline = time.monotonic() + timeout
        while self.get("/readyz", timeout=2.0)[0] != 200:
            if time.monotonic() > deadline:
                log = self.log("apiserver")
                raise ControlPlaneError(f"kube-apiserver not ready in {timeout:.0f} s; see {log}")
            time.sleep(0.1)

    def compact(self) -> int:
        """Compact etcd at its current revision through etcd's own API (physical: the old revisions
        are gone): a watch or a list continued from an older resourceVersion meets 410 Gone once the
        API server's watch cache no longer holds it. Returns the revision."""
        etcd = self.env["KUBE136_ETCD"]
        revision = int(_post(etcd + "/v3/kv/range", {"key": "AA==", "limit": 1})["header"]["revision"])
        _post(etcd + "/v3/kv/compaction", {"revision": revision, "physical": True})
        return revision

    def down(self) -> None:
        """Stop what ``up`` started (idempotent)."""
        for proc in self.restarted.values():
            if proc.poll() is None:
                with _suppress():
                    os.kill(proc.pid, signal.SIGCONT)
        if self.script.is_file():
            subprocess.run(
                ["bash", str(self.script), "down", str(self.dir)],
                capture_output=True,
                timeout=60,
                check=False,
            )
        for proc in self.restarted.values():
            with _suppress():
                proc.wait(timeout=10)


def _suppress() -> contextlib.AbstractContextManager[None]:
    return contextlib.suppress(OSError, subprocess.TimeoutExpired)


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie waiting for its parent counts as gone)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def _post(url: str, body: object) -> dict[str, Any]:
    request = urllib.request.Request(
        url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}, method="POST"
    )
    with urllib.request.urlopen(request, timeout=30) as r:
        answer: dict[str, Any] = json.loads(r.read())
        return answer


def read_env(path: Path) -> dict[str, str]:
    """``KEY=VALUE`` lines of cluster.sh's ``DIR/env``."""
    pairs = (line.split("=", 1) for line in path.read_text().splitlines() if "=" in line)
    return {key.strip(): value.strip() for key, value in pairs}


def _secure_port(argv: list[str]) -> int | None:
    """The ``--secure-port`` of a command line (kube-apiserver's), if any."""
    for arg in argv:
        if arg.startswith("--secure-port="):
            return int(arg.partition("=")[2])
    return None


@contextlib.contextmanager
def _held_port(port: int | None) -> Any:
    """Keep loopback ``port`` bound (SO_REUSEADDR, never listening) while a killed server is down:
    the port is in the kernel's ephemeral range (``cluster.sh`` takes what the kernel gives), and a
    connection made meanwhile by any process could take it as its local port, so that the restarted
    server cannot bind it ("address already in use"). Its own listener (SO_REUSEADDR too, as Go's)
    binds beside this socket, which is closed once the server is up."""
    if port is None:
        yield
        return
    held = socket.socket()
    held.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    deadline = time.monotonic() + 5
    while True:
        try:
            held.bind(("127.0.0.1", port))
            break
        except OSError:
            if time.monotonic() > deadline:  # taken for good: the restart will say so
                held.close()
                yield
                return
            time.sleep(0.001)
    try:
        yield
    finally:
        held.close()
