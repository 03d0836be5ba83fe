"""The load generator's HTTP/1.1 client: the bytes aiohttp would send, responses framed right."""

from __future__ import annotations

import asyncio
import random
import socket
import threading
from collections.abc import Callable, Iterator
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


def _feed(response: bytes, step: int, no_body: bool = False) -> tuple[Connection, Any]:
    loop = asyncio.new_event_loop()
    try:
        conn = Connection(loop)
        conn.connection_made(_Transport())  # type: ignore[arg-type]
        waiter = conn.send(b"GET / HTTP/1.1\r\n\r\n", no_body)
        for at in range(0, len(response), step):
            conn.data_received(response[at:at + step])
        return conn, waiter
    finally:
        loop.close()


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


@pytest.fixture
def odd_server() -> Iterator[str]:
    """A raw server answering by path: chunked a byte at a time, 100 Continue first, or a body
    that ends with the connection."""
    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while True:
            try:
                head = await reader.readuntil(b"\r\n\r\n")
            except (asyncio.IncompleteReadError, ConnectionError):
                break
            path = head.split(b" ")[1]
            if path == b"/chunked":
                for i in range(len(CHUNKED)):
                    writer.write(CHUNKED[i:i + 1])
                    await writer.drain()
            elif path == b"/continue":
                writer.write(b"HTTP/1.1 100 Continue\r\n\r\n")
                await writer.drain()
                writer.write(b"HTTP/1.1 404 Not Found\r\nContent-Length: 1\r\n\r\nx")
            else:
                writer.write(b"HTTP/1.1 200 OK\r\n\r\nuntil close")
                await writer.drain()
                writer.close()
                break
            await writer.drain()

    loop = asyncio.new_event_loop()
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    ready = threading.Event()

    def serve() -> None:
        asyncio.set_event_loop(loop)
        loop.run_until_complete(asyncio.start_server(handle, sock=sock))
        ready.set()
        loop.run_forever()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    ready.wait(10)
    yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    loop.call_soon_threadsafe(loop.stop)
    thread.join(10)


def test_the_generator_counts_odd_but_valid_responses(odd_server: str) -> None:
    total = run(Load([Request(f"{odd_server}/chunked"), Request(f"{odd_server}/continue"),
                      Request(f"{odd_server}/close")], duration_s=0.5, callers=3)).total()
    assert total.error_count == 0 and total.requests == total.responses > 10
    assert total.codes["200"] > 0 and total.codes["404"] > 0
