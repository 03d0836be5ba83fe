"""The HTTP load on Locust: a master and N workers (local processes, or remote ones started with
`perfpages loadgen.worker`), returning the same `LoadResult` as `perfpages.loadgen.generator.run`.

Locust runs from its own venv (`perfpages.tools.locust`): gevent never patches this process.
Each worker records its requests per window into exact HdrHistograms (the locustfile,
`perfpages.tools.locustfile`) and sends them to the master at the end; the master writes them
out, and they are merged here with the generator's own merge (histograms added, lossless).
Closed loop: `load.callers` Locust users, each sending its next request when the last one is
answered. Open loop: Locust's constant_throughput pacing per user, an approximate rate whose
latency is NOT corrected for coordinated omission (see docs/guide/loadgen.md).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from yarl import URL

from perfpages.errors import Interrupted, PerfpagesError, clip
from perfpages.loadgen.generator import LoadResult, merge_parts
from perfpages.loadgen.spec import Load
from perfpages.processes import die_with_parent, free_port
from perfpages.tools import locust as tool

DEFAULT_PORT = 5557  # Locust's own default: what remote workers connect to unless told
LEAD_S = 1.0  # the locustfile's: from the test's start to the first request
SLACK_S = 30.0  # beyond the load's own length, before a silent master is given up on


def run(load: Load, *, workers: int = 1, master_host: str = "127.0.0.1",
        master_port: int | None = None, expect_remote: int = 0,
        start_timeout_s: float = 60.0, cpus: tuple[int, ...] = ()) -> LoadResult:
    """Run the load from a Locust master with `workers` local worker processes (and
    `expect_remote` more that connect from elsewhere to `master_host`:`master_port`, default
    5557 then, else a free port) and merge what every worker measured; `cpus` pins the local
    processes (the run's placement of the load)."""
    return merge_parts(load, run_parts(load, workers=workers, master_host=master_host,
                                       master_port=master_port, expect_remote=expect_remote,
                                       start_timeout_s=start_timeout_s, cpus=cpus))


def engine_text(workers: int, remote: int = 0) -> str:
    """How a run's manifest names this engine: "locust 2.47.0, 2 local workers"."""
    version = next(r.split("==")[1] for r in tool.REQUIREMENTS if r.startswith("locust=="))
    local = f"{workers} local worker{'s' * (workers != 1)}"
    return f"locust {version}, {local}" + (f" and {remote} remote" if remote else "")


def describe(load: Load, raw: bool = False) -> dict[str, Any]:
    """The load as the locustfile reads it (JSON), placeholders and all."""
    rate = load.offered_rate
    return {
        "requests": [{"url": r.url, "method": r.method, "headers": dict(r.headers),
                      "body": r.body_text(), "json": r.json is not None, "weight": r.weight,
                      "fill": [[name, lo, hi] for name, (lo, hi) in r.fill.items()]}
                     for r in load.requests],
        "host": _origin(load.requests[0].url), "duration_s": load.duration_s,
        "warmup_s": load.warmup_s, "window_s": load.window_s, "windows": load.windows(),
        "timeout_s": load.timeout_s, "seed": load.seed, "samples": load.samples,
        "open": rate is not None, "rate_per_user": rate / load.callers if rate else None,
        "raw": raw,
    }


def _origin(url: str) -> str:
    u = URL(url.replace("{", "0").replace("}", "0"))  # a placeholder in the host: any origin
    return str(u.origin())


def _check(load: Load, workers: int, expect_remote: int) -> None:
    if workers < 0 or expect_remote < 0 or workers + expect_remote < 1:
        raise PerfpagesError(f"{workers} local and {expect_remote} remote Locust workers",
                             key="loadgen.locust", fix="run at least one worker")
    if load.targets:
        raise PerfpagesError("Locust sends to one target: no duet", key="load.targets",
                             fix="use perfpages' own generator (generator.run_each)")
    if load.callers < workers + expect_remote:
        raise PerfpagesError(f"{load.callers} callers cannot be shared by "
                             f"{workers + expect_remote} workers", key="load.callers",
                             fix="give at least one caller per worker")
    if load.arrivals != "uniform":
        raise PerfpagesError("Locust paces each user at a constant throughput: no poisson "
                             "arrivals", key="load.arrivals",
                             fix="use arrivals='uniform' or perfpages' own generator")


def run_parts(load: Load, *, workers: int = 1, master_host: str = "127.0.0.1",
              master_port: int | None = None, expect_remote: int = 0,
              start_timeout_s: float = 60.0, raw: bool = False,
              cpus: tuple[int, ...] = ()) -> list[dict[str, Any]]:
    """Each worker's report (`Tally.to_json` windows, samples, CPU; with `raw`, every measured
    latency in µs too, for tests). Everything started here is gone when it returns."""
    _check(load, workers, expect_remote)
    python = str(tool.python())
    if master_port is None:
        master_port = DEFAULT_PORT if expect_remote else free_port(master_host)
    connect = "127.0.0.1" if master_host in ("0.0.0.0", "", "::") else master_host
    with tempfile.TemporaryDirectory(prefix="perfpages-locust-") as tmp:
        out = Path(tmp) / "parts.json"
        budget = LEAD_S + load.warmup_s + load.duration_s + load.timeout_s + SLACK_S
        master = [python, "-I", "-m", "locust", "-f", str(tool.LOCUSTFILE), "--master",
                  "--headless", "--master-bind-host", master_host,
                  "--master-bind-port", str(master_port),
                  "--expect-workers", str(workers + expect_remote),
                  "--expect-workers-max-wait", f"{start_timeout_s:g}",
                  "-u", str(load.callers), "-r", str(load.callers),
                  "--run-time", f"{int(budget) + 1}s", "--exit-code-on-error", "0",
                  "--only-summary", "--loglevel", "WARNING",
                  "--pp-load", json.dumps(describe(load, raw)), "--pp-out", str(out)]
        procs: list[tuple[str, subprocess.Popen[bytes]]] = []
        finished = False
        try:
            procs.append(("master", _start(master, Path(tmp) / "master.log", tmp, cpus)))
            for i in range(workers):
                procs.append((f"worker {i}", _start(worker_argv(python, connect, master_port),
                                                    Path(tmp) / f"worker-{i}.log", tmp, cpus)))
            _wait(procs, start_timeout_s + budget, tmp)
            finished = True
        finally:
            _stop(procs, graceful=finished)
        if not out.exists():
            raise PerfpagesError(f"the Locust master wrote no result: {_last_line(tmp, 'master')}",
                                 key="loadgen.locust",
                                 fix=f"check that {workers + expect_remote} workers can reach "
                                     f"{master_host}:{master_port}")
        data = json.loads(out.read_text())
    if "error" in data:
        raise PerfpagesError(f"a Locust worker failed: {data['error']}", key="loadgen.locust",
                             fix="check the request templates and the subject's address")
    return list(data["parts"])


def worker_argv(python: str, master_host: str, master_port: int) -> list[str]:
    return [python, "-I", "-m", "locust", "-f", str(tool.LOCUSTFILE), "--worker",
            "--master-host", master_host, "--master-port", str(master_port),
            "--loglevel", "WARNING"]


def child_env(home: str) -> dict[str, str]:
    """The environment of a Locust process: no LOCUST_* settings, and a HOME of its own so that
    a ~/.locust.conf cannot change the run either (the working directory is `home` too)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LOCUST_", "PYTHON"))}
    env["HOME"] = home
    return env


def _start(argv: list[str], log: Path, tmp: str,
           cpus: tuple[int, ...] = ()) -> subprocess.Popen[bytes]:
    with log.open("wb") as f:
        return subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=f, stderr=subprocess.STDOUT,
                                cwd=tmp, env=child_env(tmp), start_new_session=True,
                                preexec_fn=die_with_parent(signal.SIGKILL, cpus))


def _wait(procs: list[tuple[str, subprocess.Popen[bytes]]], timeout_s: float, tmp: str) -> None:
    """Until the master exits; a local worker that fails first fails the run."""
    master = procs[0][1]
    deadline = time.monotonic() + timeout_s
    while master.poll() is None:
        for name, proc in procs[1:]:
            if proc.poll() not in (None, 0):
                raise PerfpagesError(f"Locust {name} exited with {proc.returncode}: "
                                     f"{_last_line(tmp, name)}", key="loadgen.locust",
                                     fix="run again; if it persists, check memory and limits")
        if time.monotonic() > deadline:
            raise PerfpagesError(f"the Locust master did not finish within {timeout_s:.0f} s",
                                 key="loadgen.locust", fix="check the machine is not overloaded")
        time.sleep(0.05)


def _stop(procs: list[tuple[str, subprocess.Popen[bytes]]], graceful: bool) -> None:
    """Workers quit when the master does; whatever is left (or everything, on an error or
    Ctrl-C, at once: stop loading the subject) is killed with its process group."""
    for _, proc in procs:
        if graceful:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=10)
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def _last_line(tmp: str, name: str) -> str:
    path = Path(tmp) / ("master.log" if name == "master" else f"{name.replace(' ', '-')}.log")
    try:
        lines = [line.strip() for line in path.read_text(errors="replace").splitlines()
                 if line.strip() and not line.startswith(" ")]
    except OSError:
        return "no log"
    return clip(lines[-1], 300) if lines else "no output"


def parse_master(text: str) -> tuple[str, int]:
    """HOST, HOST:PORT or [IPv6]:PORT; the port defaults to Locust's 5557."""
    host, port = text.strip(), str(DEFAULT_PORT)
    if host.startswith("["):
        inside, _, rest = host[1:].partition("]")
        host, port = inside, rest.removeprefix(":") or port
    elif host.count(":") == 1:
        host, port = host.split(":")
    if not host or not port.isdigit() or not 1 <= int(port) <= 65535:
        raise PerfpagesError(f"{text!r} is not HOST[:PORT]", key="--master",
                             fix="e.g. --master 10.0.0.5:5557")
    return host, int(port)


def serve_worker(master: str, once: bool = False, say: Callable[[str], Any] = print) -> int:
    """`perfpages loadgen.worker`: one Locust worker at a time connecting to `master`, started
    again after each run (a suite's every round starts a new master) until Ctrl-C; with `once`,
    one run. It stops with this command, even when the command is killed."""
    host, port = parse_master(master)
    python = str(tool.python())
    with tempfile.TemporaryDirectory(prefix="perfpages-locust-worker-") as tmp:
        while True:
            say(f"Locust worker: waiting for a perfpages load from {host}:{port}")
            began = time.monotonic()
            proc = subprocess.Popen(worker_argv(python, host, port), stdin=subprocess.DEVNULL,
                                    cwd=tmp, env=child_env(tmp), start_new_session=True,
                                    preexec_fn=die_with_parent())
            try:
                code = proc.wait()
            except KeyboardInterrupt:
                raise Interrupted("interrupted: the Locust worker was stopped",
                                  key="loadgen.worker") from None
            finally:
                _stop([("worker", proc)], graceful=False)
            if once:
                return code
            if code != 0 and time.monotonic() - began < 5:  # failing at once: never loop on it
                raise PerfpagesError(f"the Locust worker exited with {code} at once",
                                     key="loadgen.worker", fix="see its output above")
