"""A TCP proxy in front of kubesim that a test can cut (a network partition: bytes stop flowing,
connections hang) and heal. Real HTTP(S) passes through it unchanged."""

from __future__ import annotations

import asyncio
import contextlib


class CuttableProxy:
    def __init__(self, upstream_host: str, upstream_port: int) -> None:
        self.upstream = (upstream_host, upstream_port)
        self.port = 0
        self.cut = False
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()
        self._handlers: set[asyncio.Task[None]] = set()

    async def start(self) -> int:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self.port

    async def stop(self) -> None:
        """Close the listener and every connection (handlers cancelled, not awaited forever)."""
        if self._server is not None:
            self._server.close()
        self._close_all()
        handlers = list(self._handlers)
        for task in handlers:
            task.cancel()
        if handlers:
            await asyncio.wait(handlers, timeout=2)

    def partition(self) -> None:
        """From now on nothing passes; open connections hang (no reset)."""
        self.cut = True

    def heal(self) -> None:
        """Drop the hung connections and let new ones through."""
        self.cut = False
        self._close_all()

    def _close_all(self) -> None:
        for writer in list(self._writers):
            writer.close()
        self._writers.clear()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._handlers.add(task)
        self._writers.add(writer)
        try:
            up_reader, up_writer = await asyncio.open_connection(*self.upstream)
            self._writers.add(up_writer)
            await asyncio.gather(self._pump(reader, up_writer), self._pump(up_reader, writer))
        except OSError:
            writer.close()
        finally:
            self._handlers.discard(task)

    async def _pump(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(OSError, ConnectionError):
            while True:
                data = await reader.read(65536)
                if not data:
                    break
                if self.cut:
                    continue  # swallowed: the peer waits forever
                writer.write(data)
                await writer.drain()
        with contextlib.suppress(Exception):
            writer.close()
