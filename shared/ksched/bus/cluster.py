"""A JetStream cluster of embedded nats-servers on loopback, as deploy/ runs three of them.

Used by the launcher (``StackOptions.nats_servers``), ``ksched bench chaos --nats-servers 3`` and the
tests::

    cluster = EmbeddedCluster(3, Path("/tmp/js"))
    await cluster.start()            # every server up and a JetStream meta leader elected
    bus = await connect(cluster.urls, name="demo", jetstream_replicas=3)
    await cluster.lose(1)            # SIGKILL server 1 and remove its store (the machine is gone)
    await cluster.replace(1)         # a new server 1, same name and ports, empty store: it catches up

Each server keeps its client port and route port for its whole life (a restarted or replaced one
comes back on them, as a StatefulSet pod keeps its DNS name), its store in ``<store_root>/n<i>``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import signal
import socket
import time
from collections.abc import Sequence
from pathlib import Path

import nats

from ksched.bus.embedded import EmbeddedNats

CLUSTER_NAME = "ksched"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


async def wait_for_meta_leader(urls: str | Sequence[str], timeout: float = 30.0) -> None:
    """Until the JetStream API answers without an error: a new cluster needs a meta leader (a few seconds)."""
    deadline = time.monotonic() + timeout
    servers = [urls] if isinstance(urls, str) else list(urls)
    last = "no answer"
    while True:
        nc = None
        try:
            nc = await nats.connect(servers=servers, connect_timeout=1, max_reconnect_attempts=0)
            reply = await nc.request("$JS.API.INFO", b"", timeout=0.5)
            answer = json.loads(reply.data)
            if "error" not in answer:
                return
            last = str(answer["error"].get("description", answer["error"]))
        except Exception as exc:  # not up yet, no responders, timeout
            last = f"{type(exc).__name__}: {exc}"
        finally:
            if nc is not None:
                with contextlib.suppress(Exception):
                    await nc.close()
        if time.monotonic() > deadline:
            raise TimeoutError(f"the JetStream cluster elected no meta leader in {timeout} s ({last})")
        await asyncio.sleep(0.2)


class EmbeddedCluster:
    """``size`` nats-servers with JetStream, routed to each other on loopback."""

    def __init__(
        self, size: int, store_root: str | os.PathLike[str], *, monitor_port: int | None = None
    ) -> None:
        """``monitor_port``: serve server 0's monitoring endpoints there (``/varz``, ``/connz``)."""
        if size < 1:
            raise ValueError("a NATS cluster needs at least one server")
        self.size = size
        self.store_root = Path(store_root)
        self.monitor_port = monitor_port
        self.client_ports = [_free_port() for _ in range(size)]
        self.route_ports = [_free_port() for _ in range(size)]
        self.servers: list[EmbeddedNats] = [self._server(i) for i in range(size)]

    @property
    def urls(self) -> list[str]:
        """Every server's client URL (the running ones and those down for now)."""
        return [f"nats://127.0.0.1:{port}" for port in self.client_ports]

    def store(self, index: int) -> Path:
        return self.store_root / f"n{index}"

    def _config(self, index: int) -> Path:
        routes = ", ".join(f"nats-route://127.0.0.1:{port}" for port in self.route_ports)
        path = self.store_root / f"n{index}.conf"
        path.parent.mkdir(parents=True, exist_ok=True)
        listen = f"127.0.0.1:{self.route_ports[index]}"
        path.write_text(
            f"server_name: n{index}\n"
            f"cluster {{ name: {CLUSTER_NAME}, listen: {listen}, routes: [{routes}] }}\n"
        )
        return path

    def _server(self, index: int) -> EmbeddedNats:
        return EmbeddedNats(
            port=self.client_ports[index],
            store_dir=str(self.store(index)),
            config_file=self._config(index),
            http_port=self.monitor_port if index == 0 else None,
        )

    async def start(self, timeout: float = 30.0) -> None:
        """Start every server, then wait for the JetStream meta leader."""
        await asyncio.gather(*(s.start() for s in self.servers))
        await wait_for_meta_leader(self.urls, timeout)

    async def stop(self) -> None:
        await asyncio.gather(*(s.stop() for s in self.servers))

    def pid(self, index: int) -> int | None:
        return self.servers[index].pid

    def pids(self) -> list[int]:
        return [pid for s in self.servers if (pid := s.pid) is not None and s.running]

    async def kill(self, index: int, sig: int = signal.SIGKILL) -> None:
        """Stop server ``index`` with ``sig`` (its store stays on disk)."""
        server = self.servers[index]
        if server.pid is not None and server.running:
            with contextlib.suppress(ProcessLookupError):
                os.kill(server.pid, sig)
        await server.stop()

    async def restart(self, index: int, sig: int = signal.SIGKILL) -> None:
        """Stop server ``index`` with ``sig`` and start it again on its ports and store."""
        await self.kill(index, sig)
        await self.start_server(index)

    async def lose(self, index: int) -> None:
        """SIGKILL server ``index`` and remove its store: the machine and its disk are gone."""
        await self.kill(index)
        await asyncio.to_thread(shutil.rmtree, self.store(index), True)

    async def start_server(self, index: int) -> None:
        """Start server ``index`` (again) on its ports and store; a replaced one starts empty and the
        cluster's other servers bring its stream replicas up to date."""
        self.servers[index] = self._server(index)
        await self.servers[index].start()
