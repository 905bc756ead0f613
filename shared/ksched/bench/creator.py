"""One pod-creating client of ``ksched bench compare``, a process of its own so that creating pods
neither competes with the watch that times the bindings nor is limited by one Python process.

    python -m ksched.bench.creator --kubeconfig K --namespace NS --shape S --pods M
                                   [--first I --step N] [--connections C] [--rate R]

It creates pods ``bench-<i>`` for i in ``range(first, pods, step)`` (several clients interleave),
each body encoded before the start. It opens its connections, prints ``ready``, then waits for a
line on stdin holding the start time (``time.monotonic()``, the same clock in every process of the
machine). In a burst (``--rate 0``) ``C`` requests are in flight at a time; at ``--rate R`` pod ``i``
is sent at ``start + i / R`` (one client: ``--first 0 --step 1``). At the end it prints one JSON
object: ``created`` (name → monotonic time of the create response), ``errors`` (a sample),
``failed`` (how many), ``cpu_seconds`` (its own CPU from the start line to the end), ``seconds``
and ``late_ms_max`` (with a rate, how far behind its schedule a request was sent).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import sys
import time
from collections.abc import Sequence

import msgspec

from ksched.bench import shapes
from ksched.client.config import api_client

RETRIED = frozenset({429, 500, 502, 503, 504})
"""Statuses after which a creation is sent again (the API server shedding load)."""
ATTEMPTS = 6


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def pod_name(index: int) -> str:
    return f"bench-{index:06d}"


async def run(ns: argparse.Namespace) -> dict[str, object]:
    api = await api_client(ns.kubeconfig, qps_connections=ns.connections, component="ksched-bench-creator")
    encoder = msgspec.json.Encoder()
    indices = range(ns.first, ns.pods, ns.step)
    bodies = [(i, encoder.encode(shapes.pod(ns.shape, pod_name(i), ns.namespace))) for i in indices]
    path = f"/api/v1/namespaces/{ns.namespace}/pods"
    created: dict[str, float] = {}
    errors: list[str] = []
    failed = 0
    late = 0.0
    try:
        # open the connections before the start (TLS handshakes are not part of the measurement)
        await asyncio.gather(
            *(api.request("GET", f"/api/v1/namespaces/{ns.namespace}") for _ in range(ns.connections))
        )
        print("ready", flush=True)
        line = await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)
        start = float(line)
        cpu = cpu_seconds()

        async def create(index: int, body: bytes) -> None:
            nonlocal failed
            name = pod_name(index)
            for attempt in range(ATTEMPTS):
                try:
                    status, data = await api.request("POST", path, body, timeout=120.0)
                except (ConnectionError, TimeoutError) as exc:
                    status, data = 0, repr(exc).encode()
                if status == 201 or (status == 409 and attempt > 0):  # 409: an earlier attempt made it
                    created[name] = time.monotonic()
                    return
                if status not in RETRIED and status != 0:
                    break
                await asyncio.sleep(0.05 * 2**attempt)
            failed += 1
            if len(errors) < 5:
                errors.append(f"{name}: HTTP {status} {data[:300].decode(errors='replace')}")

        if ns.rate > 0:
            tasks = []
            for index, body in bodies:
                due = start + index / ns.rate
                if (wait := due - time.monotonic()) > 0:
                    await asyncio.sleep(wait)
                else:
                    late = max(late, -wait)
                tasks.append(asyncio.create_task(create(index, body)))
            await asyncio.gather(*tasks)
        else:
            queue = iter(bodies)

            async def worker() -> None:
                for index, body in queue:
                    await create(index, body)

            await asyncio.gather(*(worker() for _ in range(ns.connections)))
        return {
            "created": created,
            "errors": errors,
            "failed": failed,
            "cpu_seconds": round(cpu_seconds() - cpu, 3),
            "seconds": round(time.monotonic() - start, 3),
            "late_ms_max": round(late * 1000, 1),
        }
    finally:
        await api.close()


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m ksched.bench.creator", description=__doc__.split("\n")[0])
    p.add_argument("--kubeconfig", required=True)
    p.add_argument("--namespace", required=True)
    p.add_argument("--shape", choices=shapes.SHAPES, default="plain")
    p.add_argument("--pods", type=int, required=True, help="pods of the whole run (all clients)")
    p.add_argument("--first", type=int, default=0)
    p.add_argument("--step", type=int, default=1)
    p.add_argument("--connections", type=int, default=16)
    p.add_argument("--rate", type=float, default=0.0)
    ns = p.parse_args(argv)
    result = asyncio.run(run(ns))
    sys.stdout.write(json.dumps(result) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
