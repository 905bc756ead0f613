"""End to end with bus security on: nats-server runs with the generated per-service users and every
service process connects as its own user (``--nats-user``, password from ``KSCHED_NATS_PASSWORD``
would do the same). Pods get bound, and no service hit a permission violation on the way."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from ksched.bus.auth import OBSERVER, SERVICES, authorization_block
from ksched.bus.subjects import Subjects
from ksched.launcher.stack import Proc, Stack, StackOptions
from tests.e2e.testing import api_for, create_nodes, create_pods, eventually, node, pod, pod_nodes

pytestmark = pytest.mark.e2e

PASSWORDS = {user: f"e2e-{user}-password" for user in (*SERVICES, OBSERVER)}


class SecuredStack(Stack):
    """The launcher's stack, with NATS users: each service process logs in as its own user."""

    def __init__(self, options: StackOptions) -> None:
        conf = options.workdir / "auth.conf"
        options.workdir.mkdir(parents=True, exist_ok=True)
        conf.write_text(authorization_block(Subjects(options.prefix), PASSWORDS))
        super().__init__(dataclasses.replace(options, nats_config=str(conf)))

    def _service(self, name: str, service: str, extra: Sequence[str] = (), port: int = 0) -> Proc:
        login = ["--nats-user", service, "--nats-password", PASSWORDS[service]]
        return super()._service(name, service, [*extra, *login], port)


@pytest.fixture(scope="module")
async def secured(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[SecuredStack]:
    s = SecuredStack(
        StackOptions(
            workdir=tmp_path_factory.mktemp("secured"),
            schedulers=1,
            pod_start_delay=0.1,
            time_scale=0.01,
            ui=True,
        )
    )
    await s.start()
    try:
        yield s
    finally:
        await s.stop()


async def test_pipeline_binds_pods_with_per_service_users(secured: SecuredStack) -> None:
    api = await api_for(secured.kubeconfig)
    try:
        await create_nodes(api, [node("n1"), node("n2")])
        await create_pods(api, [pod(f"p{i}") for i in range(6)])

        async def all_bound() -> dict[str, str] | None:
            nodes = await pod_nodes(api)
            return nodes if len(nodes) == 6 and all(nodes.values()) else None

        bound = await eventually(all_bound, timeout=60)
        assert set(bound.values()) <= {"n1", "n2"}
        # the ui, as its user, follows the snapshot, lists the queue and reads a pod's trace
        await create_pods(api, [pod("huge", cpu="64")])
        base = secured.http_url("ui")

        async def huge_explained() -> dict[str, Any] | None:
            async with aiohttp.ClientSession() as http, http.get(f"{base}/api/pod?key=default/huge") as r:
                page: dict[str, Any] = await r.json()
            return page if page["queue"] and page["last"] and page["last"]["rejected"] else None

        page = await eventually(huge_explained, timeout=30)
        assert page["reason"].startswith("0/2 nodes are available: 2 Insufficient cpu.")
        async with aiohttp.ClientSession() as http, http.get(f"{base}/api/cluster") as r:
            cluster = await r.json()
        assert cluster["synced"] and cluster["totals"]["pods"][0] == 6
    finally:
        await api.close()
    for proc in secured.procs.values():
        log = Path(proc.log_path).read_text(errors="replace").lower() if os.path.exists(proc.log_path) else ""
        assert "permissions violation" not in log, f"{proc.name}:\n{secured.log_tail(proc.name, 40)}"
        assert "authorization violation" not in log, proc.name
