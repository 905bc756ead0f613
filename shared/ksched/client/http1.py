"""A small HTTP/1.1 client for the API requests of ksched.client (reads and writes; watches stream
on aiohttp).

aiohttp's request machinery (request and response objects, timeouts, payload registry, cookie
and auth handling, tracing hooks) cost about 0.45 ms of client CPU per request on the development
machine; one request here costs about 0.2 ms, most of it TLS and the event loop (docs/benchmarks-history.md,
"The API writes without aiohttp"). What it does, and only this: keep-alive connections (TLS or
plain TCP) to one API server, at most ``max_connections`` open; one request at a time on a
connection; response bodies with a Content-Length, chunked, or ended by closing the connection,
gzip-compressed or not (requests ask for gzip, as Go's transport does: the API server compresses
answers over 128 KiB, LISTs, when asked).
No proxies, redirects or HTTP/2: :class:`ksched.client.rest.Client` sends
through aiohttp whenever a proxy is configured.

A request on a reused connection that the server closed before answering a single byte is sent
once more on a new connection, as Go's transport does for a connection the server closed while
idle. The writes sent this way are safe to repeat: a second Binding of a bound pod and an event
under a name already taken answer 409, and a status patch with the same content changes nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import ssl
import zlib
from collections import deque
from dataclasses import dataclass
from typing import Any, NoReturn, cast

_MAX_HEAD = 64 * 1024
"""A response head longer than this is not an API server's."""
CONNECT_TIMEOUT = 10.0
"""Seconds to open a connection (TCP and TLS handshake)."""


class ProtocolError(ConnectionError):
    """The server's answer is not HTTP/1.1 this client reads."""


class ServerClosed(ConnectionError):
    """The connection ended before a whole response arrived."""

    def __init__(self, message: str, answered: bool) -> None:
        super().__init__(message)
        self.answered = answered
        """Whether any byte of a response had arrived (then the request is not repeated)."""


@dataclass
class _Head:
    status: int
    body_start: int
    length: int | None
    """Content-Length; None with chunked transfer coding or a body that ends with the connection."""
    close: bool
    """The server closes the connection after this response."""
    until_close: bool = False
    """Neither a length nor chunked: the body is what arrives until the server closes (RFC 9112 6.3)."""
    gzip: bool = False
    """``Content-Encoding: gzip``: the body is decompressed when it is complete."""


_FRAMING = re.compile(
    rb"\r\n[ \t\v\f]*(content-length|transfer-encoding|connection|content-encoding)[ \t\v\f]*:([^\r\n]*)"
)
"""The header lines that frame a response and its coding, in a lowercased head (the others are not
read)."""


def parse_head(buf: bytes | bytearray) -> _Head | None:
    """The response head at the start of ``buf``; None while it is incomplete."""
    end = buf.find(b"\r\n\r\n")
    if end < 0:
        if len(buf) > _MAX_HEAD:
            raise ProtocolError(f"a response head longer than {_MAX_HEAD} bytes")
        return None
    head = bytes(buf[:end])
    line_end = head.find(b"\r\n")
    status_line = head if line_end < 0 else head[:line_end]
    parts = status_line.split(b" ", 2)
    if len(parts) < 2 or not parts[0].startswith(b"HTTP/1.") or not parts[1].isdigit():
        raise ProtocolError(f"not an HTTP/1.x status line: {status_line[:80]!r}")
    status = int(parts[1])
    length: int | None = None
    chunked = False
    close = parts[0] == b"HTTP/1.0"
    gzip = False
    for name, raw in _FRAMING.findall(head.lower()):
        value = raw.strip()
        if name == b"content-encoding":
            gzip = value == b"gzip"
        elif name == b"content-length":
            if chunked:
                continue
            if not value.isdigit():
                raise ProtocolError(f"Content-Length {value[:40]!r}")
            length = int(value)
        elif name == b"transfer-encoding":
            chunked = value.endswith(b"chunked")
        else:
            close = b"close" in value
    if status in (204, 304) or 100 <= status < 200:
        length, chunked = 0, False
    if chunked:
        return _Head(status, end + 4, None, close, gzip=gzip)
    if length is None:
        return _Head(status, end + 4, None, True, until_close=True, gzip=gzip)
    return _Head(status, end + 4, length, close, gzip=gzip)


def _refuse_line_breaks(method: str, path: str, headers: dict[str, str]) -> NoReturn:
    """The error for a request whose line or headers hold a line break (a header's value is not
    shown: it may be a token)."""
    if any("\r" in text or "\n" in text for text in (method, path)):
        raise ValueError(f"a line break in the request line {method!r} {path!r}")
    for name, value in headers.items():
        if "\r" in name or "\n" in name or "\r" in value or "\n" in value:
            raise ValueError(f"a line break in header {name!r} of {method} {path}")
    raise ValueError(f"a line break in the request {method} {path}")  # the prefix or the host


def parse_chunked(buf: bytes | bytearray, start: int) -> tuple[bytes, int] | None:
    """The body in chunked coding from ``start`` of ``buf`` and where it ends; None while incomplete."""
    body = bytearray()
    pos = start
    while True:
        line_end = buf.find(b"\r\n", pos)
        if line_end < 0:
            return None
        size_field = bytes(buf[pos:line_end]).split(b";", 1)[0].strip()
        try:
            size = int(size_field, 16)
        except ValueError:
            raise ProtocolError(f"chunk size {size_field[:40]!r}") from None
        if size == 0:  # then trailer lines, each ending with CRLF, and an empty line
            if buf[line_end + 2 : line_end + 4] == b"\r\n":
                return bytes(body), line_end + 4
            trailers_end = buf.find(b"\r\n\r\n", line_end + 2)
            return None if trailers_end < 0 else (bytes(body), trailers_end + 4)
        data_end = line_end + 2 + size
        if len(buf) < data_end + 2:
            return None
        body += buf[line_end + 2 : data_end]
        pos = data_end + 2


def _decoded(head: _Head, body: bytes) -> bytes:
    """The body without its content coding (gzip: what the API server compresses large answers with
    when asked, as client-go asks)."""
    if not head.gzip:
        return body
    try:
        return zlib.decompress(body, 16 + zlib.MAX_WBITS)
    except zlib.error as exc:
        raise ProtocolError(f"a gzip body that does not decompress: {exc}") from None


class _Connection(asyncio.Protocol):
    """One keep-alive connection; a response completes the future of the request in flight."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.buffer = bytearray()
        self.head: _Head | None = None
        self.waiter: asyncio.Future[tuple[int, bytes]] | None = None
        self.closed = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # a Transport by contract; uvloop's TLS transport is one without subclassing asyncio's
        self.transport = cast(asyncio.Transport, transport)

    def send(self, data: bytes) -> asyncio.Future[tuple[int, bytes]]:
        assert self.transport is not None and self.waiter is None
        self.waiter = asyncio.get_running_loop().create_future()
        self.head = None
        self.transport.write(data)
        return self.waiter

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        if self.waiter is None:  # nothing asked: a server does not talk first
            self._fail(ProtocolError("data from the server with no request in flight"))
            return
        try:
            done = self._response()
        except ProtocolError as exc:
            self._fail(exc)
            return
        if done is None:
            return
        waiter, self.waiter = self.waiter, None
        if not waiter.done():
            waiter.set_result(done)

    def _response(self) -> tuple[int, bytes] | None:
        if self.head is None:
            self.head = parse_head(self.buffer)
            if self.head is None:
                return None
        head = self.head
        if head.until_close:
            return None  # complete when the connection ends (connection_lost)
        if head.length is None:
            if not self.buffer.endswith(b"\r\n\r\n"):
                return None  # a chunked body ends with an empty line: not parsed again until then
            parsed = parse_chunked(self.buffer, head.body_start)
            if parsed is None:
                return None
            body, end = parsed
        else:
            end = head.body_start + head.length
            if len(self.buffer) < end:
                return None
            body = bytes(self.buffer[head.body_start : end])
        del self.buffer[:end]
        if head.close or self.buffer:
            self.close()
        return head.status, _decoded(head, body)

    def _fail(self, exc: Exception) -> None:
        self.close()
        waiter, self.waiter = self.waiter, None
        if waiter is not None and not waiter.done():
            waiter.set_exception(exc)

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        head, waiter = self.head, self.waiter
        if exc is None and head is not None and head.until_close and waiter is not None:
            self.waiter = None
            if not waiter.done():
                try:
                    waiter.set_result((head.status, _decoded(head, bytes(self.buffer[head.body_start :]))))
                except ProtocolError as error:
                    waiter.set_exception(error)
            return
        answered = bool(self.buffer)
        self._fail(ServerClosed(f"the server closed the connection ({exc or 'EOF'})", answered))

    def close(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.close()


class Http1Pool:
    """Keep-alive connections to one API server (``host``:``port``, TLS when ``ssl_context``)."""

    def __init__(
        self,
        host: str,
        port: int,
        ssl_context: ssl.SSLContext | None,
        server_hostname: str | None = None,
        max_connections: int = 64,
        path_prefix: str = "",
    ) -> None:
        self.host = host
        self.port = port
        self.ssl_context = ssl_context
        self.server_hostname = server_hostname
        self.path_prefix = path_prefix
        """Prepended to every request's path (a server URL with a path, as behind a proxy)."""
        self._authority = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
        self._slots = asyncio.Semaphore(max_connections)
        self._idle: deque[_Connection] = deque()
        self._open: set[_Connection] = set()

    async def request(
        self,
        method: str,
        path: str,
        headers: dict[str, str],
        body: bytes | None,
        timeout: float | None = 10.0,
    ) -> tuple[int, bytes]:
        """Send one request; (HTTP status, body). ``timeout``: seconds for all of it, None for none.
        Raises ConnectionError (or TimeoutError) when no answer was read."""
        data = self._encode(method, path, headers, body)
        async with self._slots:
            async with asyncio.timeout(timeout):
                conn = self._take_idle()
                reused = conn is not None
                if conn is None:
                    conn = await self._connect()
                try:
                    result = await self._exchange(conn, data)
                except ServerClosed as exc:
                    if not reused or exc.answered:
                        raise
                    conn = await self._connect()  # closed while idle: once more, on a new one
                    result = await self._exchange(conn, data)
        return result

    async def _exchange(self, conn: _Connection, data: bytes) -> tuple[int, bytes]:
        try:
            result = await conn.send(data)
        except BaseException:
            conn.close()  # cancelled or failed mid-request: the connection's state is unknown
            self._open.discard(conn)
            raise
        if conn.closed:
            self._open.discard(conn)
        else:
            self._idle.append(conn)
        return result

    def _take_idle(self) -> _Connection | None:
        while self._idle:
            conn = self._idle.pop()
            if not conn.closed:
                return conn
            self._open.discard(conn)
        return None

    async def _connect(self) -> _Connection:
        """A new connection, within ``CONNECT_TIMEOUT`` even when the request has no timeout (nothing
        was sent yet, so giving up is safe)."""
        loop = asyncio.get_running_loop()
        extra: dict[str, Any] = {}
        if self.ssl_context is not None:
            extra = {"ssl": self.ssl_context, "server_hostname": self.server_hostname or self.host}
        async with asyncio.timeout(CONNECT_TIMEOUT):
            _, conn = await loop.create_connection(_Connection, self.host, self.port, **extra)
        self._open.add(conn)
        return conn

    def _encode(self, method: str, path: str, headers: dict[str, str], body: bytes | None) -> bytes:
        lines = [f"{method} {self.path_prefix}{path} HTTP/1.1", f"Host: {self._authority}"]
        lines += [f"{name}: {value}" for name, value in headers.items()]
        lines.append(f"Content-Length: {len(body) if body is not None else 0}")
        text = "\r\n".join(lines)
        if text.count("\n") != len(lines) - 1 or text.count("\r") != len(lines) - 1:
            _refuse_line_breaks(method, path, headers)
        head = (text + "\r\n\r\n").encode("latin-1")
        return head + body if body else head

    async def close(self) -> None:
        """Close every connection."""
        for conn in list(self._open):
            conn.close()
        self._open.clear()
        self._idle.clear()
        with contextlib.suppress(Exception):
            await asyncio.sleep(0)  # let the transports run their close callbacks
