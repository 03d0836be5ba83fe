"""The load generator's HTTP/1.1 client: the bytes aiohttp would send, responses framed right."""

from __future__ import annotations

import asyncio
import contextlib
import random
import socket
import threading
import tracemalloc
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import pytest
from multidict import CIMultiDict

from perfpages import Load, Request
from perfpages.loadgen.client import Connection, HttpError
from perfpages.loadgen.generator import run
from perfpages.loadgen.template import Template


async def _capture(send: Callable[[str], Any]) -> bytes:
    """The bytes of one request `send(base_url)` makes, answered with an empty 200."""
    got: list[bytes] = []

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        length = [line.split(b":", 1)[1] for line in head.lower().split(b"\r\n")
                  if line.startswith(b"content-length:")]
        got.append(head + (await reader.readexactly(int(length[0])) if length else b""))
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    async with server:
        await send(f"127.0.0.1:{server.sockets[0].getsockname()[1]}")
    return got[0]


async def _aiohttp_bytes(method: str, url: str, headers: dict[str, str] | None,
                         body: bytes | None) -> tuple[str, bytes]:
    """What the generator used to hand aiohttp for a filled template, as sent, and the server's
    address (ADDR in `url`)."""
    addr: list[str] = []

    async def send(at: str) -> None:
        addr.append(at)
        async with aiohttp.ClientSession(cookie_jar=aiohttp.DummyCookieJar(),
                                         auto_decompress=False) as session, session.request(
                method, url.replace("ADDR", at), headers=CIMultiDict(headers) if headers else None,
                data=body, allow_redirects=False) as resp:
            await resp.read()
    sent = await _capture(send)
    return addr[0], sent


# (template, what aiohttp was given once filled) with one-value ranges, so the fill is known.
CASES = [
    (Request("http://ADDR/"), ("GET", "http://ADDR/", None, None)),
    (Request("http://ADDR/a b/ü?x=1&y=a b#frag"),
     ("GET", "http://ADDR/a b/ü?x=1&y=a b#frag", None, None)),
    (Request("http://ADDR/item/{aid}?k={aid}&q=[1]", method="post",
             headers={"X-API-Key": "k-{aid}"}, json={"id": "{aid}", "note": "key {aid}"},
             fill={"aid": (42, 42)}),
     ("POST", "http://ADDR/item/42?k=42&q=[1]",
      {"X-API-Key": "k-42", "Content-Type": "application/json"}, b'{"id":42,"note":"key 42"}')),
    (Request("http://ADDR/x/{a}/{b}", method="DELETE", fill={"a": (-7, -7), "b": (12, 12)}),
     ("DELETE", "http://ADDR/x/-7/12", None, None)),
    (Request("http://ADDR/p", method="PUT", json=[1, 2]),
     ("PUT", "http://ADDR/p", {"Content-Type": "application/json"}, b"[1,2]")),
    (Request("http://ADDR/h", method="HEAD", headers={"host": "other.example"}),
     ("HEAD", "http://ADDR/h", {"host": "other.example"}, None)),
    (Request("http://user:pa%20ss@ADDR/auth", method="OPTIONS"),
     ("OPTIONS", "http://user:pa%20ss@ADDR/auth", None, None)),
    (Request("http://ADDR/f#{n}", method="PATCH", fill={"n": (3, 3)}),  # cut impossible
     ("PATCH", "http://ADDR/f#3", None, None)),
]


@pytest.mark.parametrize(("req", "given"), CASES)
def test_requests_are_the_bytes_aiohttp_sends(
        req: Request, given: tuple[str, str, dict[str, str] | None, bytes | None]) -> None:
    addr, expected = asyncio.run(_aiohttp_bytes(*given))
    req = Request(req.url.replace("ADDR", addr), method=req.method, headers=req.headers,
                  json=req.json, fill=req.fill)
    assert Template(req).make(random.Random(0))[1] == expected


class _Transport:
    def __init__(self) -> None:
        self.written: list[bytes] = []
        self.closed = False

    def write(self, data: bytes) -> None:
        self.written.append(data)

    def close(self) -> None:
        self.closed = True


@contextlib.contextmanager
def _connection() -> Iterator[Connection]:
    """A connection on a loop of its own, writing nowhere: responses are fed to it by hand."""
    loop = asyncio.new_event_loop()
    try:
        conn = Connection(loop)
        conn.connection_made(_Transport())  # type: ignore[arg-type]
        yield conn
    finally:
        loop.close()


def _feed(response: bytes, step: int, no_body: bool = False) -> tuple[Connection, Any]:
    with _connection() as conn:
        waiter = conn.send(b"GET / HTTP/1.1\r\n\r\n", no_body)
        for at in range(0, len(response), step):
            conn.data_received(response[at:at + step])
        return conn, waiter


CHUNKED = (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
           b"5;ext=1\r\nhello\r\n1A\r\n" + b"z" * 26 + b"\r\n0\r\nX-Trailer: t\r\n\r\n")


@pytest.mark.parametrize("step", [1, 3, 1000])
@pytest.mark.parametrize(("response", "status", "keep", "no_body"), [
    (b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello", 200, True, False),
    (CHUNKED, 200, True, False),
    (b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\ncontent-length: 0\r\n\r\n", 201,
     True, False),
    (b"HTTP/1.1 204 No Content\r\n\r\n", 204, True, False),
    (b"HTTP/1.1 200 OK\r\nContent-Length: 99\r\n\r\n", 200, True, True),  # HEAD
    (b"HTTP/1.1 302 Found\r\nLocation: /x\r\nConnection: close\r\nContent-Length: 0\r\n\r\n",
     302, False, False),
    (b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok", 200, False, False),
    (b"HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\nContent-Length: 2\r\n\r\nok", 200, True,
     False),
])
def test_responses_end_where_their_framing_says(response: bytes, status: int, keep: bool,
                                                no_body: bool, step: int) -> None:
    conn, waiter = _feed(response, step, no_body)
    assert waiter.done() and waiter.result() == status
    assert conn.closed == (not keep)


def test_a_body_until_close_ends_with_the_connection() -> None:
    conn, waiter = _feed(b"HTTP/1.1 200 OK\r\n\r\nsome body", 4)
    assert not waiter.done()
    conn.eof_received()
    assert waiter.result() == 200 and conn.closed


@pytest.mark.parametrize("response", [b"SSH-2.0-OpenSSH\r\n\r\n", b"HTTP/1.1 OK\r\n\r\n",
                                      b"HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n"])
def test_a_malformed_response_is_an_error_not_retried(response: bytes) -> None:
    conn, waiter = _feed(response, 1000)
    assert isinstance(waiter.exception(), HttpError) and not waiter.exception().before_head
    assert conn.closed


def test_a_connection_lost_mid_response_may_be_retried_only_before_the_head() -> None:
    conn, waiter = _feed(b"HTTP/1.1 200 OK\r\nContent-Le", 1000)
    conn.connection_lost(None)
    assert waiter.exception().before_head  # type: ignore[union-attr]
    conn, waiter = _feed(b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nabc", 1000)
    conn.connection_lost(ConnectionResetError())
    assert not waiter.exception().before_head  # type: ignore[union-attr]


CHUNKED_HEAD = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
# 200 KB in 4,003 chunks and a trailer, as its frames: the server sends them in one write
FRAMES = [b"%x\r\n" % n + b"y" * n + b"\r\n" for n in [50] * 4000 + [7, 1, 300]] + [
    b"0\r\nX-Trailer: t\r\n\r\n"]
SMALL_CHUNKS = CHUNKED_HEAD + b"".join(FRAMES)
FIXED = b"HTTP/1.1 200 OK\r\nContent-Length: 11\r\nX-Pad: " + b"p" * 77 + b"\r\n\r\nhello world"
HEAD_WITH_BODY = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n", b"hello"


@dataclass
class Odd:
    base: str
    heads: list[bytes] = field(default_factory=list)  # every request's head as received
    written: int = 0  # bytes of every response
    connections: int = 0


@pytest.fixture
def odd_server() -> Iterator[Odd]:
    """A raw server answering by path: chunked a byte at a time, 100 Continue first, a body
    that ends with the connection, thousands of small chunks in one write, a fixed response, or
    a HEAD answered with a body (sent apart from its head, as waitress may)."""
    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        odd.connections += 1

        def write(data: bytes) -> None:
            odd.written += len(data)
            writer.write(data)

        while True:
            try:
                head = await reader.readuntil(b"\r\n\r\n")
            except (asyncio.IncompleteReadError, ConnectionError):
                break
            odd.heads.append(head)
            path = head.split(b" ")[1]
            if path == b"/chunked":
                for i in range(len(CHUNKED)):
                    write(CHUNKED[i:i + 1])
                    await writer.drain()
            elif path == b"/continue":
                write(b"HTTP/1.1 100 Continue\r\n\r\n")
                await writer.drain()
                write(b"HTTP/1.1 404 Not Found\r\nContent-Length: 1\r\n\r\nx")
            elif path == b"/small":
                write(SMALL_CHUNKS)
            elif path == b"/fixed":
                write(FIXED)
            elif path == b"/head":
                write(HEAD_WITH_BODY[0])
                await writer.drain()
                await asyncio.sleep(0.002)  # the client has sent its next request by now
                write(HEAD_WITH_BODY[1])
            else:
                write(b"HTTP/1.1 200 OK\r\n\r\nuntil close")
                await writer.drain()
                writer.close()
                break
            await writer.drain()

    loop = asyncio.new_event_loop()
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    odd = Odd(f"http://127.0.0.1:{sock.getsockname()[1]}")
    ready = threading.Event()

    def serve() -> None:
        asyncio.set_event_loop(loop)
        loop.run_until_complete(asyncio.start_server(handle, sock=sock))
        ready.set()
        loop.run_forever()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    ready.wait(10)
    yield odd
    loop.call_soon_threadsafe(loop.stop)
    thread.join(10)


def test_the_generator_counts_odd_but_valid_responses(odd_server: Odd) -> None:
    base = odd_server.base
    total = run(Load([Request(f"{base}/chunked"), Request(f"{base}/continue"),
                      Request(f"{base}/close")], duration_s=0.5, callers=3)).total()
    assert total.error_count == 0 and total.requests == total.responses > 10
    assert total.codes["200"] > 0 and total.codes["404"] > 0


def test_small_chunks_in_big_reads_are_walked_not_copied() -> None:
    """Thousands of 50-byte chunks arriving in 64 KiB reads: the response is framed right, and
    parsing a read allocates next to nothing (copying the rest of the read after each chunk,
    as the parser once did, allocates about the read's size at once, and its cost grows with
    read size × chunks)."""
    reads, read = [], b""  # whole chunks per read: no line left over to join to the next
    for frame in FRAMES:
        read += frame
        if len(read) >= 1 << 16:
            reads.append(read)
            read = b""
    reads.append(read)
    assert len(reads) == 4 and CHUNKED_HEAD + b"".join(reads) == SMALL_CHUNKS
    with _connection() as conn:
        waiter = conn.send(b"GET / HTTP/1.1\r\n\r\n", False)
        conn.data_received(CHUNKED_HEAD)
        tracemalloc.start()
        try:
            peaks = []
            for data in reads:
                tracemalloc.reset_peak()
                before = tracemalloc.get_traced_memory()[0]
                conn.data_received(data)
                peaks.append(tracemalloc.get_traced_memory()[1] - before)
        finally:
            tracemalloc.stop()
        assert max(peaks) < 4096, peaks  # a copy of a read's rest would be > 60,000 bytes
        assert waiter.result() == 200 and not conn.closed
    for step in (1 << 16, 4093, 2):  # and split anywhere, across chunk lines and trailers
        conn, waiter = _feed(SMALL_CHUNKS, step)
        assert waiter.result() == 200 and not conn.closed


def test_a_head_answered_with_a_body_poisons_nothing_and_is_not_reused() -> None:
    head, body = HEAD_WITH_BODY
    after = b"HTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\nok"
    for split in (0, 2, 5):  # the body in one read, or across two, before the next response
        with _connection() as conn:
            first = conn.send(b"HEAD / HTTP/1.1\r\n\r\n", True)
            conn.data_received(head)
            assert first.result() == 200 and not conn.closed
            second = conn.send(b"GET / HTTP/1.1\r\n\r\n", False)
            for data in (body[:split], body[split:] + after):
                if data:
                    conn.data_received(data)
            assert second.result() == 201 and conn.closed  # read right, then not reused
    conn, waiter = _feed(head + b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", 1000, True)
    assert waiter.result() == 200 and conn.closed  # the next bytes in its read: closed too


def test_a_head_answered_without_a_body_keeps_its_connection() -> None:
    with _connection() as conn:
        conn.send(b"HEAD / HTTP/1.1\r\n\r\n", True)
        conn.data_received(HEAD_WITH_BODY[0])
        second = conn.send(b"GET / HTTP/1.1\r\n\r\n", False)
        conn.data_received(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
        assert second.result() == 200 and not conn.closed


def test_a_head_with_a_body_against_a_real_server(odd_server: Odd) -> None:
    base = odd_server.base
    result = run(Load([Request(f"{base}/head", method="HEAD"), Request(f"{base}/fixed")],
                      duration_s=0.5, callers=2))
    total = result.total()
    assert total.error_count == 0 and total.requests == total.codes["200"] == len(
        odd_server.heads) > 10
    heads = sum(h.startswith(b"HEAD ") for h in odd_server.heads)
    assert heads > 3 and odd_server.connections > 2  # those bodies' connections not reused


def test_bytes_per_call_are_what_went_over_the_wire(odd_server: Odd) -> None:
    req = Request(f"{odd_server.base}/fixed", headers={"X-Note": "n" * 50})
    result = run(Load([req], duration_s=0.5, window_s=0.25, callers=2))
    total = result.total()
    assert total.requests == total.codes["200"] == len(odd_server.heads) > 10
    sent = Template(req).make(random.Random(0))[1]
    assert set(odd_server.heads) == {sent}
    assert total.sent_bytes == len(sent) * total.requests
    assert total.received_bytes == odd_server.written == len(FIXED) * total.requests
    windows = result.to_windows("b", "v1", 1, {})
    assert len(windows) == 2
    for w in windows:
        assert w.metrics["sent_bytes"] == float(len(sent))
        assert w.metrics["received_bytes"] == float(len(FIXED))
    odd_server.written = 0
    small = run(Load([Request(f"{odd_server.base}/small")], duration_s=0.3, callers=2)).total()
    assert small.error_count == 0 and small.requests > 2
    assert small.received_bytes == odd_server.written == len(SMALL_CHUNKS) * small.requests
    assert small.metrics(False)["received_bytes"] == float(len(SMALL_CHUNKS))
