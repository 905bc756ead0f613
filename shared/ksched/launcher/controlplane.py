"""A real Kubernetes control plane on loopback, from a folder laid out as ``../shared/kube-1.36``
(its ``cluster.sh up DIR [--with controller-manager,scheduler]`` runs etcd, kube-apiserver and, on
request, kube-controller-manager and kube-scheduler v1.36.2 on free ports).

Tests start one per session (``tests/fixtures/kube136.py``); ``ksched bench compare --kube PATH``
starts a fresh one for each side. Nothing here is needed at run time: ksched itself only ever gets
a kubeconfig.
"""

from __future__ import annotations

import os
import shlex
import subprocess
from dataclasses import dataclass, field
from pathlib import Path


class ControlPlaneError(RuntimeError):
    """``cluster.sh`` failed; the message carries its last lines of output."""


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

    def down(self) -> None:
        """Stop what ``up`` started (idempotent)."""
        if self.script.is_file():
            subprocess.run(
                ["bash", str(self.script), "down", str(self.dir)],
                capture_output=True,
                timeout=60,
                check=False,
            )


def read_env(path: Path) -> dict[str, str]:
    """``KEY=VALUE`` lines of cluster.sh's ``DIR/env``."""
    pairs = (line.split("=", 1) for line in path.read_text().splitlines() if "=" in line)
    return {key.strip(): value.strip() for key, value in pairs}
