"""The subject service of an HTTP suite: start it from a build, wait for health, stop it cleanly."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType

from perfpages.errors import PerfpagesError, clip
from perfpages.processes import die_with_parent, free_port


class ServiceError(PerfpagesError):
    """The subject did not start, did not become healthy, or died."""


@dataclass(frozen=True)
class ServiceSpec:
    """How to run the subject. `{port}` and `{host}` in the command are filled in at start."""

    name: str
    command: tuple[str, ...]
    env: dict[str, str] = field(default_factory=dict)
    health_path: str = "/health"
    host: str = "127.0.0.1"
    port: int = 0  # 0: a free port is chosen at every start
    startup_timeout_s: float = 30.0
    stop_timeout_s: float = 10.0
    cwd: Path | None = None  # None: the label's working directory under the run's temp dir


# A line where a server says where it listens ("listening on 127.0.0.1:8000", gunicorn's
# "Listening at: http://0.0.0.0:8000", uvicorn's "running on http://[::1]:8000"), and the
# address in it; other lines may name other addresses (the database's).
_LISTENS = re.compile(r"listen|running on|serving|bound|bind", re.IGNORECASE)
_ADDRESS = re.compile(r"(?<![\w.:])((?:\d{1,3}\.){3}\d{1,3}|localhost|\[[0-9a-fA-F:]+\]|"
                      r"[\w-]+(?:\.[\w-]+)*):(\d{1,5})\b")


def _lines(path: Path) -> list[str]:
    try:
        return [ln.strip() for ln in path.read_text(errors="replace").splitlines() if ln.strip()]
    except OSError:
        return []


def _last_line(path: Path) -> str:
    lines = _lines(path)
    return clip(lines[-1], 200) if lines else ""


def listening_elsewhere(log: str, port: int) -> str | None:
    """The address a subject's log says it listens on when that is not `port`; None when it
    names none, or names `port` too."""
    found = [m.group(0) for line in log.splitlines() if _LISTENS.search(line)
             for m in _ADDRESS.finditer(line)]
    if not found or any(a.rsplit(":", 1)[1] == str(port) for a in found):
        return None
    return found[-1]


class Service:
    """One running instance; its output goes to `log_path` (kept in diagnostics/)."""

    def __init__(self, spec: ServiceSpec, log_path: Path, cpus: tuple[int, ...] = ()) -> None:
        self.spec = spec
        self.log_path = log_path
        self.cpus = cpus  # the run's placement of the subject (its whole process group)
        self.port = spec.port or free_port(spec.host)
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://{self.spec.host}:{self.port}"

    def start(self) -> Service:
        argv = [a.format(port=self.port, host=self.spec.host) for a in self.spec.command]
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with self.log_path.open("ab") as log:
            try:
                # Its own session: stop() signals the whole group (gunicorn master and workers).
                self.process = subprocess.Popen(
                    argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                    env={**os.environ, **self.spec.env}, start_new_session=True,
                    cwd=self.spec.cwd, preexec_fn=die_with_parent(signal.SIGTERM, self.cpus))
            except OSError as exc:
                raise ServiceError(f"cannot start {self.spec.name}: {exc.strerror}",
                                   where=argv[0], fix="check the build's installation") from None
        self.wait_healthy()
        return self

    def healthy(self) -> bool:
        try:
            with urllib.request.urlopen(self.url + self.spec.health_path, timeout=2) as resp:
                status: int = resp.status
                return 200 <= status < 300
        except (urllib.error.URLError, OSError):
            return False

    def wait_healthy(self) -> None:
        deadline = time.monotonic() + self.spec.startup_timeout_s
        while time.monotonic() < deadline:
            if not self.alive():
                code = self.process.returncode if self.process else None
                self.stop()
                raise ServiceError(
                    f"{self.spec.name} exited with status {code} before it was healthy "
                    f"(last log line: {_last_line(self.log_path) or 'none'})",
                    where=self.log_path, fix="read the log; check the label's settings")
            if self.healthy():
                return
            time.sleep(0.05)
        self.stop()
        elsewhere = listening_elsewhere("\n".join(_lines(self.log_path)), self.port)
        if elsewhere is not None:
            given = "{port}" in " ".join(self.spec.command) or self.spec.port
            raise ServiceError(
                f"{self.spec.name} listens on {elsewhere}, not on port {self.port} it was given "
                f"(last log line: {_last_line(self.log_path)})", where=self.log_path,
                fix="the subject ignores the port its command passes: make it listen on "
                "{port} (perfpages probes only that port)" if given else "its command never "
                "passes the port: add {port} to it, e.g. --bind {host}:{port}")
        raise ServiceError(
            f"{self.spec.name} not healthy at {self.url}{self.spec.health_path} after "
            f"{self.spec.startup_timeout_s:g} s (last log line: "
            f"{_last_line(self.log_path) or 'none'})",
            where=self.log_path, fix="read the log; raise the startup timeout if it is slow")

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def stop(self) -> int | None:
        """SIGTERM to the process group, SIGKILL after the grace period; safe to call twice."""
        proc = self.process
        if proc is None:
            return None
        if proc.poll() is None:
            self._signal(signal.SIGTERM)
            try:
                proc.wait(self.spec.stop_timeout_s)
            except subprocess.TimeoutExpired:
                self._signal(signal.SIGKILL)
                proc.wait()
        # Workers that outlived their master (a crash) are still in the group.
        self._signal(signal.SIGKILL)
        return proc.returncode

    def _signal(self, sig: signal.Signals) -> None:
        assert self.process is not None
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.process.pid, sig)

    def __enter__(self) -> Service:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()
