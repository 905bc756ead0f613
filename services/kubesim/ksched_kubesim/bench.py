"""kubesim speed: list and watch of 10,000 pods and 5,000 nodes, binding requests per second.

kubesim runs in a child process (its own core, uvloop) preloaded in-process with the nodes and pods;
the measuring client runs here over loopback HTTP with aiohttp and msgspec, as ksched's services do.
``python -m ksched_kubesim.bench`` prints the figures as JSON.
"""

from __future__ import annotations

import asyncio
import json
import multiprocessing
import sys
import time
from multiprocessing.connection import Connection
from typing import Any

import aiohttp
import msgspec

NAMESPACE = "bench"


def _pod(i: int) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"pod-{i:05d}",
            "namespace": NAMESPACE,
            "labels": {"app": f"app-{i % 50}", "pod-template-hash": "5d8f9c7b6"},
        },
        "spec": {
            "containers": [
                {
                    "name": "app",
                    "image": "registry.k8s.io/pause:3.10",
                    "ports": [{"containerPort": 8080}],
                    "resources": {
                        "requests": {"cpu": "100m", "memory": "128Mi"},
                        "limits": {"memory": "256Mi"},
                    },
                }
            ],
            "affinity": {
                "podAntiAffinity": {
                    "preferredDuringSchedulingIgnoredDuringExecution": [
                        {
                            "weight": 100,
                            "podAffinityTerm": {
                                "labelSelector": {"matchLabels": {"app": f"app-{i % 50}"}},
                                "topologyKey": "kubernetes.io/hostname",
                            },
                        }
                    ]
                }
            },
        },
    }


def _serve(conn: Connection, nodes: int, pods: int) -> None:
    """Child process: build the cluster in-process, serve it, report the port, run until told to stop."""
    import uvloop

    from .lifecycle import LifecycleSettings
    from .sim import KubeSim, KubeSimConfig

    async def main() -> None:
        started = time.perf_counter()
        sim = KubeSim(KubeSimConfig(nodes=nodes, token="bench", lifecycle=LifecycleSettings(enabled=False)))
        nodes_done = time.perf_counter()
        sim.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}})
        for i in range(pods):
            sim.create(_pod(i))
        pods_done = time.perf_counter()
        await sim.start()
        conn.send(
            {
                "port": sim.port,
                "load_nodes_per_s": nodes / max(nodes_done - started, 1e-9),
                "create_pods_in_process_per_s": pods / max(pods_done - nodes_done, 1e-9),
            }
        )
        loop = asyncio.get_running_loop()
        while await loop.run_in_executor(None, conn.recv) == "cpu":
            conn.send(time.process_time())
        await sim.stop()

    uvloop.run(main())


async def _timed_get(session: aiohttp.ClientSession, url: str) -> tuple[float, float, int, int]:
    """(seconds until the whole body arrived, seconds to decode it, items, bytes)."""
    started = time.perf_counter()
    async with session.get(url) as resp:
        data = await resp.read()
    received = time.perf_counter()
    items = len(msgspec.json.decode(data)["items"])
    return received - started, time.perf_counter() - received, items, len(data)


async def _watch_initial(session: aiohttp.ClientSession, url: str, expected: int) -> float:
    started = time.perf_counter()
    seen = 0
    async with session.get(
        url, params={"watch": "true", "resourceVersion": "0", "timeoutSeconds": "60"}
    ) as resp:
        async for line in resp.content:
            msgspec.json.decode(line)
            seen += 1
            if seen >= expected:
                break
    return time.perf_counter() - started


async def _watcher(
    session: aiohttp.ClientSession, url: str, rv: str, expected: int, done: list[float]
) -> None:
    seen = 0
    params = {"watch": "true", "resourceVersion": rv, "timeoutSeconds": "120"}
    async with session.get(url, params=params) as resp:
        async for line in resp.content:
            event = msgspec.json.decode(line)
            if event["type"] == "MODIFIED":
                seen += 1
                if seen >= expected:
                    done.append(time.perf_counter())
                    return


async def _bind_all(session: aiohttp.ClientSession, base: str, names: list[str], concurrency: int) -> int:
    queue: asyncio.Queue[str] = asyncio.Queue()
    for name in names:
        queue.put_nowait(name)
    ok = 0

    async def worker() -> None:
        nonlocal ok
        while not queue.empty():
            name = queue.get_nowait()
            body = msgspec.json.encode(
                {
                    "apiVersion": "v1",
                    "kind": "Binding",
                    "metadata": {"name": name},
                    "target": {"kind": "Node", "name": f"node-{hash(name) % 5000:04d}"},
                }
            )
            async with session.post(
                f"{base}/api/v1/namespaces/{NAMESPACE}/pods/{name}/binding",
                data=body,
                headers={"Content-Type": "application/json"},
            ) as resp:
                await resp.read()
                ok += resp.status == 201

    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return ok


async def _bind_with_client(base: str, names: list[str], concurrency: int) -> int:
    """The same through ksched's API client (:class:`ksched.client.rest.Client`, what the binder uses)."""
    from kubernetes_asyncio.client import Configuration

    from ksched.client.rest import Client

    configuration = Configuration(host=base)
    configuration.api_key = {"BearerToken": "Bearer bench"}
    ok = 0
    async with Client(configuration, connections=concurrency, component="kubesim-bench") as api:
        queue = list(reversed(names))

        async def worker() -> None:
            nonlocal ok
            while queue:
                name = queue.pop()
                body = {
                    "apiVersion": "v1",
                    "kind": "Binding",
                    "metadata": {"name": name},
                    "target": {"kind": "Node", "name": "node-0001"},
                }
                status, _ = await api.request(
                    "POST", f"/api/v1/namespaces/{NAMESPACE}/pods/{name}/binding", body
                )
                ok += status == 201

        await asyncio.gather(*(worker() for _ in range(concurrency)))
    return ok


async def _server_cpu(conn: Connection) -> float:
    conn.send("cpu")
    value: float = await asyncio.get_running_loop().run_in_executor(None, conn.recv)
    return value


async def run(
    pods: int = 10_000, nodes: int = 5_000, concurrency: int = 64, watchers: int = 10
) -> dict[str, Any]:
    """Measure and return the figures (seconds, per-second rates, sizes in MB)."""
    ctx = multiprocessing.get_context("spawn")
    parent, child = ctx.Pipe()
    proc = ctx.Process(target=_serve, args=(child, nodes, pods), daemon=True)
    proc.start()
    try:
        info = await asyncio.get_running_loop().run_in_executor(None, parent.recv)
        base = f"http://127.0.0.1:{info['port']}"
        figures: dict[str, Any] = {"pods": pods, "nodes": nodes}
        figures["load_nodes_per_s"] = round(info["load_nodes_per_s"])
        figures["create_pods_in_process_per_s"] = round(info["create_pods_in_process_per_s"])
        headers = {"Authorization": "Bearer bench", "Accept": "application/json"}
        connector = aiohttp.TCPConnector(limit=concurrency + watchers + 4)
        timeout = aiohttp.ClientTimeout(total=None, sock_read=120)
        async with aiohttp.ClientSession(headers=headers, connector=connector, timeout=timeout) as session:
            for kind in ("pods", "nodes"):
                seconds, decode_s, count, size = await _timed_get(session, f"{base}/api/v1/{kind}")
                figures[f"list_{kind}_s"] = round(seconds, 3)
                figures[f"list_{kind}_client_decode_s"] = round(decode_s, 3)
                figures[f"list_{kind}_items"] = count
                figures[f"list_{kind}_mb"] = round(size / 1e6, 1)
            seconds, _, _, _ = await _timed_get(session, f"{base}/api/v1/pods?limit=500")
            figures["list_pods_page_500_s"] = round(seconds, 4)
            figures["watch_pods_initial_s"] = round(
                await _watch_initial(session, f"{base}/api/v1/pods", pods), 3
            )
            figures["watch_nodes_initial_s"] = round(
                await _watch_initial(session, f"{base}/api/v1/nodes", nodes), 3
            )

            names = [f"pod-{i:05d}" for i in range(pods)]
            half = len(names) // 2
            async with session.get(f"{base}/api/v1/namespaces/{NAMESPACE}/pods?limit=1") as resp:
                rv = msgspec.json.decode(await resp.read())["metadata"]["resourceVersion"]
            done: list[float] = []
            watch_tasks = [
                asyncio.create_task(_watcher(session, f"{base}/api/v1/pods", rv, half, done))
                for _ in range(watchers)
            ]
            await asyncio.sleep(0.5)
            cpu_before = await _server_cpu(parent)
            started = time.perf_counter()
            bound = await _bind_all(session, base, names[:half], concurrency)
            finished = time.perf_counter()
            cpu_used = await _server_cpu(parent) - cpu_before
            await asyncio.wait_for(asyncio.gather(*watch_tasks), 120)
            figures["bindings_ok"] = bound
            figures["bindings_per_s_aiohttp"] = round(bound / (finished - started))
            figures["server_cpu_ms_per_binding"] = round(1000 * cpu_used / max(bound, 1), 3)
            figures["bindings_per_server_cpu_s"] = round(bound / max(cpu_used, 1e-9))
            figures["watchers_during_bindings"] = watchers
            figures["watch_lag_after_last_binding_s"] = round(max(done) - finished, 3)
            started = time.perf_counter()
            bound = await _bind_with_client(base, names[half:], concurrency)
            figures["bindings_per_s_ksched_client"] = round(bound / (time.perf_counter() - started))
        return figures
    finally:
        parent.send("stop")
        proc.join(timeout=10)
        if proc.is_alive():
            proc.terminate()


def main() -> int:
    import uvloop

    figures = uvloop.run(run())
    json.dump(figures, sys.stdout, indent=2)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
