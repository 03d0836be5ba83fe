"""A database across a network: the delay proxy, and round trips per call read from latency
against the delay, on a subject whose round trips are known (1, 2 and 3 statements a call)."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from perfpages.analysis.decision import Cell
from perfpages.analysis.roundtrips import least_squares, round_trips
from perfpages.archive.reader import open_run, verify
from perfpages.errors import AnalysisError, PerfpagesError
from perfpages.run.delay import DelayProxy
from perfpages.run.suite import HttpCase
from sites import Failed, build_site

ROOT = Path(__file__).resolve().parent.parent
ENV = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "COLUMNS": "200"}


def proxies() -> list[int]:
    """Delay proxies started by this test session (they inherit its TMPDIR)."""
    found = []
    for p in psutil.process_iter(["cmdline"]):
        if "perfpages.run.delay" in (p.info["cmdline"] or []):
            with contextlib.suppress(psutil.Error):
                if p.environ().get("TMPDIR") == os.environ.get("TMPDIR"):
                    found.append(p.pid)
    return found


@pytest.fixture
def echo() -> Iterator[int]:
    """A TCP echo server: one answer for each message, as a database answers a statement."""
    server = socket.create_server(("127.0.0.1", 0))

    def serve() -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return

            def answer(c: socket.socket = conn) -> None:
                with c:
                    while data := c.recv(100):
                        c.sendall(data)

            threading.Thread(target=answer, daemon=True).start()

    threading.Thread(target=serve, daemon=True).start()
    yield int(server.getsockname()[1])
    server.close()


def exchange(port: int, times: int) -> None:
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        for _ in range(times):
            sock.sendall(b"q")
            assert sock.recv(10) == b"q"


# ---- the proxy -----------------------------------------------------------------------------

def test_the_proxy_counts_round_trips_and_measures_what_it_added(echo: int) -> None:
    with DelayProxy() as proxy:
        proxy.route("127.0.0.1", echo)
        proxy.set(0)
        exchange(proxy.port, 20)
        direct = proxy.hops()
        proxy.set(3)
        exchange(proxy.port, 20)
        held = proxy.hops()
    assert direct.turns == held.turns == 20 and direct.connections == held.connections == 1
    assert direct.chunks_up == held.chunks_up == 20
    # A hold is never shorter than the delay: 3 ms each way is at least 6 ms a round trip.
    assert held.added_rtt_ms is not None and held.added_rtt_ms >= 6.0
    assert direct.added_rtt_ms is not None and direct.added_rtt_ms < held.added_rtt_ms
    assert proxies() == []


def test_the_proxy_dies_with_the_run_even_after_sigkill(tmp_path: Path) -> None:
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time; from perfpages.run.delay import DelayProxy; "
                               "p = DelayProxy(); print(p.process.pid, flush=True); "
                               "time.sleep(60)"],
        stdout=subprocess.PIPE, text=True, cwd=tmp_path)
    assert holder.stdout is not None
    pid = int(holder.stdout.readline())
    assert psutil.pid_exists(pid)
    holder.send_signal(signal.SIGKILL)
    holder.wait()
    deadline = time.monotonic() + 10
    while psutil.pid_exists(pid) and time.monotonic() < deadline:
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)
        time.sleep(0.05)
    alive = psutil.pid_exists(pid) and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    assert not alive


def test_a_case_refuses_a_delay_out_of_range() -> None:
    with pytest.raises(PerfpagesError, match="delay_ms=-1 is not between 0 and 1000"):
        HttpCase({"call": "x"}, lambda turn: None, delay_ms=-1)
    case = HttpCase({"call": "x"}, lambda turn: None, delay_ms=0.5)
    assert case.params == {"call": "x", "delay_ms": 0.5}  # the delay is a dimension
    assert HttpCase({"call": "x"}, lambda turn: None, delay_ms=2).params["delay_ms"] == 2


# ---- the slope -----------------------------------------------------------------------------

def test_least_squares_reads_the_slope_of_a_line() -> None:
    assert least_squares([0, 1, 2, 4], [0.5, 3.5, 6.5, 12.5]) == pytest.approx(3.0)
    with pytest.raises(AnalysisError, match="same round-trip time"):
        least_squares([1, 1], [2, 3])


def test_round_trips_are_a_cell_of_one_slope_per_round() -> None:
    # Two rounds: 2 round trips in the first, 3 in the second, on 0.4 ms of work.
    points = [(d, Cell((0.4 + 2 * a, 0.4 + 3 * a)), Cell((a, a)))
              for d, a in ((0, 0.1), (1, 2.2), (2, 4.3), (4, 8.5))]
    trips = round_trips(list(reversed(points)))
    assert trips.delays == (0, 1, 2, 4)
    assert trips.slope.values == pytest.approx((2.0, 3.0))
    assert trips.within(2, tolerance=1.1) and not trips.within(2)
    with pytest.raises(AnalysisError, match="two delays or more"):
        round_trips(points[:1])
    with pytest.raises(AnalysisError, match="different numbers of rounds"):
        round_trips([*points[:3], (4, Cell((1.0,)), Cell((8.5,)))])


# ---- end to end: the tiny database suite through `invoke bench.run` -----------------------

@pytest.fixture(scope="module")
def network_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    results = tmp_path_factory.mktemp("results")
    done = subprocess.run([sys.executable, "-m", "invoke", "bench.run", "--suite", "tinydb",
                           "--rounds", "1", "--results", str(results)], cwd=ROOT,
                          capture_output=True, text=True,
                          env=ENV)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return next(results.iterdir())


@pytest.mark.postgres
def test_the_subject_reaches_postgres_through_the_delay(network_run: Path) -> None:
    run = open_run(network_run)
    assert verify(network_run) == [] and run.manifest.status == "complete"
    assert run.manifest.blocks["network"].parameters == ("call", "callers", "delay_ms")
    for w in run.measured:
        n = int(str(w.params["call"]).split()[0])
        # Counted, not timed: the proxy's answers per call and pg_stat_statements' statements
        # (the one call in flight when the window closes adds at most a few percent).
        assert w.metrics["round_trips"] == pytest.approx(n, rel=0.1)
        assert w.metrics["statements"] == pytest.approx(n, rel=0.1)
        added = w.metrics["added_rtt_ms"]
        assert added is not None and added >= 2 * float(w.params["delay_ms"])
    assert proxies() == []


@pytest.mark.postgres
def test_round_trips_from_the_slope_on_a_page(network_run: Path, tmp_path: Path) -> None:
    """The page's table and claims over the run, by structure and counts. A slope is timed:
    how close it comes to the count depends on how busy the machine is, so its accuracy is
    measured by benchmarks/round_trips_slope.py, never asserted by a test."""
    from perfpages.site.macros import series_round_trips
    from perfpages.site.pins import Pins
    from perfpages.site.store import RunStore

    rows = series_round_trips(Pins({"net": RunStore(network_run.parent).get(network_run.name)}),
                              "p50", {"block": "network"})
    rounds = open_run(network_run).manifest.method.rounds
    assert [row.name for row in rows] == [f"call={n} statements" for n in (1, 2, 3)]
    for n, row in zip((1, 2, 3), rows, strict=True):
        assert row.trips.delays == (0, 2, 4) and row.trips.slope.n == rounds  # one per round
        assert row.counted is not None and row.counted.median == pytest.approx(n, rel=0.1)
    page = ("---\nruns:\n  net: " + network_run.name + "\n---\n# Across a network\n\n"
            '{{ round_trips(block="network") }}\n\n'
            '{{ claim("One statement is one round trip.", '
            'below("round_trips", 1.5, where={"call": "1 statements"})) }}\n\n'
            '{{ claim("Three are three.", above("round_trips", 2.5, '
            'where={"call": "3 statements"})) }}\n')
    site, _ = build_site(tmp_path / "p", {"net.md": page}, network_run.parent)
    html = (site / "net" / "index.html").read_text()
    assert "round trips (slope)" in html and "+4 ms" in html and "counted by the proxy" in html
    wrong = page.replace("above(\"round_trips\", 2.5", "above(\"round_trips\", 3.5")
    with pytest.raises(Failed) as failed:
        build_site(tmp_path / "q", {"net.md": wrong}, network_run.parent)
    assert any("round_trips above 3.50" in m and "3 statements" in m
               for m in failed.value.messages)


@pytest.mark.postgres
def test_pgbench_blocks_run_across_delays_too(tmp_path: Path) -> None:
    """A pgbench block with `delays_ms`: pgbench reaches the server through the proxy; the
    tiny lookup is one statement, so one round trip a transaction, counted and from the slope."""
    bench = tmp_path / "bench"
    bench.mkdir()
    (bench / "tiny").mkdir()
    (bench / "tiny" / "lookup.sql").write_text((ROOT / "benchmarks/tiny/lookup.sql").read_text())
    source = (ROOT / "benchmarks" / "tiny.py").read_text()
    source = source.replace('clients=(1,),', 'clients=(1,), delays_ms=(0, 2, 4), window_s=1,')
    assert "delays_ms=(0, 2, 4)" in source
    (bench / "tiny.py").write_text(source)
    (tmp_path / "pyproject.toml").write_text(
        '[tool.perfpages]\nsuites = "bench"\nresults = "results"\n')
    done = subprocess.run([sys.executable, "-m", "perfpages", "bench.run", "--suite", "tiny",
                           "--rounds", "1"],
                          cwd=tmp_path, capture_output=True, text=True, env=ENV)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    run_dir = next((tmp_path / "results").iterdir())
    run = open_run(run_dir)
    assert run.manifest.blocks["lookup"].parameters == ("clients", "delay_ms")
    assert {w.params["delay_ms"] for w in run.measured} == {0, 2, 4}
    for w in run.measured:
        assert w.metrics["round_trips"] == pytest.approx(1, rel=0.1)
        assert w.metrics["statements"] == pytest.approx(1, rel=0.1)
    page = ("---\nruns:\n  t: " + run_dir.name + "\n---\n# pgbench across a network\n\n"
            '{{ round_trips(block="lookup") }}\n\n'
            '{{ claim("A lookup is one round trip.", trips(1, block="lookup")) }}\n')
    site, _ = build_site(tmp_path / "p", {"t.md": page}, run_dir.parent)
    assert "counted by the proxy" in (site / "t" / "index.html").read_text()
    assert proxies() == []


@pytest.mark.postgres
def test_a_label_moving_to_and_from_the_proxy_is_prepared_for_each_address(
        tmp_path: Path) -> None:
    """`prepare` may store the server's address in the subject's configuration: a label is
    prepared again whenever its address changes (server → proxy → server), never left pointing
    at the proxy in a later block."""
    from dataclasses import replace

    from perfpages.run.blocks import Session
    from perfpages.run.builds import resolve
    from perfpages.run.clusters import Clusters
    from perfpages.run.httpblock import HttpBlocks
    from perfpages.run.suite import load

    given: list[int] = []
    suite = load("tinydb", ROOT / "benchmarks")
    assert suite.service is not None
    suite = replace(suite, service=replace(suite.service, prepare=lambda b, target, work:
                                           given.append(target.port)))
    build = resolve(suite.labels[0])
    session = Session(Clusters())
    blocks = HttpBlocks(session)
    try:
        for delayed in (False, True, True, False):
            blocks._service(suite, build, {}, tmp_path / "server.log", delayed)
    finally:
        blocks.close()
        session.close()
        session.clusters.destroy()
    assert len(given) == 3 and given[0] == given[2] != given[1], given
