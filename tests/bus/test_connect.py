"""The service connection: readiness follows the connection, reconnects forever (hooks run after each
reconnect), bounded first connect."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import time
from collections.abc import Callable

import nats.errors
import pytest
from nats.aio.msg import Msg

from ksched.bus import endpoints
from ksched.bus.connect import Bus, BusConnectError, connect
from ksched.bus.embedded import EmbeddedNats
from ksched.bus.messages import Ack, UnreserveRequest
from ksched.bus.subjects import Subjects
from ksched.cache.follower import ReplicaFollower
from tests.bus.samples import sample
from tests.bus.testing import PING


async def wait_until(predicate: Callable[[], bool], within: float) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if predicate():
            return True
        await asyncio.sleep(0.02)
    return False


async def test_readiness_follows_the_connection_across_a_server_restart() -> None:
    first = EmbeddedNats()
    await first.start()
    port = first.port
    bus = await connect(first.url, name="queue", subjects=Subjects("restart"), reconnect_time_wait=0.2)
    reconnects: list[bool] = []
    bus.after_reconnect(lambda: reconnects.append(bus.ready))
    follower = ReplicaFollower(bus, "r1")  # a replica bootstraps again after a reconnect
    try:
        assert bus.ready
        assert bus.nc.options["max_reconnect_attempts"] == -1
        await first.stop()
        assert await wait_until(lambda: not bus.ready, 5)
        assert reconnects == [] and not follower._resync.is_set()
        async with EmbeddedNats(port=port):
            assert await wait_until(lambda: bus.ready, 10)
            assert await wait_until(lambda: reconnects == [True], 5)
            assert follower._resync.is_set()  # its run loop bootstraps again

            async def pong(msg: Ack, raw: Msg) -> Ack:
                return Ack(reason="pong")

            await bus.subscribe(PING, pong)
            assert (await bus.request(PING, Ack())).reason == "pong"
    finally:
        await bus.close(drain=False)


async def test_first_connect_is_bounded() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    started = time.monotonic()
    with pytest.raises(BusConnectError, match=f"no NATS connection to nats://127.0.0.1:{port}"):
        await connect(f"nats://127.0.0.1:{port}", name="t", initial_timeout=0.5, connect_timeout=0.2)
    assert time.monotonic() - started < 2


async def test_connection_uses_the_installation_inbox_prefix(bus: Bus) -> None:
    seen: list[str] = []

    async def echo(msg: Ack, raw: Msg) -> Ack:
        seen.append(raw.reply)
        return msg

    await bus.subscribe(PING, echo)
    assert await bus.request(PING, Ack(reason="x")) == Ack(reason="x")
    assert seen and seen[0].startswith(bus.subjects.inbox_prefix + ".")
    await bus.close()
    assert not bus.ready


async def test_a_request_nobody_listens_to_fails_fast(bus: Bus) -> None:
    started = time.monotonic()
    with pytest.raises(nats.errors.NoRespondersError):
        await bus.request(endpoints.UNRESERVE.to("sched.gone"), sample(UnreserveRequest), timeout=5)
    assert time.monotonic() - started < 0.5


async def test_a_comma_separated_server_list_connects_to_one_that_answers(nats_server: EmbeddedNats) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        dead = f"nats://127.0.0.1:{probe.getsockname()[1]}"
    bus = await connect(f"{dead}, {nats_server.url}", name="t", initial_timeout=10, connect_timeout=0.5)
    try:
        assert bus.ready and bus.nc.connected_url is not None
        assert bus.nc.connected_url.port == nats_server.port
    finally:
        await bus.close(drain=False)


async def test_a_close_is_bounded_when_the_server_does_not_answer() -> None:
    """nats-py's close waits on the server (a flush's PONG, the socket) without a limit of its own
    making: a service whose server froze must still stop, and must not reconnect afterwards."""
    server = EmbeddedNats()
    await server.start()
    bus = await connect(server.url, name="frozen", subjects=Subjects("frozen"), reconnect_time_wait=0.1)
    pid = server.pid
    assert pid is not None
    try:
        await bus.nc.subscribe("frozen.x")
        os.kill(pid, signal.SIGSTOP)
        started = time.monotonic()
        await bus.close(timeout=1.0)
        assert time.monotonic() - started < 3.0
        assert bus.nc.is_closed
    finally:
        os.kill(pid, signal.SIGCONT)
    try:
        await asyncio.sleep(0.5)  # time enough to reconnect to the thawed server, if it tried
        assert bus.nc.is_closed and not bus.ready
    finally:
        await server.stop()
