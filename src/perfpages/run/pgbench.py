"""pgbench as a load driver: weighted scripts, per-transaction logs turned into histograms.

Percentiles come from pgbench's per-transaction logs (`-l`, one file per thread), never from
its aggregates. Failed and skipped transactions appear as words in the log's time field: they
are counted as errors. The number of logged transactions is cross-checked against the
"actually processed" count of pgbench's own summary; a mismatch fails the window.
"""

from __future__ import annotations

import contextlib
import math
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from perfpages.archive.histogram import Latency
from perfpages.archive.window import Window
from perfpages.errors import PerfpagesError
from perfpages.processes import die_with_parent
from perfpages.run.postgres import Target


@dataclass(frozen=True)
class Script:
    """A pgbench script file and its weight (`-f path@weight`), or a builtin (`-b name@weight`)."""

    path: Path | None = None
    weight: int = 1
    name: str = ""
    builtin: str = ""

    @property
    def title(self) -> str:
        return self.name or (self.path.stem if self.path else self.builtin)

    def __post_init__(self) -> None:
        if bool(self.path) == bool(self.builtin):
            raise PerfpagesError("a Script needs a path or a builtin (one of them)",
                                 key="Script", fix="Script(Path('x.sql')) or "
                                                   "Script(builtin='select-only')")
        if self.weight < 1:
            raise PerfpagesError(f"Script weight must be at least 1, got {self.weight}",
                                 key="Script.weight", fix="give a whole number >= 1")

    def args(self) -> list[str]:
        if self.builtin:
            return ["-b", f"{self.builtin}@{self.weight}"]
        return ["-f", f"{self.path}@{self.weight}"]


@dataclass
class Result:
    transactions: int = 0  # successful, as logged
    failed: int = 0
    skipped: int = 0
    duration_s: float = 0.0
    tps: float | None = None  # pgbench's own summary figure
    processed: int | None = None  # pgbench's own summary count
    latency: Latency = field(default_factory=Latency)
    per_script: dict[str, Latency] = field(default_factory=dict)
    error: str | None = None
    sampling: float = 1.0  # fraction of the transactions in the logs
    # Asked for (`run(per_second=True)`, bench.calibrate): the logged transactions second by
    # second from the first one's start, as (start, latencies, failed or skipped).
    seconds: list[tuple[str, Latency, int]] = field(default_factory=list)

    @property
    def errors(self) -> int:
        return self.failed + self.skipped


_SUMMARY = {
    "processed": re.compile(r"number of transactions actually processed: (\d+)"),
    "failed": re.compile(r"number of failed transactions: (\d+)"),
    "skipped": re.compile(r"number of transactions skipped: (\d+)"),
    "tps": re.compile(r"tps = ([0-9.]+) \(without initial connection time\)"),
}


def parse_summary(text: str) -> dict[str, float]:
    out: dict[str, float] = {}
    for name, pattern in _SUMMARY.items():
        m = pattern.search(text)
        if m:
            out[name] = float(m.group(1))
    return out


def reconcile(result: Result, summary: dict[str, float], sampling: float = 1.0) -> str | None:
    """Cross-check the logs against pgbench's summary; the error, or None when they agree.

    Fully logged, the counts must be equal. Sampled, the logged count must be within five
    standard deviations of the expected sample, and the exact counts come from the summary."""
    if "processed" not in summary:
        return "pgbench printed no summary"
    processed = int(summary["processed"])
    if sampling >= 1:
        if processed != result.transactions:
            return (f"pgbench logged {result.transactions} transactions but its summary says "
                    f"{processed}")
        return None
    expected = processed * sampling
    if abs(result.transactions - expected) > 5 * math.sqrt(expected * (1 - sampling)) + 5:
        return (f"pgbench logged {result.transactions} of {processed} transactions, not a "
                f"{sampling:g} sample")
    result.transactions = processed
    result.failed = int(summary.get("failed", 0))
    result.skipped = int(summary.get("skipped", 0))
    return None


def parse_logs(files: list[Path], scripts: list[Script], result: Result) -> None:
    """Per-transaction lines: client tx time script epoch epoch_us [lag] [retries]."""
    names = [s.title for s in scripts]
    per = {name: Latency() for name in names}
    for path in files:
        with path.open() as fh:
            for line in fh:
                fields = line.split()
                if len(fields) < 6:
                    continue
                value = fields[2]
                if value == "failed":
                    result.failed += 1
                    continue
                if value == "skipped":
                    result.skipped += 1
                    continue
                micros = int(value)
                result.transactions += 1
                result.latency.record_us(micros)
                index = int(fields[3])
                if 0 <= index < len(names):
                    per[names[index]].record_us(micros)
    result.per_script = per if len(names) > 1 else {}


SCRATCH = "perfpages-pgbench-"  # + the harness's pid + "-": a log directory's name
_OWNER = re.compile(rf"{SCRATCH}(\d+)-")


def reap_scratch(root: Path) -> list[Path]:
    """Log directories left under `root` by harnesses that died (a SIGKILL skips the
    TemporaryDirectory's cleanup): each is named by its harness's pid, and removed once no
    such process exists. A directory of a live harness, this one's included, is kept."""
    removed = []
    for path in root.glob(f"{SCRATCH}*"):
        owner = _OWNER.match(path.name)
        if owner is None or int(owner.group(1)) == os.getpid():
            continue
        try:
            os.kill(int(owner.group(1)), 0)
        except ProcessLookupError:
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path)
        except PermissionError:  # alive, another user's
            pass
    return removed


def run(bin_dir: Path, target: Target, scripts: list[Script], clients: int, duration_s: float,
        *, threads: int | None = None, prepared: bool = True,
        defines: dict[str, str] | None = None, env: dict[str, str] | None = None,
        sampling: float = 1.0, cpus: tuple[int, ...] = (), per_second: bool = False) -> Result:
    """One pgbench run of `duration_s` seconds; problems become `Result.error`, not exceptions.

    `sampling` < 1 logs only that fraction of the transactions (`--sampling-rate`): logging
    costs pgbench CPU it shares with the server; counts then come from the summary."""
    threads = max(1, min(threads or clients, clients, os.cpu_count() or 1))
    seconds = max(1, round(duration_s))
    # Per-transaction logs go to memory where there is a tmpfs: writing them costs pgbench
    # (which shares the CPU with the server) as little as possible.
    shm = "/dev/shm" if os.access("/dev/shm", os.W_OK) else None
    reap_scratch(Path(shm or tempfile.gettempdir()))
    with tempfile.TemporaryDirectory(prefix=f"{SCRATCH}{os.getpid()}-", dir=shm) as tmp:
        prefix = Path(tmp) / "tx"
        cmd = [str(bin_dir / "pgbench"), "-n", "-T", str(seconds), "-c", str(clients),
               "-j", str(threads), "-l", f"--log-prefix={prefix}", *target.args()]
        if prepared:
            cmd += ["-M", "prepared"]
        if sampling < 1:
            cmd += [f"--sampling-rate={sampling:g}"]
        for name, value in (defines or {}).items():
            cmd += ["-D", f"{name}={value}"]
        for script in scripts:
            cmd += script.args()
        cmd.append(target.dbname)
        full_env = {**os.environ, **(env or {}), **target.env()}
        started = time.monotonic()
        # Own session: a Ctrl-C reaches the harness, which then ends pgbench itself.
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env=full_env, start_new_session=True, cwd=tmp,
                                preexec_fn=die_with_parent(cpus=cpus))
        try:
            out, err = proc.communicate(timeout=seconds + 120)
        except BaseException:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            raise
        result = Result(duration_s=float(seconds), sampling=sampling)
        elapsed = time.monotonic() - started
        summary = parse_summary(out)
        result.tps = summary.get("tps")
        result.processed = int(summary["processed"]) if "processed" in summary else None
        logs = sorted(Path(tmp).glob("tx.*"))
        parse_logs(logs, scripts, result)
        if per_second:
            result.seconds = by_second(logs, seconds)
        if proc.returncode != 0:
            lines = [ln.strip() for ln in (err or out).strip().splitlines() if ln.strip()]
            # The cause (a server ERROR) comes before pgbench's closing "Run was aborted".
            causes = [ln for ln in lines if "ERROR:" in ln or "FATAL:" in ln] or lines[-1:]
            result.error = f"pgbench exited with {proc.returncode}: " + (
                causes[0] if causes else "no output")
        else:
            result.error = reconcile(result, summary, sampling)
        if elapsed < seconds * 0.5 and result.error is None:
            result.error = f"pgbench ended after {elapsed:.1f} s of {seconds} s"
        return result


def run_init(bin_dir: Path, target: Target, dbname: str, scale: int = 1) -> str:
    """`pgbench -i` (the floor's tables); returns the error's last line, or ''."""
    done = subprocess.run([str(bin_dir / "pgbench"), "-i", "-q", "-s", str(scale),
                           *target.args(), dbname], capture_output=True, text=True,
                          env={**os.environ, **target.env()}, start_new_session=True,
                          preexec_fn=die_with_parent())
    if done.returncode == 0:
        return ""
    lines = [ln for ln in done.stderr.strip().splitlines() if ln.strip()]
    return lines[-1] if lines else f"exit code {done.returncode}"


def to_window(block: str, label: str, rnd: int, params: dict[str, Any], kind: str, start: str,
              res: Result) -> Window:
    """One line of results.jsonl: a failed run stays a window, with its error."""
    metrics: dict[str, float | None] = {"tps": res.tps}
    for script, lat in res.per_script.items():
        if lat.count:
            metrics[f"{script}_p50_ms"] = lat.percentile_ms(50)
            metrics[f"{script}_p95_ms"] = lat.percentile_ms(95)
            metrics[f"{script}_per_s"] = lat.count / res.sampling / res.duration_s
    if res.sampling < 1:
        metrics["log_sampling"] = res.sampling
    return Window(block=block, label=label, round=rnd, params=params, start=start,
                  duration_s=res.duration_s, kind=kind,  # type: ignore[arg-type]
                  status="failed" if res.error else "ok", error=res.error,
                  requests=res.transactions, errors=res.errors,
                  latency=res.latency if res.latency.count else None, metrics=metrics)


def by_second(files: list[Path], seconds: int) -> list[tuple[str, Latency, int]]:
    """The logged transactions in one-second bins by completion time, counted from the start of
    the first (connections are made before it): (start, latencies, failed or skipped) each; a
    late straggler joins the last second."""
    lines = []
    for path in files:
        with path.open() as fh:
            for line in fh:
                fields = line.split()
                if len(fields) >= 6:
                    end = int(fields[4]) * 1_000_000 + int(fields[5])
                    lines.append((end, int(fields[2]) if fields[2].isdigit() else None))
    n = max(1, seconds)
    if not lines:
        return []
    t0 = min(end - (micros or 0) for end, micros in lines)
    bins = [Latency() for _ in range(n)]
    failed = [0] * n
    for end, micros in lines:
        index = min(max(0, (end - t0) // 1_000_000), n - 1)
        if micros is None:
            failed[index] += 1
        else:
            bins[index].record_us(micros)
    return [(datetime.fromtimestamp(t0 / 1e6 + i, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
             bins[i], failed[i]) for i in range(n)]


def to_seconds(whole: Window, res: Result) -> list[Window]:
    """The one-second windows of a measured window (`run(per_second=True)`), each with its
    throughput and latencies only; a failed window stays whole, with its error."""
    if whole.status != "ok" or not res.seconds:
        return [whole]
    out = []
    for index, (start, lat, failed) in enumerate(res.seconds):
        requests = round(lat.count / res.sampling)
        metrics: dict[str, float | None] = {"tps": float(requests)}
        if res.sampling < 1:
            metrics["log_sampling"] = res.sampling
        out.append(Window(block=whole.block, label=whole.label, round=whole.round,
                          params=dict(whole.params), start=start, duration_s=1.0,
                          kind=whole.kind, window=index, requests=requests, errors=failed,
                          latency=lat if lat.count else None, metrics=metrics))
    return out
