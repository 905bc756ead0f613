"""The small HTTP/1.1 client against a scripted server on a loopback port: how it reads bodies,
reuses and replaces connections, and fails."""

from __future__ import annotations

import asyncio
import gzip
import ssl
import time
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ksched.client import http1
from ksched.client.http1 import Http1Pool, ProtocolError, ServerClosed, parse_chunked, parse_head

Reply = Callable[[bytes], bytes | None]
"""What the server sends for one request (its head and body); None: close without answering."""


class ScriptedServer:
    """Answers each request with the next reply of ``replies`` (the last one repeats)."""

    def __init__(self, replies: list[Reply]) -> None:
        self.replies = replies
        self.requests: list[bytes] = []
        self.connections = 0
        self.writers: list[asyncio.StreamWriter] = []

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        self.writers.append(writer)
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = next(
                    int(line.split(b":")[1])
                    for line in head.split(b"\r\n")
                    if line.lower().startswith(b"content-length:")
                )
                request = head + await reader.readexactly(length)
                self.requests.append(request)
                reply = self.replies[min(len(self.requests) - 1, len(self.replies) - 1)](request)
                if reply is None:
                    writer.close()
                    return
                writer.write(reply)
                await writer.drain()
                if b"connection: close" in reply.partition(b"\r\n\r\n")[0].lower():
                    writer.close()
                    return
        except (asyncio.IncompleteReadError, ConnectionError):
            writer.close()


Start = Callable[[list[Reply]], Awaitable[tuple[ScriptedServer, Http1Pool]]]


def plain(status: int, body: bytes, extra: str = "") -> Reply:
    return lambda _: f"HTTP/1.1 {status} X\r\nContent-Length: {len(body)}\r\n{extra}\r\n".encode() + body


@pytest.fixture
async def serve() -> AsyncIterator[Start]:
    servers: list[asyncio.Server] = []
    pools: list[Http1Pool] = []

    async def start(replies: list[Reply]) -> tuple[ScriptedServer, Http1Pool]:
        script = ScriptedServer(replies)
        server = await asyncio.start_server(script.handle, "127.0.0.1", 0)
        servers.append(server)
        port = server.sockets[0].getsockname()[1]
        pool = Http1Pool("127.0.0.1", port, None, max_connections=4, path_prefix="/prefix")
        pools.append(pool)
        return script, pool

    yield start
    for pool in pools:
        await pool.close()
    for server in servers:
        server.close()


async def test_a_body_with_content_length_and_the_request_sent(serve: Start) -> None:
    script, pool = await serve([plain(201, b'{"kind":"Status"}')])
    status, body = await pool.request("POST", "/api/v1/x", {"Authorization": "Bearer t"}, b'{"a":1}')
    assert (status, body) == (201, b'{"kind":"Status"}')
    head, _, sent = script.requests[0].partition(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    assert lines[0] == b"POST /prefix/api/v1/x HTTP/1.1"
    assert b"Authorization: Bearer t" in lines and b"Content-Length: 7" in lines
    assert any(line.startswith(b"Host: 127.0.0.1:") for line in lines)
    assert sent == b'{"a":1}'


async def test_a_chunked_body_with_trailers(serve: Start) -> None:
    chunked = (
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nabcd\r\n3;x=y\r\nefg\r\n0\r\nT: 1\r\n\r\n"
    )
    _, pool = await serve([lambda _: chunked])
    assert await pool.request("GET", "/", {}, None) == (200, b"abcdefg")
    assert await pool.request("GET", "/", {}, None) == (200, b"abcdefg")  # and the connection reused


def _gzip(data: bytes) -> bytes:
    return gzip.compress(data, mtime=0)


async def test_a_gzip_body_is_decompressed_whatever_its_framing(serve: Start) -> None:
    """As the API server sends a LIST over 128 KiB to a client that asks for gzip: chunked, here
    cut anywhere; with a length; and one that is not gzip at all is an error, not a body."""
    document = b'{"kind":"PodList","items":[' + b",".join([b'{"a":1}'] * 5000) + b"]}"
    packed = _gzip(document)
    chunks = b"".join(
        b"%x\r\n%s\r\n" % (len(packed[i : i + 700]), packed[i : i + 700]) for i in range(0, len(packed), 700)
    )
    replies: list[Reply] = [
        lambda _: (
            b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n\r\n"
            + chunks
            + b"0\r\n\r\n"
        ),
        plain(200, packed, "Content-Encoding: gzip\r\n"),
        plain(200, b"not gzip", "Content-Encoding: gzip\r\n"),
    ]
    _, pool = await serve(replies)
    assert await pool.request("GET", "/", {"Accept-Encoding": "gzip"}, None) == (200, document)
    assert await pool.request("GET", "/", {"Accept-Encoding": "gzip"}, None) == (200, document)
    with pytest.raises(ProtocolError, match="gzip"):
        await pool.request("GET", "/", {"Accept-Encoding": "gzip"}, None)


async def test_keep_alive_reuses_one_connection_and_connection_close_ends_it(serve: Start) -> None:
    script, pool = await serve(
        [plain(200, b"a"), plain(200, b"b", "Connection: close\r\n"), plain(200, b"c")]
    )
    assert [await pool.request("GET", "/", {}, None) for _ in range(3)] == [
        (200, b"a"),
        (200, b"b"),
        (200, b"c"),
    ]
    assert script.connections == 2


async def test_a_connection_the_server_closed_while_idle_is_replaced_and_the_request_sent_again(
    serve: Start,
) -> None:
    script, pool = await serve([plain(200, b"first"), lambda _: None, plain(200, b"again")])
    assert await pool.request("POST", "/", {}, b"1") == (200, b"first")
    # the server drops the kept-alive connection as the second request arrives, before answering
    assert await pool.request("POST", "/", {}, b"2") == (200, b"again")
    assert script.connections == 2 and len(script.requests) == 3


async def test_a_new_connection_closed_before_an_answer_is_an_error_not_a_repeat(serve: Start) -> None:
    script, pool = await serve([lambda _: None])
    with pytest.raises(ServerClosed) as failure:
        await pool.request("POST", "/", {}, b"1")
    assert not failure.value.answered and len(script.requests) == 1


async def test_a_connection_closed_mid_answer_is_never_repeated(serve: Start) -> None:
    def half(_: bytes) -> bytes | None:
        script.writers[-1].write(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc")
        return None

    script, pool = await serve([plain(200, b"ok"), half])
    await pool.request("POST", "/", {}, b"1")
    with pytest.raises(ServerClosed) as failure:
        await pool.request("POST", "/", {}, b"2")
    assert failure.value.answered and len(script.requests) == 2


async def test_a_timeout_closes_the_connection(serve: Start) -> None:
    _, pool = await serve([lambda _: b""])  # never answers
    with pytest.raises(TimeoutError):
        await pool.request("GET", "/", {}, None, timeout=0.2)
    assert not pool._open and not pool._idle


async def test_a_reply_that_is_not_http_fails_the_request(serve: Start) -> None:
    _, pool = await serve([lambda _: b"SSH-2.0-OpenSSH\r\n\r\n"])
    with pytest.raises(ProtocolError, match="not an HTTP"):
        await pool.request("GET", "/", {}, None)


async def test_a_header_with_a_line_break_is_refused_before_sending(serve: Start) -> None:
    script, pool = await serve([plain(200, b"")])
    with pytest.raises(ValueError, match="line break in header 'Authorization'") as refused:
        await pool.request("GET", "/", {"Authorization": "Bearer a\r\nX-Injected: 1"}, None)
    assert "Bearer" not in str(refused.value)  # a credential is never put in an error
    assert script.requests == []


async def test_a_body_that_ends_with_the_connection(serve: Start) -> None:
    script, pool = await serve([lambda _: b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nuntil the end"])
    assert await pool.request("GET", "/", {}, None) == (200, b"until the end")
    assert await pool.request("GET", "/", {}, None) == (200, b"until the end")  # a new connection
    assert script.connections == 2


async def test_a_connection_that_never_completes_its_handshake_times_out(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A bind has no timeout (its outcome must not be guessed), but opening its connection has one."""
    silent = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)  # accepts, never speaks TLS
    port = silent.sockets[0].getsockname()[1]
    monkeypatch.setattr(http1, "CONNECT_TIMEOUT", 0.3)
    pool = Http1Pool("127.0.0.1", port, ssl.create_default_context())
    try:
        started = time.monotonic()
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(pool.request("POST", "/", {}, b"{}", timeout=None), 5.0)
        assert time.monotonic() - started < 2.0  # the connect timeout, not the test's own 5 s
    finally:
        await pool.close()
        silent.close()


async def test_requests_work_on_uvloop() -> None:
    """uvloop's transports are not asyncio's classes; the client takes them as they are."""
    uvloop = pytest.importorskip("uvloop")

    async def on_uvloop() -> tuple[int, bytes]:
        script = ScriptedServer([plain(200, b"uv")])
        server = await asyncio.start_server(script.handle, "127.0.0.1", 0)
        pool = Http1Pool("127.0.0.1", server.sockets[0].getsockname()[1], None)
        try:
            return await pool.request("GET", "/", {}, None)
        finally:
            await pool.close()
            server.close()

    result = await asyncio.get_running_loop().run_in_executor(None, uvloop.run, on_uvloop())
    assert result == (200, b"uv")


def test_parse_head_fields() -> None:
    head = parse_head(b"HTTP/1.1 204 No Content\r\nContent-Length: 5\r\n\r\n")
    assert head is not None and (head.status, head.length, head.close) == (204, 0, False)
    raw = b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok"
    head = parse_head(raw)
    assert head is not None and (head.length, head.close, head.body_start) == (2, True, len(raw) - 2)
    assert parse_head(b"HTTP/1.1 200 OK\r\nContent-Le") is None
    with pytest.raises(ProtocolError, match="Content-Length"):
        parse_head(b"HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n")


def test_parse_head_framing_headers() -> None:
    head = parse_head(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, Chunked\r\nContent-Length: x\r\n\r\n")
    assert head is not None and (head.length, head.until_close) == (None, False)  # chunked wins
    head = parse_head(b"HTTP/1.1 200 OK\r\nX-Content-Length: 3\r\nconnection :  Close\r\n\r\n")
    assert head is not None and (head.length, head.close, head.until_close) == (None, True, True)
    head = parse_head(
        b"HTTP/1.1 200 OK\r\nConnection: close\r\nConnection: keep-alive\r\nContent-Length:7\r\n\r\n"
    )
    assert head is not None and (head.length, head.close) == (7, False)  # the last one counts


def _reference_head(buf: bytes) -> tuple[int, int, int | None, bool, bool] | str:
    """parse_head read line by line, every header split at its first colon (the model)."""
    end = buf.find(b"\r\n\r\n")
    lines = buf[:end].split(b"\r\n")
    parts = lines[0].split(b" ", 2)
    if len(parts) < 2 or not parts[0].startswith(b"HTTP/1.") or not parts[1].isdigit():
        return "status line"
    status, length, chunked, close = int(parts[1]), None, False, parts[0] == b"HTTP/1.0"
    for line in lines[1:]:
        name, _, value = line.partition(b":")
        name, value = name.strip(b" \t\v\f").lower(), value.strip().lower()
        if name == b"content-length" and not chunked:
            if not value.isdigit():
                return "Content-Length"
            length = int(value)
        elif name == b"transfer-encoding":
            chunked = value.endswith(b"chunked")
        elif name == b"connection":
            close = b"close" in value
    if status in (204, 304) or 100 <= status < 200:
        length, chunked = 0, False
    if chunked:
        return (status, end + 4, None, close, False)
    if length is None:
        return (status, end + 4, None, True, True)
    return (status, end + 4, length, close, False)


_HEADER_LINES = st.lists(
    st.tuples(
        st.sampled_from(
            [
                "Content-Length",
                "content-length ",
                "Transfer-Encoding",
                "Connection",
                " connection",
                "X-Other",
                "Content-Type",
            ]
        ),
        st.sampled_from(["5", " 12 ", "x", "chunked", "gzip, chunked", "close", "keep-alive", "Close", ""]),
    ),
    max_size=6,
)


@given(
    status=st.sampled_from(
        [
            b"HTTP/1.1 200 OK",
            b"HTTP/1.0 201 Created",
            b"HTTP/1.1 204 No Content",
            b"HTTP/2 200",
            b"HTTP/1.1 1xx",
        ]
    ),
    headers=_HEADER_LINES,
)
def test_parse_head_reads_as_the_line_by_line_model(status: bytes, headers: list[tuple[str, str]]) -> None:
    raw = status + b"".join(f"\r\n{n}:{v}".encode() for n, v in headers) + b"\r\n\r\nbody"
    expected = _reference_head(raw)
    if isinstance(expected, str):
        with pytest.raises(ProtocolError, match=expected):
            parse_head(raw)
        return
    head = parse_head(raw)
    assert head is not None
    assert (head.status, head.body_start, head.length, head.close, head.until_close) == expected


def test_parse_chunked_waits_for_every_part() -> None:
    whole = b"3\r\nabc\r\n0\r\n\r\n"
    for cut in range(len(whole)):
        assert parse_chunked(whole[:cut], 0) is None, cut
    assert parse_chunked(whole, 0) == (b"abc", len(whole))
    with pytest.raises(ProtocolError, match="chunk size"):
        parse_chunked(b"zz\r\n", 0)
