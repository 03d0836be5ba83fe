"""The Locust engine (`perfpages.loadgen.locust`) against a real local HTTP server over real
sockets: its windows count what the server counted, its merged per-worker histograms are the
histogram of every request, its windows have the built-in generator's shape, and nothing it
started outlives it (not even when its caller is SIGKILLed).

Marked `network`: the first use installs Locust from PyPI into its own venv (about 30 s).
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import psutil
import pytest

from perfpages import Load, Request
from perfpages.archive.histogram import Latency
from perfpages.errors import PerfpagesError
from perfpages.loadgen import generator
from perfpages.loadgen import locust as engine
from perfpages.loadgen.generator import merge_parts
from perfpages.processes import free_port
from perfpages.tools.locust import LOCUSTFILE

pytestmark = pytest.mark.network
SRC = Path(__file__).resolve().parent.parent / "src"


class Server:
    """Keep-alive HTTP/1.1 on asyncio in a thread: / answers 200, /fail 500, /hang never; it
    counts every request it read, by path, and keeps the query values and bodies."""

    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()
        self.queries: list[int] = []
        self.bodies: list[object] = []
        self.loop = asyncio.new_event_loop()
        ready = threading.Event()
        self.thread = threading.Thread(target=self._run, args=(ready,), daemon=True)
        self.thread.start()
        ready.wait()

    def _run(self, ready: threading.Event) -> None:
        asyncio.set_event_loop(self.loop)
        server = self.loop.run_until_complete(
            self.loop.create_server(lambda: _Http(self), "127.0.0.1", 0))
        self.port = server.sockets[0].getsockname()[1]
        ready.set()
        self.loop.run_forever()
        server.close()

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=5)


class _Http(asyncio.Protocol):
    def __init__(self, server: Server) -> None:
        self.server, self.buffer = server, b""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport: asyncio.Transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        while (end := self.buffer.find(b"\r\n\r\n")) >= 0:
            head = self.buffer[:end].decode("latin-1").split("\r\n")
            fields = dict(line.split(": ", 1) for line in head[1:] if ": " in line)
            length = int({k.lower(): v for k, v in fields.items()}.get("content-length", 0))
            if len(self.buffer) < end + 4 + length:
                return
            at = end + 4 + length
            body, self.buffer = self.buffer[end + 4:at], self.buffer[at:]
            target = head[0].split(" ")[1]
            path = urlsplit(target).path
            self.server.counts[path] += 1
            self.server.queries += [int(v) for v in parse_qs(urlsplit(target).query).get("k", [])]
            if body:
                self.server.bodies.append(json.loads(body))
            if path == "/hang":
                continue
            status = b"500 Internal Server Error" if path == "/fail" else b"200 OK"
            self.transport.write(b"HTTP/1.1 " + status + b"\r\nContent-Length: 2\r\n\r\nok")


@pytest.fixture
def server() -> Iterator[Server]:
    s = Server()
    yield s
    s.stop()


def locust_children() -> list[psutil.Process]:
    found = []
    for proc in psutil.Process().children(recursive=True):
        try:
            if str(LOCUSTFILE) in " ".join(proc.cmdline()) and proc.status() != "zombie":
                found.append(proc)
        except psutil.NoSuchProcess:
            pass
    return found


def mixed(server: Server) -> list[Request]:
    return [Request(server.url("/?k={k}"), fill={"k": (1, 50)}, weight=3),
            Request(server.url("/post"), method="POST", json={"id": "{k}", "tag": "x{k}"},
                    headers={"X-Key": "k{k}"}, fill={"k": (100, 199)}),
            Request(server.url("/fail"))]


@pytest.mark.parametrize("workers", [1, 2])
def test_closed_loop_counts_what_the_server_counted_and_merges_exactly(
        server: Server, workers: int) -> None:
    load = Load(mixed(server), duration_s=2, warmup_s=0.5, callers=4, seed=3)
    parts = engine.run_parts(load, workers=workers, raw=True)
    assert not locust_children()
    result = merge_parts(load, parts)
    assert len(parts) == workers and result.loop == "locust"
    # Every request a worker sent was answered before it reported (users send none after the
    # end, and the report waits for the last one): the counts match exactly.
    total = result.total()
    assert result.warmup is not None
    assert total.requests + result.warmup.requests == server.counts.total()
    answered = total.codes + result.warmup.codes
    assert answered == Counter({"200": server.counts["/"] + server.counts["/post"],
                                "500": server.counts["/fail"]})
    assert total.errors.total() == 0 and min(server.counts.values()) > 0
    assert set(server.queries) <= set(range(1, 51))
    assert all(isinstance(b, dict) and 100 <= b["id"] <= 199 and b["tag"] == f"x{b['id']}"
               for b in server.bodies)
    # The merged per-worker windows against one histogram of every latency measured.
    reference = Latency()
    for part in parts:
        for us in part["raw_us"]:
            reference.record_us(us)
    merged = total.latency
    assert merged.count == reference.count == total.responses
    ps = [50.0, 90.0, 99.0, 99.9, 100.0]
    assert merged.percentiles_ms(ps) == reference.percentiles_ms(ps)
    assert merged.summary_ms() == reference.summary_ms()
    assert [w.index for w in result.windows] == [0, 1]


def test_windows_have_the_built_in_generators_shape(server: Server) -> None:
    load = Load([Request(server.url("/"))], duration_s=1, warmup_s=0.5, callers=2)
    ours = engine.run(load, workers=1)
    theirs = generator.run(load)
    for a, b in zip(ours.to_windows("b", "l", 0, {"c": 2}), theirs.to_windows("b", "l", 0,
                                                                              {"c": 2}),
                    strict=True):
        assert (a.kind, a.window, a.duration_s, a.params) == (b.kind, b.window, b.duration_s,
                                                              b.params)
        uncounted = {"sent_bytes", "received_bytes"}  # Locust's workers do not count bytes
        assert set(a.metrics) == set(b.metrics) - uncounted
        assert set(a.codes) == set(b.codes) == {"200"}
    assert set(json.loads(ours.diagnostics_json())) == set(json.loads(theirs.diagnostics_json()))


def test_open_loop_paces_users_and_keeps_the_service_histograms(server: Server) -> None:
    load = Load([Request(server.url("/"))], duration_s=2, rate=60, callers=3)
    result = engine.run(load, workers=1)
    total = result.total()
    assert total.requests == server.counts.total() == total.responses
    # Each user's nominal timetable starts within one period of the start: offered is the
    # rate's, give or take one request per user.
    assert abs(total.offered - 60 * 2) <= 3
    assert total.service.count == total.lag.count == total.latency.count
    assert {"offered_rate", "achieved_rate", "service_p99_ms", "dispatch_lag_p50_ms"} <= set(
        result.windows[0].metrics(True))


def test_errors_are_counted_by_kind(server: Server) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        closed = sock.getsockname()[1]  # bound, never listening: refused
        refused = engine.run(Load([Request(f"http://127.0.0.1:{closed}/")], duration_s=0.5,
                                  callers=1), workers=1).total()
    assert refused.requests > 0 and refused.errors == Counter(connect=refused.requests)
    hung = engine.run(Load([Request(server.url("/hang"))], duration_s=1, callers=2,
                           timeout_s=0.3), workers=1).total()
    assert hung.requests == server.counts["/hang"] > 0
    assert hung.errors == Counter(timeout=hung.requests) and not hung.codes


def test_a_remote_worker_from_the_perfpages_command(server: Server) -> None:
    port = free_port("127.0.0.1")
    load = Load([Request(server.url("/"))], duration_s=1, callers=2)
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    remote = subprocess.Popen([sys.executable, "-P", "-m", "perfpages", "loadgen.worker",
                               "--master", f"127.0.0.1:{port}", "--once"], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        parts = engine.run_parts(load, workers=1, expect_remote=1, master_port=port)
        assert remote.wait(timeout=30) == 0
    finally:
        remote.kill()
        remote.wait()
    result = merge_parts(load, parts)
    assert len(parts) == 2 and result.total().requests == server.counts.total()
    assert "waiting for a perfpages load from 127.0.0.1" in (remote.stdout.read()
                                                             if remote.stdout else "")


def test_bad_settings_are_one_line_errors(server: Server) -> None:
    load = Load([Request(server.url("/"))], duration_s=1, callers=2)
    with pytest.raises(PerfpagesError, match="2 callers cannot be shared by 3 workers"):
        engine.run(load, workers=3)
    with pytest.raises(PerfpagesError, match="no poisson"):
        engine.run(Load([Request(server.url("/"))], duration_s=1, rate=10, arrivals="poisson"))
    with pytest.raises(PerfpagesError, match="is not HOST"):
        engine.parse_master("host:port")
    assert engine.parse_master("[::1]:6000") == ("::1", 6000)
    assert engine.parse_master("example") == ("example", 5557)


def test_nothing_outlives_a_sigkilled_caller(server: Server, tmp_path: Path) -> None:
    code = (f"from perfpages import Load, Request\nfrom perfpages.loadgen import locust\n"
            f"locust.run(Load([Request({server.url('/')!r})], duration_s=60, callers=2), "
            f"workers=2)\n")
    caller = subprocess.Popen([sys.executable, "-P", "-c", code], cwd=tmp_path,
                              env={**os.environ, "PYTHONPATH": str(SRC)})
    try:
        deadline = time.monotonic() + 60
        while len(children := _locust_of(caller.pid)) < 3:  # the master and two workers
            assert caller.poll() is None and time.monotonic() < deadline, "Locust never started"
            time.sleep(0.2)
        while server.counts.total() == 0:  # loading the subject
            assert time.monotonic() < deadline, "no request arrived"
            time.sleep(0.2)
    finally:
        caller.send_signal(signal.SIGKILL)
        caller.wait()
    _, alive = psutil.wait_procs(children, timeout=30)
    assert not alive, [p.pid for p in alive]


def _locust_of(pid: int) -> list[psutil.Process]:
    try:
        kids = psutil.Process(pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return []
    return [p for p in kids if str(LOCUSTFILE) in " ".join(_cmdline(p))]


def _cmdline(proc: psutil.Process) -> list[str]:
    try:
        return proc.cmdline()
    except psutil.Error:
        return []


@pytest.mark.postgres
def test_a_block_on_locust_archives_the_same_windows_and_names_its_engine(
        tmp_path: Path) -> None:
    """`HttpBlockSpec(engine="locust", workers=1)` through `perfpages bench.run`: the windows
    are the generator's shape, only run.json says which engine made them."""
    import shutil

    from perfpages.archive.reader import open_run, verify

    root = Path(__file__).resolve().parent.parent
    bench = tmp_path / "bench"
    shutil.copytree(root / "benchmarks" / "tinyhttp", bench / "tinyhttp")
    source = (root / "benchmarks" / "tinyhttp.py").read_text()
    source = source.replace('title="Items and failures")',
                            'title="Items and failures", engine="locust", workers=1)')
    assert 'engine="locust"' in source
    (bench / "tinyhttp.py").write_text(source)
    (tmp_path / "pyproject.toml").write_text(
        '[tool.perfpages]\nsuites = "bench"\nresults = "results"\n')
    done = subprocess.run([sys.executable, "-m", "perfpages", "bench.run", "--suite", "tinyhttp",
                           "--blocks", "calls", "--rounds", "1", "--labels", "fast"],
                          cwd=tmp_path, capture_output=True, text=True,
                          env={**os.environ, "COLUMNS": "200"})
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    run_dir = next((tmp_path / "results").iterdir())
    assert verify(run_dir) == []
    run = open_run(run_dir)
    assert run.manifest.blocks["calls"].engine.startswith("locust 2.")
    assert run.manifest.blocks["calls"].engine.endswith(", 1 local worker")
    codes = {w.params["call"]: set(w.codes) for w in run.measured if w.requests}
    assert codes == {"item": {"200"}, "fail": {"500"}}
    assert all(w.latency is not None for w in run.measured if w.requests)
    assert [w for w in run.floors if w.params.get("floor") == "health"]  # perfpages' own
