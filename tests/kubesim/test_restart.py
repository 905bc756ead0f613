"""``KubeSim.restart`` (SIGHUP to ``ksched kubesim``): what clients see of an API server restart with
its storage kept — watches end, the port refuses connections for a while, objects stay, and a watch
resumed from a resourceVersion before the restart gets 410 Gone."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path

import aiohttp
import pytest
from ksched_kubesim import KubeSim, KubeSimConfig, LifecycleSettings

POD = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "kept", "namespace": "default"},
    "spec": {"containers": [{"name": "c", "image": "pause"}]},
}


@pytest.mark.parametrize("tls", [False, True])
async def test_restart_ends_watches_keeps_objects_and_expires_old_versions(tls: bool) -> None:
    config = KubeSimConfig(tls=tls, lifecycle=LifecycleSettings(enabled=False))
    async with KubeSim(config) as sim:
        sim.create(POD)
        before = str(sim.resource_version)
        sim.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "later"}})
        headers = {"Authorization": f"Bearer {sim.token}"}
        ssl = False  # the self-signed certificate is not what this test is about
        async with aiohttp.ClientSession(base_url=sim.url, headers=headers) as http:
            watch = await http.get(
                "/api/v1/namespaces/default/pods",
                params={"watch": "true", "resourceVersion": before},
                ssl=ssl,
            )
            restart = asyncio.create_task(sim.restart(downtime=0.5))
            assert await asyncio.wait_for(watch.content.read(), 5) == b""  # the watch ended
            await asyncio.sleep(0.1)
            with pytest.raises(aiohttp.ClientConnectionError):  # down: connections refused
                await http.get("/readyz", ssl=ssl)
            await restart
        async with aiohttp.ClientSession(base_url=sim.url, headers=headers) as http:
            listed = await (await http.get("/api/v1/namespaces/default/pods", ssl=ssl)).json()
            assert [p["metadata"]["name"] for p in listed["items"]] == ["kept"]
            resumed = await http.get(
                "/api/v1/namespaces/default/pods",
                params={"watch": "true", "resourceVersion": before, "timeoutSeconds": "2"},
                ssl=ssl,
            )
            event = await resumed.json(content_type=None)
            assert event["type"] == "ERROR" and event["object"]["code"] == 410, event
            fresh = await http.get(
                "/api/v1/namespaces/default/pods",
                params={
                    "watch": "true",
                    "resourceVersion": listed["metadata"]["resourceVersion"],
                    "timeoutSeconds": "1",
                },
                ssl=ssl,
            )
            sim.create({**POD, "metadata": {"name": "after", "namespace": "default"}})
            line = await asyncio.wait_for(fresh.content.readline(), 5)
            assert b'"ADDED"' in line and b'"after"' in line


async def test_sighup_restarts_the_kubesim_process(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "ksched.cli",
        "kubesim",
        "--listen",
        "127.0.0.1:0",
        "--write-kubeconfig",
        str(kubeconfig),
        "--restart-downtime",
        "0.2",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    assert proc.stdout is not None
    try:
        listening = await asyncio.wait_for(proc.stdout.readline(), 30)
        assert listening.startswith(b"kubesim listening on ")
        await asyncio.wait_for(proc.stdout.readline(), 5)  # kubeconfig written
        os.kill(proc.pid, signal.SIGHUP)
        assert (await asyncio.wait_for(proc.stdout.readline(), 5)).startswith(b"kubesim restarting")
        assert await asyncio.wait_for(proc.stdout.readline(), 5) == listening  # same address again
        assert proc.returncode is None
    finally:
        proc.terminate()
        await proc.wait()
