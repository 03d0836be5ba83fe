"""perfpages' locustfile: runs in Locust's own venv (`perfpages.tools.locust`), never imported by
perfpages (importing locust monkeypatches the process with gevent). Self-contained: it imports
nothing of perfpages.

The master gets the load as JSON (`--pp-load`), sets the shared start instant when the test
starts (`--pp-start`, sent to the workers with the spawn message like every custom option) and
writes what the workers report to `--pp-out`. Each worker measures its requests exactly (the
request event's response_time is an unrounded perf_counter difference, taken after the body is
read; Locust's own statistics round it), records them per window into HdrHistograms of the same
library and range as perfpages' `Latency`, and sends its windows to the master, in the shape of
`perfpages.loadgen.tally.Tally.to_json`, once its last request is answered.
"""

from __future__ import annotations

import bisect
import errno
import json
import math
import os
import random
import socket
import time
import traceback
from collections import Counter
from time import perf_counter
from typing import Any

import gevent
from hdrh.histogram import HdrHistogram
from locust import FastHttpUser, constant, constant_throughput, events, task
from locust.runners import MasterRunner, WorkerRunner

LOWEST_US, HIGHEST_US, FIGURES = 1, 3_600_000_000, 3  # perfpages.archive.histogram's range
LEAD_S = 1.0  # from the test's start (users being spawned) to the first request
PROBE_S = 0.01  # how often the event loop's lag and the CPU are sampled, as perfpages' worker
CONNECT_ERRNOS = {errno.ECONNREFUSED, errno.EHOSTUNREACH, errno.ENETUNREACH, errno.EADDRNOTAVAIL}

RECORDER: Recorder | None = None


@events.init_command_line_parser.add_listener
def _options(parser: Any) -> None:
    parser.add_argument("--pp-load", default="", help="perfpages: the load, as JSON")
    parser.add_argument("--pp-out", default="", help="perfpages: where the master writes")
    parser.add_argument("--pp-start", type=float, default=0.0, help="perfpages: set by master")


class Hist:
    """A histogram plus the values recorded since the last flush: hdrh's record_value() is
    pure Python, so values are recorded once per distinct value (lossless)."""

    __slots__ = ("clamped", "hdr", "values")

    def __init__(self) -> None:
        self.hdr = HdrHistogram(LOWEST_US, HIGHEST_US, FIGURES)
        self.values: list[int] = []
        self.clamped = 0

    def flush(self) -> None:
        for us, n in Counter(self.values).items():
            if us < LOWEST_US or us > HIGHEST_US:  # as Latency.record_us: clamp and count
                self.clamped += n
                us = min(max(us, LOWEST_US), HIGHEST_US)
            self.hdr.record_value(us, n)
        self.values.clear()

    def dump(self) -> list[Any]:
        self.flush()
        return [self.hdr.encode().decode("ascii"), self.clamped]


class Window:
    """One window of this worker, as perfpages' Tally counts it."""

    def __init__(self, index: int, duration_s: float) -> None:
        self.index, self.duration_s = index, duration_s
        self.requests = self.offered = self.completed = 0
        self.codes: Counter[str] = Counter()
        self.errors: Counter[str] = Counter()
        self.hists = {name: Hist() for name in ("latency", "service", "lag", "loop_lag")}
        self.cpu_s = 0.0
        self.slowest_ms = 0.0
        self.slowest_at_s: float | None = None

    def to_json(self) -> dict[str, Any]:
        return {"index": self.index, "duration_s": self.duration_s, "requests": self.requests,
                "codes": dict(self.codes), "errors": dict(self.errors), "drops": 0,
                "offered": self.offered, "completed": self.completed,
                "hist": {name: h.dump() for name, h in self.hists.items()},
                "cpu_s": self.cpu_s, "cpu_max_s": self.cpu_s,
                "slowest_ms": self.slowest_ms, "slowest_at_s": self.slowest_at_s}


class Template:
    """A request template with perfpages' fill semantics: values from one seeded Random per
    worker, drawn in the template's fill order; a JSON string exactly "{name}" becomes the
    integer itself."""

    def __init__(self, d: dict[str, Any]) -> None:
        self.method, self.url, self.body = d["method"], d["url"], d["body"]
        self.headers: dict[str, str] = dict(d["headers"])
        if d["json"]:
            self.headers.setdefault("Content-Type", "application/json")
        self.fill = [("{" + name + "}", lo, hi) for name, lo, hi in d["fill"]]
        self.name = d["url"]

    def make(self, rng: random.Random) -> tuple[str, dict[str, str], bytes | None]:
        url, headers, body = self.url, self.headers, self.body
        for token, lo, hi in self.fill:
            value = str(rng.randint(lo, hi))
            url = url.replace(token, value)
            body = body.replace(f'"{token}"', value).replace(token, value)
            headers = {k: v.replace(token, value) for k, v in headers.items()}
        return url, headers, body.encode() if body else None


class Recorder:
    """This worker's windows, from the shared start instant."""

    def __init__(self, env: Any, load: dict[str, Any], start_at: float) -> None:
        self.env, self.load = env, load
        self.shard = env.runner.worker_index
        self.t0 = perf_counter() + (start_at - time.time())
        self.started = start_at
        self.t_start, self.t_end = self.t0 - load["warmup_s"], self.t0 + load["duration_s"]
        self.window_s = load["window_s"]
        self.windows = [Window(i, d) for i, d in enumerate(load["windows"])]
        self.warm = Window(-1, load["warmup_s"]) if load["warmup_s"] > 0 else None
        self.last = len(self.windows) - 1
        self.rng = random.Random(f"{load['seed']}:params:{self.shard}")
        self.arrivals = random.Random(f"{load['seed']}:arrivals:{self.shard}")
        self.templates = [Template(r) for r in load["requests"]]
        self.cumulative = list(_accumulate(r["weight"] for r in load["requests"]))
        self.timetables: list[float] = []  # open loop: each user's first due time
        self.samples: list[str] = []
        self.raw: list[int] = []
        self.inflight = 0
        self.measured_cpu = 0.0
        gevent.spawn(self._probe)
        gevent.spawn(self._report)

    def window_at(self, t: float) -> Window:
        if t < self.t0:
            return self.warm or self.windows[0]
        return self.windows[min(int((t - self.t0) / self.window_s), self.last)]

    def pick(self) -> Template:
        if len(self.templates) == 1:
            return self.templates[0]
        x = self.rng.random() * self.cumulative[-1]
        return self.templates[bisect.bisect_right(self.cumulative, x)]

    def record(self, sent: float, response_ms: float, response: Any, exc: Any,
               lag_us: int) -> None:
        done = perf_counter()
        window = self.window_at(sent)
        window.requests += 1
        code = getattr(response, "status_code", 0) or 0
        if not code:
            status = _error_kind(exc)
            window.errors[status] += 1
        else:
            status = str(code)
            window.codes[status] += 1
            us = round(response_ms * 1000.0)
            window.hists["latency"].values.append(us)
            if self.load["open"]:  # not corrected for coordinated omission: service = latency
                window.hists["service"].values.append(us)
                window.hists["lag"].values.append(lag_us)
            if done < self.t_end:
                self.window_at(done).completed += 1
            if sent >= self.t0:
                if response_ms > window.slowest_ms:
                    window.slowest_ms, window.slowest_at_s = response_ms, sent - self.t0
                if self.load["raw"]:
                    self.raw.append(us)
        if self.load["samples"] and sent >= self.t0:
            self.samples.append(f"{sent - self.t0:.6f},{response_ms:.3f},{response_ms:.3f},"
                                f"{status},{self.shard}\n")

    def _probe(self) -> None:
        """The event loop's wake-up lag and this process's CPU, window by window."""
        gevent.sleep(max(0.0, self.t_start - perf_counter()))
        current, cpu_prev = self.window_at(perf_counter()), time.process_time()
        while True:
            target = perf_counter() + PROBE_S
            gevent.sleep(PROBE_S)
            now = perf_counter()
            finished = now >= self.t_end
            here = current if finished else self.window_at(now)
            here.hists["loop_lag"].hdr.record_value(max(round((now - target) * 1e6), 1))
            if here is not current or finished:
                cpu = time.process_time()
                current.cpu_s += cpu - cpu_prev
                if current.index >= 0:
                    self.measured_cpu += cpu - cpu_prev
                current, cpu_prev = here, cpu
            if finished:
                return

    def _report(self) -> None:
        """Once the measurement is over and the last request answered (users send none after
        the end), send this worker's windows to the master."""
        try:
            gevent.sleep(max(0.0, self.t_end - perf_counter()))
            deadline = perf_counter() + self.load["timeout_s"] + 5.0
            while (self.inflight or perf_counter() < self.t_end + 2 * PROBE_S) \
                    and perf_counter() < deadline:
                gevent.sleep(PROBE_S)
            self._offered()
            tallies = ([self.warm] if self.warm else []) + self.windows
            part = {"windows": [w.to_json() for w in tallies], "samples": self.samples,
                    "started": self.started, "cpu_s": self.measured_cpu, "loop": "locust",
                    "worker": self.shard, "raw_us": self.raw}
        except Exception:  # report, never leave the master waiting
            part = {"error": traceback.format_exc().strip().splitlines()[-1]}
        self.env.runner.send_message("pp_part", part)

    def _offered(self) -> None:
        """Open loop: requests due by each user's nominal timetable (Locust's pacing never
        catches up, so fewer may have been sent)."""
        rate = self.load["rate_per_user"]
        if not rate:
            return
        for first in self.timetables:
            for w in ([self.warm] if self.warm else []) + self.windows:
                a = self.t_start if w.index < 0 else self.t0 + w.index * self.window_s
                b = min(a + w.duration_s, self.t_end)
                w.offered += max(0, math.ceil((b - first) * rate) - max(
                    0, math.ceil((a - first) * rate)))


def _accumulate(values: Any) -> Any:
    total = 0.0
    for v in values:
        total += v
        yield total


def _error_kind(exc: Any) -> str:
    """perfpages' error kinds: timeout, connect (no connection could be opened), other."""
    seen = 0
    while exc is not None and seen < 4:  # geventhttpclient wraps the cause in RetriesExceeded
        if isinstance(exc, gevent.Timeout | socket.timeout | TimeoutError):
            return "timeout"
        if isinstance(exc, ConnectionRefusedError | socket.gaierror) or (
                isinstance(exc, OSError) and exc.errno in CONNECT_ERRNOS):
            return "connect"
        exc = getattr(exc, "original", None) or exc.__cause__
        seen += 1
    return "other"


class PerfpagesUser(FastHttpUser):
    """One caller: closed loop, the next request as soon as the last one is answered; open
    loop, Locust's constant_throughput pacing (set when the test starts)."""

    host = "http://127.0.0.1"  # replaced by the load's first URL's origin
    wait_time = constant(0)
    max_retries = 0

    def on_start(self) -> None:
        rec = RECORDER
        assert rec is not None
        first = rec.t_start
        rate = rec.load["rate_per_user"]
        if rate:  # spread the users' timetables over one period
            first += rec.arrivals.random() / rate
            rec.timetables.append(first)
        self._due = first
        gevent.sleep(max(0.0, first - perf_counter()))
        # constant_throughput paces from the last task's start, which Locust set when the
        # user was made: from now instead, or the first wait would be skipped.
        self._cp_last_run = perf_counter()

    @task
    def send(self) -> None:
        rec = RECORDER
        assert rec is not None
        start = perf_counter()
        if start >= rec.t_end:  # done: idle until the master ends the test
            gevent.sleep(3600)
            return
        template = rec.pick()
        url, headers, body = template.make(rec.rng)
        rate = rec.load["rate_per_user"]
        lag_us = 0
        if rate:  # how late the pacing sent it: after the period, or after a slow response
            lag_us = max(round((start - self._due) * 1e6), 1)
            self._due = start + 1.0 / rate
        rec.inflight += 1
        sent = perf_counter()
        try:
            # A total timeout, as perfpages' own; Locust's client turns it into an error
            # response (the request event fires), unless it strikes outside the client.
            with gevent.Timeout(rec.load["timeout_s"]):
                self.client.request(template.method, url, data=body, headers=headers,
                                    name=template.name, allow_redirects=False,
                                    context={"pp_sent": sent, "pp_lag": lag_us})
        except gevent.Timeout:
            rec.record(sent, 0.0, None, TimeoutError(), lag_us)
        finally:
            rec.inflight -= 1


@events.request.add_listener
def _on_request(response_time: float, context: Any = None, response: Any = None,
                exception: Any = None, **_: Any) -> None:
    if RECORDER is not None and context and "pp_sent" in context:
        RECORDER.record(context["pp_sent"], response_time, response, exception,
                        context["pp_lag"])


@events.init.add_listener
def _init(environment: Any, **_: Any) -> None:
    runner = environment.runner
    if isinstance(runner, MasterRunner):
        parts: list[dict[str, Any]] = []

        def on_part(environment: Any, msg: Any, **_: Any) -> None:
            parts.append(msg.data)
            expected = environment.parsed_options.expect_workers
            if len(parts) >= expected or "error" in msg.data:
                _write(environment.parsed_options.pp_out, parts)
                environment.process_exit_code = 0
                gevent.spawn_later(0.1, environment.runner.quit)

        runner.register_message("pp_part", on_part, concurrent=True)


def _write(path: str, parts: list[dict[str, Any]]) -> None:
    errors = [p["error"] for p in parts if "error" in p]
    data = {"error": errors[0]} if errors else {"parts": sorted(parts, key=lambda p: p["worker"])}
    with open(path + ".partial", "w") as f:
        json.dump(data, f)
    os.replace(path + ".partial", path)


@events.test_start.add_listener
def _test_start(environment: Any, **_: Any) -> None:
    global RECORDER
    options = environment.parsed_options
    load = json.loads(options.pp_load)
    if isinstance(environment.runner, MasterRunner):
        # Sent to the workers with the spawn message, which follows this event.
        options.pp_start = time.time() + LEAD_S + load["warmup_s"]
    elif isinstance(environment.runner, WorkerRunner):
        PerfpagesUser.host = load["host"]
        PerfpagesUser.network_timeout = PerfpagesUser.connection_timeout = load["timeout_s"]
        rate = load["rate_per_user"]
        PerfpagesUser.wait_time = constant_throughput(rate) if rate else constant(0)
        RECORDER = Recorder(environment, load, options.pp_start)
