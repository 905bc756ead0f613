"""``ksched bench hop``: what one hop between two processes costs on this machine, the floor under
every bus hop of a lone pod's path (docs/benchmarks.md, "What one hop costs").

Two processes on uvloop, as the services run: this one sends a 1 KiB message at a steady ``--rate``
and times the answer of an echoing child, ``--count`` times, over

* ``tcp``: a TCP connection of their own on loopback (the kernel and two event loops: no broker);
* ``raw``: the same request/reply through an embedded nats-server, both ends speaking the NATS
  protocol's PUB / SUB / MSG lines themselves (:class:`RawNats`): the broker's share, no client
  library;
* ``nats``: that request/reply with the client every service uses (:func:`ksched.bus.connect.connect`'s
  nats-py connection): one bus hop there and one back.

So ``raw`` less ``tcp`` is what the broker in the middle costs, and ``nats`` less ``raw`` what the
client library adds at the two ends.

A pod created alone pays four bus hops one way on its path to its binding (informer to queue, queue
to scheduler, scheduler to informer, informer to binder), so half a ``nats`` round trip, four times,
is what the split into services costs it beyond kube-scheduler's in-process path.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from collections.abc import Awaitable, Callable, Sequence

from ksched.bench.compare import percentiles
from ksched.bus.connect import connect
from ksched.bus.embedded import EmbeddedNats

SUBJECT = "ksched.bench.hop"
INBOX = "_INBOX.bench.hop"
PAYLOAD = b"x" * 1024


class RawNats:
    """The NATS protocol over one asyncio connection, as little of it as a round trip needs: CONNECT,
    SUB, PUB, and reading MSG lines (a PING answered)."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer

    @classmethod
    async def connect(cls, url: str) -> RawNats:
        host, _, port = url.removeprefix("nats://").rpartition(":")
        reader, writer = await asyncio.open_connection(host, int(port))
        await reader.readline()  # INFO
        writer.write(b'CONNECT {"verbose":false,"pedantic":false}\r\nPING\r\n')
        while (line := await reader.readline()) != b"PONG\r\n":
            if not line or line.startswith(b"-ERR"):
                raise ConnectionError(f"nats-server refused the connection: {line!r}")
        return cls(reader, writer)

    def subscribe(self, subject: str, sid: int) -> None:
        self.writer.write(f"SUB {subject} {sid}\r\n".encode())

    def publish(self, subject: str, payload: bytes, reply: str = "") -> None:
        head = f"PUB {subject} {reply + ' ' if reply else ''}{len(payload)}\r\n".encode()
        self.writer.writelines((head, payload, b"\r\n"))

    async def next_msg(self) -> tuple[str, bytes]:
        """The next message delivered: (its reply subject, its payload)."""
        while True:
            line = await self.reader.readline()
            if not line:
                raise ConnectionError("nats-server closed the connection")
            if line.startswith(b"PING"):
                self.writer.write(b"PONG\r\n")
            elif line.startswith(b"MSG "):
                parts = line.split()  # MSG subject sid [reply] size
                data = await self.reader.readexactly(int(parts[-1]) + 2)
                return (parts[3].decode() if len(parts) == 5 else ""), data[:-2]

    def close(self) -> None:
        self.writer.close()


async def _paced(send: Callable[[], Awaitable[None]], rate: float, count: int) -> list[float]:
    """``count`` round trips of ``send``, one every 1/``rate`` s (after a few to warm up)."""
    for _ in range(5):
        await send()
    out = []
    start = time.perf_counter()
    for i in range(count):
        await asyncio.sleep(max(0.0, start + i / rate - time.perf_counter()))
        began = time.perf_counter()
        await send()
        out.append(time.perf_counter() - began)
    return out


async def _child(*args: str) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable, "-m", "ksched.bench.hop", *args, stdout=asyncio.subprocess.PIPE
    )


async def _stop(child: asyncio.subprocess.Process) -> None:
    if child.returncode is None:
        child.terminate()
        await child.wait()


async def measure_tcp(rate: float, count: int) -> dict[str, float | None]:
    child = await _child("--echo-tcp")
    try:
        assert child.stdout is not None
        port = int((await child.stdout.readline()).decode())
        reader, writer = await asyncio.open_connection("127.0.0.1", port)

        async def send() -> None:
            writer.write(PAYLOAD)
            await reader.readexactly(len(PAYLOAD))

        times = await _paced(send, rate, count)
        writer.close()
        return percentiles(times, digits=3)
    finally:
        await _stop(child)


Client = Callable[[str], Awaitable[tuple[Callable[[], Awaitable[None]], Callable[[], Awaitable[None]]]]]
"""Connects to a nats-server's URL: (one round trip, close)."""


async def _through_server(echo: str, client: Client, rate: float, count: int) -> dict[str, float | None]:
    """Round trips of ``client`` to a child started with ``echo`` through an embedded nats-server."""
    server = EmbeddedNats(jetstream=False)
    await server.start()
    child = await _child(echo, server.url)
    try:
        assert child.stdout is not None
        await child.stdout.readline()  # subscribed
        send, close = await client(server.url)
        times = await _paced(send, rate, count)
        await close()
        return percentiles(times, digits=3)
    finally:
        await _stop(child)
        await server.stop()


async def measure_nats(rate: float, count: int) -> dict[str, float | None]:
    async def client(url: str) -> tuple[Callable[[], Awaitable[None]], Callable[[], Awaitable[None]]]:
        bus = await connect(url, name="bench-hop")

        async def send() -> None:
            await bus.nc.request(SUBJECT, PAYLOAD, timeout=5)

        return send, bus.close

    return await _through_server("--echo-nats", client, rate, count)


async def measure_raw(rate: float, count: int) -> dict[str, float | None]:
    async def client(url: str) -> tuple[Callable[[], Awaitable[None]], Callable[[], Awaitable[None]]]:
        raw = await RawNats.connect(url)
        raw.subscribe(INBOX, 1)

        async def send() -> None:
            raw.publish(SUBJECT, PAYLOAD, reply=INBOX)
            await raw.next_msg()

        async def close() -> None:
            raw.close()

        return send, close

    return await _through_server("--echo-raw", client, rate, count)


async def measure(rate: float, count: int) -> dict[str, object]:
    return {
        "rate": rate,
        "count": count,
        "tcp": await measure_tcp(rate, count),
        "raw": await measure_raw(rate, count),
        "nats": await measure_nats(rate, count),
    }


async def _echo_tcp() -> None:
    async def echo(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while data := await reader.read(65536):
            writer.write(data)

    server = await asyncio.start_server(echo, "127.0.0.1", 0)
    print(server.sockets[0].getsockname()[1], flush=True)
    await server.serve_forever()


async def _echo_nats(url: str) -> None:
    bus = await connect(url, name="bench-hop-echo")

    async def echo(msg: object) -> None:
        await msg.respond(msg.data)  # type: ignore[attr-defined]

    await bus.nc.subscribe(SUBJECT, cb=echo)
    await bus.nc.flush()
    print("ready", flush=True)
    await asyncio.Event().wait()


async def _echo_raw(url: str) -> None:
    echo = await RawNats.connect(url)
    echo.subscribe(SUBJECT, 1)
    echo.writer.write(b"PING\r\n")  # answered once the server has the subscription
    while (await echo.reader.readline()) != b"PONG\r\n":
        pass
    print("ready", flush=True)
    while True:
        reply, data = await echo.next_msg()
        echo.publish(reply, data)


def _run(main: Awaitable[object]) -> object:
    import uvloop

    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        return runner.run(main)  # type: ignore[arg-type]


def main(argv: Sequence[str]) -> int:
    p = argparse.ArgumentParser(
        prog="ksched bench hop",
        description="The round trip of a 1 KiB message between two processes at a steady rate: over "
        "a TCP connection of their own, and as a NATS request/reply through nats-server, with the "
        "protocol written by hand (raw) and with the services' client (nats).",
    )
    p.add_argument("--rate", type=float, default=10.0, help="round trips per second (default 10)")
    p.add_argument("--count", type=int, default=300, help="round trips timed (default 300)")
    p.add_argument("--json", action="store_true")
    p.add_argument("--echo-tcp", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--echo-nats", metavar="URL", help=argparse.SUPPRESS)
    p.add_argument("--echo-raw", metavar="URL", help=argparse.SUPPRESS)
    ns = p.parse_args(list(argv))
    if ns.rate <= 0 or ns.count <= 0:
        p.error("--rate and --count must be positive")
    if ns.echo_tcp:
        _run(_echo_tcp())
        return 0
    if ns.echo_nats:
        _run(_echo_nats(ns.echo_nats))
        return 0
    if ns.echo_raw:
        _run(_echo_raw(ns.echo_raw))
        return 0
    result = _run(measure(ns.rate, ns.count))
    if ns.json:
        print(json.dumps(result))
    else:
        assert isinstance(result, dict)
        for how in ("tcp", "raw", "nats"):
            figures = "  ".join(f"{k}={v}" for k, v in result[how].items())
            print(f"{how:5} round trip at {ns.rate:g}/s: {figures}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
