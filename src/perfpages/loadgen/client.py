"""The generator's HTTP/1.1 client: kept-alive connections on asyncio protocols.

aiohttp's ClientSession cost about 60 µs of CPU per request in the generator (request and response
objects, its connector, stream readers, a writer per request), and at high rates that CPU, not
the subject, set the pace. Requests here are serialised once per template (`request_head`: the
very bytes aiohttp sends, its default headers included), written with one `transport.write`, and
a response is parsed just far enough to know its status and where its body ends (Content-Length,
chunked, or the connection's close), its body counted, never kept. What the generator configured
aiohttp to skip stays skipped: no redirects, no cookies, no decompression.
"""

from __future__ import annotations

import asyncio
import base64
import functools
import ssl
import time
from collections.abc import Mapping
from typing import NamedTuple

from aiohttp import ClientRequest
from aiohttp.http import SERVER_SOFTWARE
from multidict import CIMultiDict
from yarl import URL

from perfpages.loadgen.spec import FORBIDDEN

now_s = time.perf_counter

# aiohttp's rules: bodiless methods, methods given a default Content-Type, and those retried once
# when the connection fails before the response's head is in (RFC 9112 §9.3.1).
GET_METHODS = frozenset(ClientRequest.GET_METHODS)
POST_METHODS = frozenset(ClientRequest.POST_METHODS)
IDEMPOTENT = frozenset({"GET", "HEAD", "OPTIONS", "TRACE", "PUT", "DELETE"})
MAX_HEAD = 1 << 16  # a response head longer than this is an error


class HttpError(Exception):
    """The response was malformed or the connection failed during the request: error 'other'."""

    def __init__(self, what: str, *, before_head: bool = False) -> None:
        super().__init__(what)
        # The connection was lost before a response's head was in: a request that may be retried
        # (a malformed response may not).
        self.before_head = before_head


class ConnectError(HttpError):
    """No connection could be made (refused, unresolvable, TLS handshake): error 'connect'."""


class Origin(NamedTuple):
    """Where a connection goes: requests to the same origin share kept-alive connections."""

    host: str
    port: int
    tls: bool

    @classmethod
    def of(cls, url: URL) -> Origin:
        if not url.raw_host or url.port is None:
            raise HttpError(f"{url} has no host")
        return cls(url.raw_host, url.port, url.scheme == "https")


@functools.cache
def tls_context() -> ssl.SSLContext:
    """aiohttp's default (verifying) context; built before the load starts (it reads files)."""
    context = ssl.create_default_context()
    context.set_alpn_protocols(("http/1.1",))
    return context


def request_head(method: str, url: URL, headers: Mapping[str, str], body_length: str | None) -> str:
    """The request line and headers aiohttp's ClientRequest builds for these arguments, in its
    order: Host, the caller's headers, its defaults, Authorization from the URL, then the body's
    Content-Length and Content-Type. `body_length` is None without a body."""
    auth = None
    if url.raw_user is not None or url.raw_password is not None:
        # aiohttp's encoding of credentials in the URL (latin-1)
        creds = f"{url.user or ''}:{url.password or ''}".encode("latin1")
        auth = "Basic " + base64.b64encode(creds).decode("latin1")
        url = url.with_user(None)
    h: CIMultiDict[str] = CIMultiDict()
    h["Host"] = url.host_port_subcomponent or ""
    for key, value in headers.items():
        if key.lower() == "host":
            h[key] = value
        else:
            h.add(key, value)
    for key, value in ClientRequest.DEFAULT_HEADERS.items():
        if key not in h:
            h[key] = value
    if "User-Agent" not in h:
        h["User-Agent"] = SERVER_SOFTWARE
    if auth is not None:
        h["Authorization"] = auth
    if body_length is None:
        if method not in GET_METHODS and "Content-Length" not in h:
            h["Content-Length"] = "0"
    else:
        if "Content-Length" not in h:
            h["Content-Length"] = body_length
        if "Content-Type" not in h:  # a bytes payload's own header
            h["Content-Type"] = "application/octet-stream"
    if method in POST_METHODS and "Content-Type" not in h:
        h["Content-Type"] = "application/octet-stream"
    lines = [f"{method} {url.raw_path_qs} HTTP/1.1"] + [f"{k}: {v}" for k, v in h.items()]
    for line in lines:
        if FORBIDDEN.search(line):  # a Request refuses them; a filled value is an integer
            raise ValueError(f"a control character in the request head: {line!r}")
    return "\r\n".join(lines) + "\r\n\r\n"


# What a connection is reading (STRAY: a body sent after a HEAD's response, skipped).
IDLE, HEAD, LENGTH, CHUNK_SIZE, CHUNK_DATA, TRAILER, UNTIL_CLOSE, STRAY = range(8)


class Connection(asyncio.Protocol):
    """One kept-alive connection, one request at a time. `send()` writes a request and returns a
    future that gets the response's status once its body has been read to the end."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.transport: asyncio.Transport | None = None
        self.waiter: asyncio.Future[int] | None = None
        self.state = IDLE
        self.buffer = b""  # unparsed bytes: an incomplete head or chunk-size line
        self.remaining = 0  # body (or chunk, CRLF included) bytes still to come
        self.status = 0
        self.keep = True  # reusable after the current response
        self.no_body = False  # a HEAD request: the response has no body whatever it says
        self.closed = False
        self.sent = 0.0  # when the current request was handed to the socket
        self.got = 0  # bytes received since the current request was sent (heads, bodies)
        self.stray = 0  # the body length the last HEAD's response announced (may still come)
        self.tainted = False  # a HEAD's body came after all: not reused after this response

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def send(self, data: bytes, no_body: bool) -> asyncio.Future[int]:
        self.waiter = waiter = self.loop.create_future()
        self.state, self.buffer, self.no_body, self.keep, self.got = HEAD, b"", no_body, True, 0
        # Stamped before the write, as wrk does: on loopback the write may wake the server, which
        # can answer before this process reads the clock again.
        self.sent = now_s()
        self.transport.write(data)  # type: ignore[union-attr]
        return waiter

    def close(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.close()

    def data_received(self, data: bytes) -> None:
        n = len(data)
        self.got += n  # bytes off the wire for the current request: one add per read
        state = self.state
        if state == LENGTH:  # the usual case after the head: count the body, keep nothing
            self.remaining -= n
            if self.remaining <= 0:
                self.keep = self.keep and self.remaining == 0
                self._complete()
            return
        if state == IDLE:  # nothing was asked: the connection's state is unknown
            self.close()
            return
        try:
            self._parse(self.buffer + data if self.buffer else data)
        except (ValueError, IndexError) as exc:  # int() of a malformed field, a short line
            self._fail(HttpError(f"malformed response: {exc}"))
            self.close()
        except HttpError as exc:
            self._fail(exc)
            self.close()

    def _parse(self, data: bytes) -> None:
        """Walk `data` by offset: a read holding many small chunks is never copied per chunk
        (slicing off the rest after each one made the cost grow with read size × chunks); only
        an incomplete line at its end is kept for the next read."""
        at, size = 0, len(data)
        while True:
            state = self.state
            if state == HEAD:
                if self.stray and not self._skip_stray(data, at):
                    self.buffer = data[at:]  # too few bytes to tell a body from a status line
                    return
                if self.state == STRAY:
                    continue
                end = data.find(b"\r\n\r\n", at)
                if end < 0:
                    if size - at > MAX_HEAD:
                        raise HttpError("response head too long")
                    self.buffer = data[at:]
                    return
                head, at = data[at:end], end + 4
                if not self._head(head):
                    continue  # an interim 1xx: its final response follows
            elif state == LENGTH:
                self.remaining -= size - at
                if self.remaining <= 0:
                    self.keep = self.keep and self.remaining == 0
                    self._complete()
                else:
                    self.buffer = b""
                return
            elif state == CHUNK_SIZE:
                end = data.find(b"\r\n", at)
                if end < 0:
                    if size - at > MAX_HEAD:
                        raise HttpError("chunk-size line too long")
                    self.buffer = data[at:]
                    return
                line = data[at:end]
                at = end + 2
                if chunk := int(line.split(b";", 1)[0].strip(), 16):
                    self.state, self.remaining = CHUNK_DATA, chunk + 2
                else:
                    self.state = TRAILER
            elif state in (CHUNK_DATA, STRAY):
                if size - at < self.remaining:
                    self.remaining -= size - at
                    self.buffer = b""
                    return
                at += self.remaining
                self.state = CHUNK_SIZE if state == CHUNK_DATA else HEAD
                continue
            elif state == TRAILER:
                end = data.find(b"\r\n", at)
                if end < 0:
                    self.buffer = data[at:]
                    return
                empty, at = end == at, end + 2
                if empty:
                    self.keep = self.keep and at == size
                    self._complete()
                    return
            elif state == UNTIL_CLOSE:
                self.buffer = b""
                return
            else:  # IDLE: bytes after the response's end
                self.close()
                return
            if state == HEAD and self.state == IDLE:
                if at < size:  # more than the response: the connection cannot be trusted
                    self.close()
                return

    def _skip_stray(self, data: bytes, at: int) -> bool:
        """After a HEAD whose response announced a body: is what follows that body (which some
        servers, waitress among them, send anyway) or this response? False: too few bytes yet."""
        start = data[at:at + 7]
        if len(start) < 7 and b"HTTP/1.".startswith(start):
            return False
        if start != b"HTTP/1.":  # the body: skipped, and the connection not reused after
            self.state, self.remaining, self.tainted = STRAY, self.stray, True
        self.stray = 0
        return True

    def _head(self, head: bytes) -> bool:
        """Read a response's head; False for an interim 1xx response, to be skipped."""
        code = head[9:12]
        if head[:7] != b"HTTP/1." or head[8:9] != b" " or not code.isdigit():
            raise HttpError(f"not an HTTP/1.x status line: {head[:80]!r}")
        status = int(code)
        if 100 <= status < 200 and status != 101:
            return False
        fields = head.lower()  # one search per header name, none per header
        connection = _field(fields, b"\r\nconnection:")
        if head[7:8] == b"0":
            self.keep = connection is not None and b"keep-alive" in connection
        else:
            self.keep = connection is None or b"close" not in connection
        if self.tainted:
            self.keep = False
        self.status = status
        encoding = _field(fields, b"\r\ntransfer-encoding:")
        if self.no_body and status >= 200 and status not in (204, 304):
            self._head_body(encoding, _field(fields, b"\r\ncontent-length:"))
        if self.no_body or status < 200 or status in (204, 304):
            self._complete()
            return True
        if encoding is not None and b"chunked" in encoding:
            self.state = CHUNK_SIZE
        elif (length := _field(fields, b"\r\ncontent-length:")) is not None:
            self.remaining = int(length)
            if self.remaining < 0:
                raise HttpError(f"negative Content-Length {self.remaining}")
            if self.remaining == 0:
                self._complete()
            else:
                self.state = LENGTH
        else:  # the body runs until the server closes the connection
            self.keep, self.state = False, UNTIL_CLOSE
        return True

    def _head_body(self, encoding: bytes | None, length: bytes | None) -> None:
        """A HEAD's response announced a body, which it must not send; some servers send it
        anyway, after the head, where it would be read as the next response: a body of known
        length is looked for there and skipped, a chunked one cannot be, so its connection
        closes."""
        if encoding is not None and b"chunked" in encoding:
            self.keep = False
        elif length is not None and length.isdigit():
            self.stray = int(length)

    def _complete(self) -> None:
        self.state, self.buffer = IDLE, b""
        waiter, self.waiter = self.waiter, None
        if not self.keep:
            self.close()
        if waiter is not None and not waiter.done():
            waiter.set_result(self.status)

    def _fail(self, exc: HttpError) -> None:
        self.state, self.buffer = IDLE, b""
        waiter, self.waiter = self.waiter, None
        if waiter is not None and not waiter.done():
            waiter.set_exception(exc)

    def eof_received(self) -> bool:
        if self.state == UNTIL_CLOSE:
            self._complete()
        elif self.state != IDLE:
            self._fail(HttpError("server disconnected", before_head=self.state in (HEAD, STRAY)))
        self.closed = True
        return False  # close the transport

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        if self.state == UNTIL_CLOSE and exc is None:
            self._complete()
        elif self.state != IDLE:
            self._fail(HttpError(f"connection lost ({exc or 'closed'})",
                                 before_head=self.state in (HEAD, STRAY)))


def _field(fields: bytes, name: bytes) -> bytes | None:
    """A header's value from a lowercased head (name with its leading CRLF and colon)."""
    at = fields.find(name)
    if at < 0:
        return None
    start = at + len(name)
    end = fields.find(b"\r\n", start)
    return fields[start:].strip() if end < 0 else fields[start:end].strip()


async def connect(origin: Origin) -> Connection:
    loop = asyncio.get_running_loop()
    try:
        _, conn = await loop.create_connection(
            lambda: Connection(loop), origin.host, origin.port,
            ssl=tls_context() if origin.tls else None)
    except OSError as exc:  # refused, unresolvable, a failed TLS handshake
        raise ConnectError(f"{type(exc).__name__}: {exc}") from exc
    return conn


async def fetch(conns: dict[Origin, Connection], origin: Origin, data: bytes, no_body: bool,
                idempotent: bool) -> Connection:
    """Send one request over a kept-alive connection to `origin` (one made if none is open) and
    wait for the whole response: the connection returned has its `status` and `sent` time. Like
    aiohttp, an idempotent request is sent once more, on a new connection, if the connection
    fails before a response's head arrives (the server may have closed a kept-alive one)."""
    retry = idempotent
    while True:
        conn = conns.get(origin)
        if conn is None or conn.closed:
            conns[origin] = conn = await connect(origin)
        try:
            await conn.send(data, no_body)
            return conn
        except HttpError as exc:
            conn.close()
            if not (retry and exc.before_head):
                raise
            retry = False
        except BaseException:  # cancelled (timed out): the connection's state is unknown
            conn.close()
            raise
