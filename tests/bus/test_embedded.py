"""The embedded nats-server: free or given port, JetStream store, config file, clean stop."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
from pathlib import Path

import nats
import nats.errors
import pytest

from ksched.bus.connect import connect
from ksched.bus.embedded import EmbeddedNats, EmbeddedNatsError, nats_server_binary
from ksched.bus.messages import Ack
from tests.bus.testing import PING


def test_binary_comes_from_the_wheel() -> None:
    path = nats_server_binary()
    assert os.access(path, os.X_OK)
    assert Path(path).name == "nats-server"


async def test_session_server_is_up_with_jetstream(nats_server: EmbeddedNats) -> None:
    assert nats_server.running
    assert nats_server.url == f"nats://127.0.0.1:{nats_server.port}"
    nc = await nats.connect(nats_server.url)
    try:
        info = await nc.jetstream().account_info()
        assert info.limits is not None
    finally:
        await nc.close()


async def test_start_and_stop_clean_up_process_and_store() -> None:
    server = EmbeddedNats()
    await server.start()
    pid, store, workdir = server.pid, server.store_dir, server.log_path
    assert pid is not None and store is not None and workdir is not None
    bus = await connect(server.url, name="t", initial_timeout=5)
    await bus.js.add_stream(name="probe", subjects=["probe.>"])
    await bus.close()
    assert any(store.rglob("*")), "JetStream wrote nothing to the store"
    await server.stop()
    assert not server.running
    assert not workdir.parent.exists()
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    with pytest.raises(EmbeddedNatsError, match="not running"):
        _ = server.url


async def test_given_port_and_kept_store_dir(tmp_path: Path) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    async with EmbeddedNats(port=port, store_dir=tmp_path / "js") as server:
        assert server.url == f"nats://127.0.0.1:{port}"
    assert (tmp_path / "js").is_dir(), "a store dir given by the caller is kept"


async def test_port_in_use_fails_fast_with_the_servers_reason(nats_server: EmbeddedNats) -> None:
    with pytest.raises(EmbeddedNatsError, match="address already in use"):
        await EmbeddedNats(port=nats_server.port).start()


async def test_missing_binary() -> None:
    with pytest.raises(EmbeddedNatsError, match="cannot run /nonexistent/nats-server"):
        await EmbeddedNats(binary="/nonexistent/nats-server").start()


async def test_config_file_sets_authorization(tmp_path: Path) -> None:
    config = tmp_path / "nats.conf"
    config.write_text('authorization { token: "s3cret" }\n')
    async with EmbeddedNats(config_file=config) as server:
        with pytest.raises(nats.errors.Error):
            await nats.connect(server.url, allow_reconnect=False, connect_timeout=1, max_reconnect_attempts=0)
        bus = await connect(server.url, name="t", token="s3cret", initial_timeout=5)

        async def pong(msg: Ack, raw: object) -> Ack:
            return Ack(reason="pong")

        await bus.subscribe(PING, pong)
        assert (await bus.request(PING, Ack())).reason == "pong"
        await bus.close()


async def test_stop_kills_a_server_that_ignores_sigterm() -> None:
    server = EmbeddedNats(stop_timeout=0.3)
    await server.start()
    assert server.pid is not None
    os.kill(server.pid, signal.SIGSTOP)  # a stopped process cannot act on SIGTERM
    started = asyncio.get_running_loop().time()
    await server.stop()
    assert not server.running
    assert asyncio.get_running_loop().time() - started < 3
