"""A service process serving its secure port as kube-scheduler's 10259, against kubesim: HTTPS with
the self-signed certificate made at start; /metrics refused to a caller without credentials (403
``system:anonymous``, as the real kube-scheduler, capture 16h), to a token the API server rejects
(401) and to one it does not allow (403), served to one it allows (200); the probes open; a second
request within the 10 s cache asks the API server nothing (kubesim counts the reviews it answers)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import ssl
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest
from ksched_kubesim import KubeSim

from ksched.launcher.stack import free_port
from tests.fixtures.kubesim import fast_config

pytestmark = pytest.mark.e2e

KSCHED = str(Path(sys.executable).with_name("ksched"))


@pytest.fixture
async def sim() -> AsyncIterator[KubeSim]:
    async with KubeSim(fast_config()) as sim:
        yield sim


@pytest.fixture
async def binder(sim: KubeSim, nats_url: str, bus_prefix: str, tmp_path: Path) -> AsyncIterator[int]:
    """``ksched binder`` with its secure port on loopback; yields the port once /healthz answers."""
    kubeconfig = str(sim.write_kubeconfig(tmp_path / "kubeconfig"))
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("KSCHED_", "KUBERNETES_SERVICE"))}
    log = (tmp_path / "binder.log").open("wb")
    proc = await asyncio.create_subprocess_exec(
        KSCHED,
        "binder",
        f"--nats={nats_url}",
        f"--subject-prefix={bus_prefix}",
        f"--kubeconfig={kubeconfig}",
        "--http-port=0",
        f"--secure-port={port}",
        "--bind-address=127.0.0.1",
        f"--authentication-kubeconfig={kubeconfig}",
        f"--authorization-kubeconfig={kubeconfig}",
        env=env,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=log,
    )
    try:
        for _ in range(200):
            with contextlib.suppress(aiohttp.ClientError, OSError):
                if (await get(port, "/healthz"))[0] == 200:
                    break
            if proc.returncode is not None:
                break
            await asyncio.sleep(0.1)
        else:
            pytest.fail("the binder's secure port never answered: " + (tmp_path / "binder.log").read_text())
        assert proc.returncode is None, (tmp_path / "binder.log").read_text()
        yield port
    finally:
        if proc.returncode is None:
            proc.terminate()
            await asyncio.wait_for(proc.wait(), 30)
        log.close()


async def get(port: int, path: str, token: str | None = None) -> tuple[int, str]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    tls = ssl.create_default_context()
    tls.check_hostname = False
    tls.verify_mode = ssl.CERT_NONE  # self-signed, made at start: nothing to verify it with
    async with (
        aiohttp.ClientSession() as http,
        http.get(f"https://127.0.0.1:{port}{path}", headers=headers, ssl=tls) as resp,
    ):
        return resp.status, await resp.text()


async def test_metrics_need_a_caller_the_api_server_allows(sim: KubeSim, binder: int) -> None:
    for probe in ("/healthz", "/livez", "/readyz"):
        assert (await get(binder, probe))[0] in (200, 503), probe  # open: no 401/403
    assert (await get(binder, "/healthz"))[0] == 200

    status, body = await get(binder, "/metrics")
    assert status == 403
    assert json.loads(body)["message"] == 'forbidden: User "system:anonymous" cannot get path "/metrics"'

    assert (await get(binder, "/metrics", "a-token-nobody-issued"))[0] == 401

    denied = sim.access.service_account_token("monitoring", "nosy")
    status, body = await get(binder, "/metrics", denied)
    assert status == 403
    assert "system:serviceaccount:monitoring:nosy" in json.loads(body)["message"]

    allowed = sim.access.service_account_token("monitoring", "prometheus-k8s")
    sim.access.grant("ServiceAccount", "monitoring/prometheus-k8s", ["/metrics"])
    before = dict(sim.access.reviews)
    status, body = await get(binder, "/metrics", allowed)
    assert status == 200
    assert "ksched_" in body
    assert (await get(binder, "/debug", allowed))[0] == 403  # the grant is /metrics only

    # within the TTL: the same caller again asks the API server nothing
    after_first = dict(sim.access.reviews)
    assert (await get(binder, "/metrics", allowed))[0] == 200
    assert dict(sim.access.reviews) == after_first
    assert after_first["tokenreviews"] - before.get("tokenreviews", 0) == 1
    # one for /metrics, one for /debug
    assert after_first["subjectaccessreviews"] - before.get("subjectaccessreviews", 0) == 2
