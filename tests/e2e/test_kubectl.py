"""A newcomer's first steps with a real kubectl: `ksched up`, the kubectl command it prints, `get nodes`,
then `kubectl apply` of one ordinary pod (client-side validation included) in a quiet cluster, which is
bound. Skipped where no kubectl is installed."""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed"),
]

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
async def ksched_up(workdir: Path) -> AsyncIterator[str]:
    """``ksched up --nodes 3`` as a user runs it; yields the kubectl command line it prints."""
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
    )
    assert proc.stdout is not None
    try:
        command = ""
        async with asyncio.timeout(90):
            while not command:
                line = (await proc.stdout.readline()).decode()
                assert line, "ksched up exited before it was up"
                if line.strip().startswith("kubectl "):
                    command = line.split(None, 1)[1].strip()
        yield command
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGINT)
        async with asyncio.timeout(30):
            await proc.wait()


async def kubectl(*args: str, stdin: str | None = None) -> str:
    proc = await asyncio.create_subprocess_exec(
        "kubectl",
        *args,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await proc.communicate(stdin.encode() if stdin is not None else None)
    assert proc.returncode == 0, f"kubectl {' '.join(args)}: {err.decode()}"
    return out.decode()


async def test_kubectl_works_on_the_stack_ksched_up_starts(tmp_path: Path) -> None:
    async with ksched_up(tmp_path) as printed:
        assert printed.startswith("kubectl --kubeconfig ") and printed.endswith(" get nodes")
        kubeconfig = printed.split()[2]
        nodes = await kubectl("--kubeconfig", kubeconfig, "get", "nodes", "-o", "name")
        assert len(nodes.split()) == 3
        assert "pod/hello created" in await kubectl("--kubeconfig", kubeconfig, "apply", "-f", "-", stdin=POD)
        node = ""
        for _ in range(150):
            node = await kubectl(
                "--kubeconfig", kubeconfig, "get", "pod", "hello", "-o", "jsonpath={.spec.nodeName}"
            )
            if node:
                break
            await asyncio.sleep(0.2)
        assert node.startswith("node-"), "the pod was not bound"
