"""A newcomer's first steps with a real kubectl: `ksched up`, the kubectl command it prints, `get nodes`,
then `kubectl apply` of one ordinary pod (client-side validation included) in a quiet cluster, which is
bound; a Deployment applied, changed, scaled and deleted with kubectl, its pods bound by ksched; and
`ksched up` starting again a service that exits, as a kubelet would. Skipped where no kubectl is
installed, failed then under ``KSCHED_REQUIRE_KUBECTL=1`` (CI): :mod:`tests.fixtures.kubectl`."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.fixtures.kubectl import kubectl_path

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("kubectl_exe")]

POD = """apiVersion: v1
kind: Pod
metadata:
  name: hello
spec:
  containers:
  - name: c
    image: registry.k8s.io/pause:3.10
    resources:
      requests:
        cpu: 100m
"""


@contextlib.asynccontextmanager
async def ksched_up(workdir: Path, env: dict[str, str] | None = None) -> AsyncIterator[KschedUp]:
    """``ksched up --nodes 3`` as a user runs it, once it printed all it prints at start."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "ksched.cli",
        "up",
        "--nodes",
        "3",
        "--workdir",
        str(workdir),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        start_new_session=True,
        env={**os.environ, **(env or {})},
    )
    up = KschedUp(proc)
    try:
        await up.wait_for("Ctrl-C stops everything", timeout=90)
        yield up
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGINT)
        async with asyncio.timeout(30):
            await proc.wait()


class KschedUp:
    """A running ``ksched up``: what it printed so far."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self.kubectl_command = ""
        self.pids: dict[str, int] = {}
        """Each service's pid as printed at start (``  queue        pid 1234  http://...``)."""

    async def next_line(self) -> str:
        assert self.proc.stdout is not None
        line = (await self.proc.stdout.readline()).decode()
        assert line, "ksched up exited"
        words = line.split()
        if line.strip().startswith("kubectl "):
            self.kubectl_command = line.split(None, 1)[1].strip()
        elif len(words) >= 3 and words[1] == "pid" and words[2].isdigit():
            self.pids[words[0]] = int(words[2])
        return line

    async def wait_for(self, text: str, timeout: float) -> str:
        """The next printed line containing ``text``."""
        async with asyncio.timeout(timeout):
            while text not in (line := await self.next_line()):
                pass
        return line

    @property
    def kubeconfig(self) -> str:
        return self.kubectl_command.split()[2]


async def kubectl(*args: str, stdin: str | None = None) -> str:
    proc = await asyncio.create_subprocess_exec(
        kubectl_path(),
        *args,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await proc.communicate(stdin.encode() if stdin is not None else None)
    assert proc.returncode == 0, f"kubectl {' '.join(args)}: {err.decode()}"
    return out.decode()


async def node_of_hello(kubeconfig: str) -> str:
    """Pod ``hello``'s node once it is bound ('' if not within 30 s)."""
    node = ""
    for _ in range(150):
        node = await kubectl(
            "--kubeconfig", kubeconfig, "get", "pod", "hello", "-o", "jsonpath={.spec.nodeName}"
        )
        if node:
            break
        await asyncio.sleep(0.2)
    return node


async def test_kubectl_works_on_the_stack_ksched_up_starts(tmp_path: Path) -> None:
    async with ksched_up(tmp_path) as up:
        printed = up.kubectl_command
        assert printed.startswith("kubectl --kubeconfig ") and printed.endswith(" get nodes")
        kubeconfig = up.kubeconfig
        nodes = await kubectl("--kubeconfig", kubeconfig, "get", "nodes", "-o", "name")
        assert len(nodes.split()) == 3
        assert "pod/hello created" in await kubectl("--kubeconfig", kubeconfig, "apply", "-f", "-", stdin=POD)
        assert (await node_of_hello(kubeconfig)).startswith("node-"), "the pod was not bound"


DEPLOYMENT = """apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 3
  selector:
    matchLabels:
      app: web
  template:
    metadata:
      labels:
        app: web
    spec:
      containers:
      - name: c
        image: registry.k8s.io/pause:3.10
        resources:
          requests:
            cpu: 100m
"""


async def web_pods(kubeconfig: str) -> list[tuple[str, str]]:
    """(name, node) of the Deployment's pods that are not being deleted."""
    out = await kubectl(
        "--kubeconfig",
        kubeconfig,
        "get",
        "pods",
        "-l",
        "app=web",
        "-o",
        "jsonpath={range .items[*]}{.metadata.name} {.spec.nodeName} "
        "{.metadata.deletionTimestamp}{'\\n'}{end}",
    )
    rows = [line.split(" ") for line in out.splitlines() if line.strip()]
    return [(row[0], row[1]) for row in rows if len(row) < 3 or not row[2]]


async def until_web_pods(kubeconfig: str, count: int) -> list[tuple[str, str]]:
    """The Deployment's ``count`` pods once they are all bound (AssertionError after 60 s)."""
    found: list[tuple[str, str]] = []
    for _ in range(300):
        found = await web_pods(kubeconfig)
        if len(found) == count and all(node for _, node in found):
            return found
        await asyncio.sleep(0.2)
    raise AssertionError(f"expected {count} bound pods of deployment web, found {found}")


async def test_a_deployment_applied_with_kubectl_is_scheduled(tmp_path: Path) -> None:
    """The first thing a newcomer applies: its ReplicaSet and pods are made by kubesim's controllers,
    the pods bound by ksched; changed with `apply` (a strategic-merge patch), scaled, deleted."""
    async with ksched_up(tmp_path) as up:
        kc = up.kubeconfig
        assert "deployment.apps/web created" in await kubectl(
            "--kubeconfig", kc, "apply", "-f", "-", stdin=DEPLOYMENT
        )
        pods = await until_web_pods(kc, 3)
        assert all(node.startswith("node-") for _, node in pods)
        rs = (await kubectl("--kubeconfig", kc, "get", "rs", "-l", "app=web", "-o", "name")).split()
        assert len(rs) == 1 and rs[0].startswith("replicaset.apps/web-")
        assert all(name.startswith(rs[0].split("/")[1] + "-") for name, _ in pods)
        rollout = await kubectl("--kubeconfig", kc, "rollout", "status", "deployment/web", "--timeout=60s")
        assert "successfully rolled out" in rollout
        applied = await kubectl(
            "--kubeconfig", kc, "apply", "-f", "-", stdin=DEPLOYMENT.replace("replicas: 3", "replicas: 4")
        )
        assert "deployment.apps/web configured" in applied
        await until_web_pods(kc, 4)
        assert "deployment.apps/web scaled" in await kubectl(
            "--kubeconfig", kc, "scale", "deployment/web", "--replicas=2"
        )
        await until_web_pods(kc, 2)
        listing = await kubectl("--kubeconfig", kc, "get", "deploy,rs,pods")
        assert "deployment.apps/web" in listing and "2/2" in listing
        assert 'deployment.apps "web" deleted' in await kubectl(
            "--kubeconfig", kc, "delete", "deployment", "web"
        )
        for _ in range(150):
            if not (await kubectl("--kubeconfig", kc, "get", "rs", "-o", "name")).strip():
                break
            await asyncio.sleep(0.2)
        else:
            raise AssertionError("the ReplicaSet was not deleted with its Deployment")
        assert await web_pods(kc) == [], "the pods are not being deleted"


ELECTION = {
    "KSCHED_LEADER_ELECT_LEASE_DURATION": "3s",
    "KSCHED_LEADER_ELECT_RENEW_DEADLINE": "2s",
    "KSCHED_LEADER_ELECT_RETRY_PERIOD": "1s",
}


async def test_ksched_up_starts_again_a_service_that_exits(tmp_path: Path) -> None:
    """As a kubelet would: the queue killed, started again, and a pod created after is bound."""
    async with ksched_up(tmp_path, env=ELECTION) as up:
        os.kill(up.pids["queue"], signal.SIGKILL)
        assert "status -9" in await up.wait_for("queue exited", timeout=30)
        await up.wait_for("queue is up again", timeout=60)
        assert "pod/hello created" in await kubectl(
            "--kubeconfig", up.kubeconfig, "apply", "-f", "-", stdin=POD
        )
        node = await node_of_hello(up.kubeconfig)
        assert node.startswith("node-"), "the pod was not bound after the queue was started again"
