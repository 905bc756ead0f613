"""A real ``ksched informer`` / ``ksched queue`` process that loses its Lease stops acting at once: it
exits with status 75 and says why, so its supervisor restarts it as a standby."""

from __future__ import annotations

import asyncio
import os
import sys
import time
import uuid
from pathlib import Path

import pytest
from kubernetes_asyncio import client
from kubernetes_asyncio.client import ApiClient

from ksched.client.leader import LOST_LEADERSHIP_EXIT_CODE


async def wait_for_holder(api: ApiClient, lease: str, timeout: float = 20.0) -> str:
    coordination = client.CoordinationV1Api(api)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            obj = await coordination.read_namespaced_lease(lease, "kube-system")
            if obj.spec.holder_identity:
                return str(obj.spec.holder_identity)
        except client.ApiException as exc:
            if exc.status != 404:
                raise
        await asyncio.sleep(0.1)
    raise AssertionError(f"nobody took lease {lease} in {timeout}s")


@pytest.mark.parametrize("service", ["informer", "queue"])
async def test_a_leader_whose_lease_is_taken_exits_75(
    service: str, k8s_api: ApiClient, kubesim_kubeconfig: Path, nats_url: str, bus_prefix: str, tmp_path: Path
) -> None:
    lease = f"lost-{service}-{uuid.uuid4().hex[:6]}"
    log_path = tmp_path / f"{service}.log"
    with log_path.open("wb") as log:
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "ksched.cli",
            service,
            "--nats",
            nats_url,
            "--kubeconfig",
            str(kubesim_kubeconfig),
            "--subject-prefix",
            bus_prefix,
            "--http-port",
            "0",
            "--id",
            f"{service}-lost",
            "--lease-name",
            lease,
            "--leader-elect-lease-duration",
            "4s",
            "--leader-elect-renew-deadline",
            "2s",
            "--leader-elect-retry-period",
            "500ms",
            stdout=log,
            stderr=log,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
    try:
        identity = await wait_for_holder(k8s_api, lease)
        assert identity.startswith(f"{service}-lost_")
        coordination = client.CoordinationV1Api(k8s_api)
        obj = await coordination.read_namespaced_lease(lease, "kube-system")
        obj.spec.holder_identity = "intruder"
        obj.spec.lease_duration_seconds = 60
        await coordination.replace_namespaced_lease(lease, "kube-system", obj)
        code = await asyncio.wait_for(proc.wait(), 10)
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    text = log_path.read_text(errors="replace")
    assert code == LOST_LEADERSHIP_EXIT_CODE, text[-2000:]
    assert f"lost the leadership of lease kube-system/{lease} (lease taken over by intruder)" in text
    assert "to restart as a standby" in text
    # It gave up without touching the Lease it no longer holds.
    obj = await client.CoordinationV1Api(k8s_api).read_namespaced_lease(lease, "kube-system")
    assert obj.spec.holder_identity == "intruder"
