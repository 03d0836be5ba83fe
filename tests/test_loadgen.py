"""The HTTP load generator against a real local aiohttp server that counts what it receives."""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import itertools
import json
import socket
import statistics
import threading
from collections import Counter
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path

import pytest
from aiohttp import web

from perfpages import Load, Request
from perfpages.archive.histogram import Latency
from perfpages.archive.manifest import Label, Manifest, Method, Pin
from perfpages.archive.reader import open_run
from perfpages.archive.writer import ArchiveWriter
from perfpages.errors import PerfpagesError
from perfpages.loadgen.generator import SAMPLES_HEADER, run
from perfpages.run.machine import harness
from perfpages.testing import MACHINE


class Server:
    """aiohttp.web in a thread on 127.0.0.1, an ephemeral port; counts every request by path."""

    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()
        self.keys: list[str] = []
        self.bodies: list[object] = []
        self.api_keys: list[str | None] = []
        self.peers: set[object] = set()  # client addresses: one per connection
        self.loop = asyncio.new_event_loop()
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.base = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.ready = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)

    @web.middleware
    async def _count(self, request: web.Request, handler):  # type: ignore[no-untyped-def]
        self.counts[request.path.split("/")[1]] += 1  # 404s included
        return await handler(request)

    def _app(self) -> web.Application:
        lock = asyncio.Lock()

        async def ok(_: web.Request) -> web.Response:
            return web.Response(text="ok")

        async def fail(_: web.Request) -> web.Response:
            return web.Response(status=500, text="boom")

        async def slow(_: web.Request) -> web.Response:
            async with lock:  # one at a time, 50 ms each: capacity 20 requests a second
                await asyncio.sleep(0.05)
            return web.Response(text="slow")

        async def moved(_: web.Request) -> web.Response:
            raise web.HTTPFound("/ok")

        async def hang(_: web.Request) -> web.Response:
            await asyncio.sleep(0.6)
            return web.Response(text="late")

        async def item(request: web.Request) -> web.Response:
            self.keys.append(request.match_info["aid"])
            self.api_keys.append(request.headers.get("X-API-Key"))
            if request.can_read_body:
                self.bodies.append(await request.json())
            return web.Response(text="item")

        async def big(request: web.Request) -> web.Response:
            self.peers.add(request.transport.get_extra_info("peername"))  # type: ignore[union-attr]
            return web.Response(body=b"x" * 300_000)

        async def chunked(request: web.Request) -> web.StreamResponse:
            self.peers.add(request.transport.get_extra_info("peername"))  # type: ignore[union-attr]
            response = web.StreamResponse()
            response.enable_chunked_encoding()
            await response.prepare(request)
            for _ in range(3):
                await response.write(b"y" * 10_000)
                await asyncio.sleep(0.001)
            await response.write_eof()
            return response

        app = web.Application(middlewares=[self._count])
        app.add_routes([web.get("/ok", ok), web.get("/fail", fail), web.get("/slow", slow),
                        web.get("/hang", hang), web.get("/moved", moved), web.get("/big", big),
                        web.get("/chunked", chunked),
                        web.route("*", "/item/{aid}", item)])
        return app

    def _serve(self) -> None:
        asyncio.set_event_loop(self.loop)
        runner = web.AppRunner(self._app(), access_log=None)
        self.loop.run_until_complete(runner.setup())
        self.loop.run_until_complete(web.SockSite(runner, self.sock).start())
        self.ready.set()
        self.loop.run_forever()
        self.loop.run_until_complete(runner.cleanup())

    def __enter__(self) -> Server:
        self.thread.start()
        self.ready.wait(10)
        return self

    def __exit__(self, *_: object) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)


@pytest.fixture
def server() -> Iterator[Server]:
    with Server() as srv:
        yield srv


def test_closed_loop_counts_match_the_servers_own_count(server: Server) -> None:
    load = Load([Request(f"{server.base}/ok", weight=3), Request(f"{server.base}/fail"),
                 Request(f"{server.base}/missing"), Request(f"{server.base}/moved")],
                duration_s=1.0, window_s=0.5, callers=4)
    result = run(load)
    assert result.loop == ("uvloop" if importlib.util.find_spec("uvloop") else "asyncio")
    total = result.total()
    assert total.codes["200"] == server.counts["ok"] > 0
    assert total.codes["500"] == server.counts["fail"] > 0
    assert total.codes["404"] == server.counts["missing"] > 0
    assert total.codes["302"] == server.counts["moved"] > 0  # counted, not followed
    assert total.codes["200"] > total.codes["500"]  # weights 3:1
    assert total.requests == sum(server.counts.values()) and total.error_count == 0
    assert total.latency.count == total.requests
    windows = result.to_windows("callers", "v1", 1, {"callers": 4})
    assert [w.window for w in windows] == [0, 1]
    assert sum(w.requests or 0 for w in windows) == total.requests
    assert all(w.metrics["non_2xx"] == sum(w.codes.get(c, 0) for c in ("302", "404", "500"))
               for w in windows)
    assert result.total().metrics(False)["generator_cpu_pct"] > 0  # type: ignore[operator]


def test_bodies_large_and_chunked_are_read_whole_over_kept_alive_connections(
        server: Server) -> None:
    load = Load([Request(f"{server.base}/big"), Request(f"{server.base}/chunked")],
                duration_s=0.5, callers=3)
    total = run(load).total()
    assert total.codes["200"] == server.counts["big"] + server.counts["chunked"]
    assert server.counts["big"] > 3 and server.counts["chunked"] > 3
    assert total.error_count == 0 and total.requests == total.codes["200"]
    assert len(server.peers) <= 3  # each connection kept alive for the next request


def test_templates_fill_keys_headers_and_json_bodies(server: Server) -> None:
    req = Request(f"{server.base}/item/{{aid}}", method="post", headers={"X-API-Key": "k-1"},
                  json={"id": "{aid}", "note": "key {aid}"}, fill={"aid": (1, 50)})
    result = run(Load([req], duration_s=0.5, callers=2, seed=7, uvloop=False))
    assert result.loop == "asyncio"
    assert result.total().codes["200"] == len(server.keys) > 10
    assert {int(k) for k in server.keys} <= set(range(1, 51)) and len(set(server.keys)) > 5
    assert set(server.api_keys) == {"k-1"}
    for body in server.bodies:  # an exact "{aid}" string becomes the integer itself
        assert isinstance(body, dict) and isinstance(body["id"], int)
        assert body["note"] == f"key {body['id']}"


def test_open_loop_latency_runs_from_the_intended_start(server: Server) -> None:
    # The endpoint serves one request at a time in 50 ms (20/s); 40/s are offered for 1 s.
    load = Load([Request(f"{server.base}/slow")], duration_s=1.0, rate=40, callers=4,
                drop_after_s=0.3, samples=True)
    result = run(load)
    total = result.total()
    assert abs(total.offered - 40) <= 1  # the timetable is kept, however slow the answers
    assert total.requests + total.drops == total.offered
    assert total.responses == server.counts["slow"] == total.requests
    assert total.drops > 0 and result.achieved_rate < load.offered_rate  # type: ignore[operator]
    # Corrected latency = the wait for a connection + service time: a queue that grows.
    assert total.latency.percentile_ms(99) > total.service.percentile_ms(99)
    assert total.lag.percentile_ms(99) > 0
    rows = [line.split(",") for line in result.samples_csv().splitlines()[1:]]
    assert len(rows) == total.requests
    latency = [float(r[1]) for r in rows if r[3] == "200"]
    quarter = len(latency) // 4
    assert statistics.median(latency[-quarter:]) > statistics.median(latency[:quarter])
    diagnostics = json.loads(result.diagnostics_json())
    assert diagnostics["mode"] == "open" and diagnostics["offered_rate"] == 40
    service = Latency.merged(Latency.decode(w["service"]) for w in diagnostics["windows"])
    assert service.count == total.service.count == total.responses
    metrics = result.to_windows("load", "v1", 1, {"rate": 40})[0].metrics
    assert {"offered_rate", "achieved_rate", "drops", "service_p99_ms",
            "dispatch_lag_p99_ms"} <= set(metrics)


def test_sharding_merges_counts_across_processes(server: Server) -> None:
    closed = run(Load([Request(f"{server.base}/ok")], duration_s=0.5, callers=4, processes=2))
    assert len(closed.cpu_s) == 2
    assert closed.total().codes["200"] == server.counts["ok"] > 0
    server.counts.clear()
    opened = run(Load([Request(f"{server.base}/ok")], duration_s=0.5, rate=200, callers=8,
                      processes=2, samples=True))
    total = opened.total()
    assert abs(total.offered - 100) <= 2  # both processes' interleaved timetables
    assert total.codes["200"] == server.counts["ok"] == total.requests - total.error_count
    assert _gaps_cv(opened.samples_csv()) < 0.05  # together: one even timetable


def _gaps_cv(samples: str) -> float:
    """Coefficient of variation of the gaps between intended starts."""
    starts = sorted(float(line.split(",")[0]) for line in samples.splitlines()[1:])
    gaps = [b - a for a, b in itertools.pairwise(starts)]
    return statistics.pstdev(gaps) / statistics.mean(gaps)


def test_poisson_arrivals_are_irregular(server: Server) -> None:
    load = Load([Request(f"{server.base}/ok")], duration_s=0.5, rate=200, callers=8,
                arrivals="poisson", seed=3, samples=True)
    result = run(load)
    assert _gaps_cv(result.samples_csv()) > 0.5  # exponential gaps: about 1


def test_connection_errors_and_timeouts_are_counted(server: Server) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed_port = s.getsockname()[1]  # nothing listens here once the socket is closed
    result = run(Load([Request(f"http://127.0.0.1:{closed_port}/"),
                       Request(f"{server.base}/hang")], duration_s=0.3, callers=2, timeout_s=0.2))
    total = result.total()
    assert total.errors["connect"] > 0 and total.errors["timeout"] > 0
    assert not total.codes and total.latency.count == 0
    assert total.requests == total.error_count


def _raw_server(handle: Callable[[asyncio.StreamReader, asyncio.StreamWriter],
                                 Awaitable[None]]) -> str:
    """An asyncio server on an ephemeral port, in a daemon thread for the rest of the test
    session: its base URL."""
    ready = threading.Event()
    port: list[int] = []

    async def serve() -> None:
        server = await asyncio.start_server(handle, "127.0.0.1", 0)
        port.append(server.sockets[0].getsockname()[1])
        ready.set()
        await server.serve_forever()

    threading.Thread(target=lambda: asyncio.run(serve()), daemon=True).start()
    assert ready.wait(10)
    return f"http://127.0.0.1:{port[0]}"


def test_open_loop_sends_nothing_after_its_end_and_drops_its_backlog() -> None:
    """A server that reads requests and never answers, 2 connections, 8/s for 3 s, timeout
    2 s: each connection sends its first request, times out at about 2 s, sends the oldest
    request still within drop_after_s (due 1.75 s before), and times out again after the
    end, when it sends nothing more. So 4 requests reach the server, whatever the machine's
    speed (every margin is hundreds of milliseconds); the other 20 of the 24 are dropped, and
    counted in the windows they were due in."""
    received: list[bytes] = []

    async def never_answer(reader: asyncio.StreamReader, _: asyncio.StreamWriter) -> None:
        with contextlib.suppress(asyncio.IncompleteReadError, ConnectionError):
            while True:
                received.append(await reader.readuntil(b"\r\n\r\n"))

    load = Load([Request(f"{_raw_server(never_answer)}/")], duration_s=3.0, rate=8, callers=2,
                timeout_s=2.0, drop_after_s=2.5, samples=True)
    result = run(load)
    total = result.total()
    assert total.offered == 24 and total.requests == 4 == len(received)
    assert total.errors["timeout"] == 4 and total.drops == 20 and not total.codes
    assert sum(w.drops for w in result.windows) == 20
    rows = [line.split(",") for line in result.samples_csv().splitlines()[1:]]
    sent_at = [float(at) + (float(latency) - float(service)) / 1000.0
               for at, latency, service, *_ in rows]
    assert len(sent_at) == 4 and max(sent_at) < load.duration_s  # nothing after the end


def test_a_server_closing_kept_alive_connections_loses_no_request() -> None:
    """A server that answers as if keeping the connection, then closes it: aiohttp opens a new
    one for the next request, so nothing is counted as an error and nothing is lost."""
    served: list[int] = []

    async def answer_once(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        served.append(1)
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
        await writer.drain()
        writer.close()

    total = run(Load([Request(f"{_raw_server(answer_once)}/")], duration_s=0.5, callers=2)).total()
    assert total.requests > 0 and total.error_count == 0
    assert total.codes["200"] == total.requests == len(served)


def test_cold_path_samples_and_windows_archive(server: Server, tmp_path: Path) -> None:
    result = run(Load([Request(f"{server.base}/ok")], duration_s=0.5, window_s=0.5, callers=1,
                      warmup_s=0.2, samples=True))
    cold = result.cold_path()
    lines = result.samples_csv().splitlines()
    assert lines[0] + "\n" == SAMPLES_HEADER and len(lines) - 1 == cold["requests"]
    rows = [[float(v) for v in line.split(",")[:2]] for line in lines[1:]]
    assert max(ms for _, ms in rows) == pytest.approx(cold["slowest_ms"], abs=1e-3)
    assert any(abs(at - cold["slowest_at_s"]) < 1e-5 for at, _ in rows)  # type: ignore[operator]
    manifest = Manifest(id="2026-11-30-loadgen", suite="loadgen", title="loadgen test",
                        scope="test", status="running", started="2026-11-30T10:00:00Z",
                        command="pytest", harness=harness(), machine=MACHINE,
                        labels={"v1": Label("v1", Pin("none"))}, method=Method(rounds=1))
    label = "v1"
    with ArchiveWriter.create(tmp_path, manifest) as writer:
        for window in result.to_windows("one-caller", label, 1, {"callers": 1}):
            writer.append(window)
        writer.write_file("samples/one-caller/v1-1.csv", result.samples_csv())
        writer.finish("complete")
    archived = open_run(tmp_path / manifest.id)
    kinds = [w.kind for w in archived.windows]
    assert kinds == ["warmup", "measure"]
    assert archived.measured[0].requests == cold["requests"]
    assert json.loads(json.dumps(archived.measured[0].metrics))["slowest_ms"] > 0


@pytest.mark.parametrize(("make", "key"), [
    (lambda: Request("localhost:8000/x"), "request.url"),
    (lambda: Request("ftp://host/x"), "request.url"),
    (lambda: Request("http://h/x", method="FETCH"), "request.method"),
    (lambda: Request("http://h/x/{aid}"), "request.fill.aid"),
    (lambda: Request("http://h/x", fill={"aid": (1, 5)}), "request.fill.aid"),
    (lambda: Request("http://h/{aid}", fill={"aid": (5, 1)}), "request.fill.aid"),
    (lambda: Request("http://h/", weight=0), "request.weight"),
    (lambda: Request("http://h/", headers={"X-A": "a\r\nX-Injected: 1"}), "request.headers.X-A"),
    (lambda: Request("http://h/", headers={"X-B": "a\nb"}), "request.headers.X-B"),
    (lambda: Request("http://h/", headers={"X\r\nC": "v"}), "request.headers"),
    (lambda: Load([Request("http://h/")], duration_s=1, rate=0), "load.rate"),
    (lambda: Load([Request("http://h/")], duration_s=1, rate=-5), "load.rate"),
    (lambda: Load([Request("http://h/")], duration_s=0), "load.duration_s"),
    (lambda: Load([], duration_s=1), "load.requests"),
    (lambda: Load([Request("http://h/")], duration_s=1, share=0.5), "load.share"),
    (lambda: Load([Request("http://h/")], duration_s=1, rate=5, share=0.5, capacity=9),
     "load.rate"),
    (lambda: Load([Request("http://h/")], duration_s=1, callers=1, processes=2), "load.callers"),
    (lambda: Load([Request("http://h/")], duration_s=1, callers=0), "load.callers"),
    (lambda: Load([Request("http://h/")], duration_s=1, rate=10, arrivals="bursty"),
     "load.arrivals"),
])
def test_bad_configuration_is_one_line(make, key: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(PerfpagesError) as info:
        make()
    assert info.value.key == key and "\n" not in str(info.value) and " — " in str(info.value)


def test_share_of_capacity_sets_the_offered_rate() -> None:
    load = Load([Request("http://h/")], duration_s=1, share=0.75, capacity=892, callers=8)
    assert load.open_loop and load.offered_rate == pytest.approx(669)
    assert not Load([Request("http://h/")], duration_s=1).open_loop


def test_batched_recording_equals_recording_one_by_one() -> None:
    from perfpages.loadgen.worker import _record_all

    values = [0, 1, 1, 250, 250, 251, 4_000_000_000, -3, 1_234_567]  # zero, negative, too big
    one_by_one, batched = Latency(), Latency()
    for us in values:
        one_by_one.record_us(max(us, 1.0))
    _record_all(batched, values)
    assert batched.encode() == one_by_one.encode() and batched.count == len(values)
    assert batched.clamped == one_by_one.clamped == 1
