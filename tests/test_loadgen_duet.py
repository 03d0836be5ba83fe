"""Duet load: one Load alternating its requests between two real servers, each counting its own.

Each server is aiohttp in a thread; both append to one log in the order requests reach them.
A caller waits for each response before its next request, so the log keeps every caller's own
order, and the server names the caller by the load generator process its connection comes from
(one caller per process).
"""

from __future__ import annotations

import itertools
import json
from collections import Counter
from collections.abc import Iterator

import psutil
import pytest
from aiohttp import web

import test_loadgen as counting  # beside this file
from perfpages import Load, Request
from perfpages.errors import PerfpagesError
from perfpages.loadgen import locust
from perfpages.loadgen.generator import run, run_each

Log = list[tuple[str, int]]  # (server name, pid of the caller's process), in arrival order


class Server(counting.Server):
    """test_loadgen's aiohttp server with one route, which logs who sent each request."""

    def __init__(self, name: str, log: Log) -> None:
        super().__init__()
        self.name, self.log = name, log
        self.count = 0
        self.pids: dict[int, int] = {}  # client port -> pid of the process holding it

    def pid_of(self, port: int) -> int:
        if port not in self.pids:  # once per connection: which process holds its other end
            self.pids[port] = next((c.pid for c in psutil.net_connections("tcp")
                                    if c.laddr and c.laddr.port == port and c.pid), 0)
        return self.pids[port]

    async def ok(self, request: web.Request) -> web.Response:
        peer = request.transport.get_extra_info("peername")  # type: ignore[union-attr]
        self.count += 1
        self.log.append((self.name, self.pid_of(peer[1])))
        return web.Response(text=self.name)

    def _app(self) -> web.Application:
        app = web.Application()
        app.add_routes([web.get("/ok", self.ok)])
        return app

    def __enter__(self) -> Server:
        super().__enter__()
        return self


@pytest.fixture
def pair() -> Iterator[tuple[Server, Server, Log]]:
    log: Log = []
    with Server("a", log) as a, Server("b", log) as b:
        yield a, b, log


def duet(a: Server, b: Server, **kw: object) -> Load:
    return Load([Request(a.base + "/ok")], targets=(a.base, b.base), **kw)  # type: ignore[arg-type]


def test_each_target_counts_exactly_what_its_server_received(
        pair: tuple[Server, Server, Log]) -> None:
    a, b, _ = pair
    ra, rb = run_each(duet(a, b, duration_s=1.0, window_s=0.5, warmup_s=0.2, callers=4))
    for result, server in ((ra, a), (rb, b)):
        total = result.total()
        # Warm-up and measured windows together: every request the server saw, none twice.
        assert total.requests + result.warmup.requests == server.count > 0  # type: ignore[union-attr]
        assert total.codes["200"] == total.requests and total.error_count == 0
        assert total.latency.count == total.requests
        assert len(result.windows) == 2 and result.cpu_s == ra.cpu_s
        # The generator's own health is the same loop's, whichever target a window is of.
        assert total.metrics(False)["generator_cpu_pct"] > 0  # type: ignore[operator]
    # Four callers alternating: the two sides' counts differ by at most one per caller.
    assert abs(a.count - b.count) <= 4


def test_each_caller_alternates_and_callers_start_on_alternate_sides(
        pair: tuple[Server, Server, Log]) -> None:
    a, b, log = pair
    ra, rb = run_each(duet(a, b, duration_s=0.5, callers=3, processes=3))
    by_caller: dict[int, list[str]] = {}
    for name, pid in log:
        by_caller.setdefault(pid, []).append(name)
    assert len(by_caller) == 3 and 0 not in by_caller
    for sequence in by_caller.values():
        assert len(sequence) > 10
        assert all(x != y for x, y in itertools.pairwise(sequence)), sequence[:20]
    # Callers 0, 1, 2 start on sides 0, 1, 0.
    assert Counter(s[0] for s in by_caller.values()) == {"a": 2, "b": 1}
    assert ra.total().requests == a.count and rb.total().requests == b.count


def test_without_alternation_each_caller_keeps_to_one_target(
        pair: tuple[Server, Server, Log]) -> None:
    a, b, log = pair
    ra, rb = run_each(duet(a, b, duration_s=0.5, callers=3, processes=3, alternate=False))
    by_caller: dict[int, set[str]] = {}
    for name, pid in log:
        by_caller.setdefault(pid, set()).add(name)
    assert sorted(map(sorted, by_caller.values())) == [["a"], ["a"], ["b"]]  # callers 0, 1, 2
    assert ra.total().requests == a.count > 0 and rb.total().requests == b.count > 0


def test_open_loop_alternates_the_timetable(pair: tuple[Server, Server, Log]) -> None:
    a, b, _ = pair
    ra, rb = run_each(duet(a, b, duration_s=0.5, rate=200, callers=8, processes=2,
                           samples=True))
    for result, server in ((ra, a), (rb, b)):
        total = result.total()
        assert total.codes["200"] == server.count == total.requests - total.error_count
        assert total.requests + total.drops == total.offered
        assert len(result.samples_csv().splitlines()) - 1 == total.requests
    offered = ra.total().offered, rb.total().offered
    assert abs(offered[0] - offered[1]) <= 2 and abs(sum(offered) - 100) <= 2


def test_a_single_target_load_archives_as_before(pair: tuple[Server, Server, Log]) -> None:
    """No `targets`: one result, the same windows, metrics and diagnostics as ever."""
    a, _, _ = pair
    load = Load([Request(a.base + "/ok")], duration_s=1.0, window_s=0.5, warmup_s=0.2,
                callers=2)
    assert load.targets == () and load.sides() == [load.requests]
    (result,) = run_each(load)
    windows = result.to_windows("calls", "v1", 1, {"callers": 2})
    assert [(w.kind, w.window, w.label) for w in windows] == [
        ("warmup", 0, "v1"), ("measure", 0, "v1"), ("measure", 1, "v1")]
    assert sum(w.requests or 0 for w in windows) == a.count
    keys = {"block", "codes", "duration_s", "errors", "kind", "label", "latency", "metrics",
            "params", "requests", "round", "start", "status", "throughput", "window"}
    assert all(set(w.to_json()) == keys for w in windows)
    health = {"connect_errors", "generator_cpu_pct", "loop_lag_max_ms", "loop_lag_p99_ms",
              "non_2xx", "timeouts", "received_bytes", "sent_bytes"}
    assert set(windows[0].metrics) == health
    assert all(set(w.metrics) == health | {"slowest_at_s", "slowest_ms"} for w in windows[1:])
    assert set(json.loads(result.diagnostics_json())) == {
        "loop", "processes", "callers", "mode", "offered_rate", "duration_s", "cpu_s", "windows"}
    assert run(load).total().requests > 0  # `run` is `run_each`'s only result


@pytest.mark.parametrize(("targets", "url", "what"), [
    (("http://127.0.0.1:1",), "http://127.0.0.1:1/x", "1 targets"),
    (("http://127.0.0.1:1", "http://127.0.0.1:1"), "http://127.0.0.1:1/x", "1 distinct"),
    (("http://127.0.0.1:1/api", "http://127.0.0.1:2"), "http://127.0.0.1:1/api/x",
     "not a base URL"),
    (("localhost:1", "http://127.0.0.1:2"), "http://127.0.0.1:1/x", "not a base URL"),
    (("http://127.0.0.1:1", "http://127.0.0.1:2"), "http://127.0.0.1:10/x", "not under"),
])
def test_bad_targets_are_one_line(targets: tuple[str, ...], url: str, what: str) -> None:
    with pytest.raises(PerfpagesError) as info:
        Load([Request(url)], duration_s=1, targets=targets)
    assert info.value.key == "load.targets" and what in str(info.value)
    assert "\n" not in str(info.value)


def test_a_duet_load_needs_run_each_and_perfpages_own_generator() -> None:
    load = Load([Request("http://127.0.0.1:1/x")], duration_s=1,
                targets=("http://127.0.0.1:1", "http://127.0.0.1:2"))
    assert [r[0].url for r in load.sides()] == ["http://127.0.0.1:1/x", "http://127.0.0.1:2/x"]
    with pytest.raises(PerfpagesError, match="run_each"):
        run(load)
    with pytest.raises(PerfpagesError, match="no duet"):
        locust.run_parts(load)
