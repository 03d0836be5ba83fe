"""Writing a run: create the directory, append windows durably, finalize with checksums and
seal it: every byte searched for secrets first, then seal.json, then run.json says complete
(archive/finish.py)."""

from __future__ import annotations

import errno
import fcntl
import json
import os
import re
import shutil
import socket
import tempfile
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType

from perfpages.archive import completeness, files, finish, schema

# re-exported: the site writes with them
from perfpages.archive.finish import write_bytes_atomic as write_bytes_atomic
from perfpages.archive.finish import write_json_atomic as write_json_atomic
from perfpages.archive.finish import write_json_durable as write_json_durable
from perfpages.archive.finish import write_text_atomic as write_text_atomic
from perfpages.archive.manifest import Manifest, Status
from perfpages.archive.reader import (
    FLOOR_LABEL,
    LOCK_FILE,
    RESULTS_FILE,
    RUN_FILE,
    SEAL_FILE,
    Run,
    archived_files,
    open_run,
    read_manifest,
    writer_state,
)
from perfpages.archive.secrets import Redactor
from perfpages.archive.window import Window, check_values
from perfpages.errors import ArchiveError

# Files under these folders larger than COMPRESS_ABOVE are stored as NAME.gz (files.gzip_bytes).
# The queryapigate run of 2026-11-30 was 48 MB, 45 MB of it three per-request server logs and
# four samples CSVs (0.5-0.8 MB each); below 256 KiB (summaries, plans, flame graphs) a file
# stays plain, for `cat`, diffs and the browser, and compressing it would save little.
COMPRESSED_DIRS = ("diagnostics", "samples")
COMPRESS_ABOVE = 256 << 10


def compressible(relative: str, size: int) -> bool:
    return (relative.split("/", 1)[0] in COMPRESSED_DIRS and size > COMPRESS_ABOVE
            and not relative.endswith(files.GZ))


def utc_now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def new_run_id(results_dir: Path, suite: str, slug: str = "", day: str | None = None) -> str:
    """`<YYYY-MM-DD>-<suite>[-<slug>]`, with -2, -3… when that directory already exists."""
    day = day or datetime.now(UTC).strftime("%Y-%m-%d")
    stem = "-".join(part for part in (day, suite, slug) if part)
    stem = re.sub(r"[^a-z0-9_.-]+", "-", stem.lower()).strip("-")
    candidate, n = stem, 1
    while (results_dir / candidate).exists():
        n += 1
        candidate = f"{stem}-{n}"
    return candidate


RESERVE_BYTES = 256 * 1024  # a partial run.json is a few kB; its atomic write needs one copy


class RunLock:
    """The writer's flock on `.lock` in the run directory, with its pid, host and start in it:
    the kernel drops the lock when the writer dies, however it dies, so a `running` run whose
    lock is free has a dead writer. The file is removed when the run is finished."""

    def __init__(self, run_dir: Path) -> None:
        self.path = run_dir / LOCK_FILE
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            holder = writer_state(run_dir) or "another process"
            raise ArchiveError(f"run is being written by {holder}", where=run_dir,
                               fix="wait for it to end, or stop that process") from None
        state = {"pid": os.getpid(), "host": socket.gethostname(), "started": utc_now()}
        os.ftruncate(fd, 0)
        self.held = (json.dumps(state) + "\n").encode()
        # Padded with spaces (JSON whitespace, real blocks): space kept for the run.json that
        # says `partial` when a full disk stops the run (free_reserve).
        try:
            os.pwrite(fd, self.held + b" " * RESERVE_BYTES, 0)
        except OSError:  # no room for the reserve: the holder alone
            os.ftruncate(fd, 0)
            os.pwrite(fd, self.held, 0)
        self.fd: int | None = fd

    def free_reserve(self) -> bool:
        """Give the reserved space back (the lock stays held); False if there was none."""
        if self.fd is None or os.fstat(self.fd).st_size <= len(self.held):
            return False
        os.ftruncate(self.fd, len(self.held))
        return True

    def move(self, run_dir: Path) -> None:
        """The directory was renamed (a new run's staging): the lock follows its inode."""
        self.path = run_dir / LOCK_FILE

    def release(self, remove: bool = True) -> None:
        """Remove the file while still holding the lock (no one sees a free, stale one), then
        close; with remove=False the file stays and names the writer that left it."""
        if self.fd is None:
            return
        if remove:
            self.path.unlink(missing_ok=True)
        os.close(self.fd)
        self.fd = None


class ArchiveWriter:
    """Appends windows to one run directory; each window is on disk before append() returns."""

    def __init__(self, run_dir: Path, manifest: Manifest, windows: list[Window],
                 lock: RunLock, publish_to: Path | None = None) -> None:
        self.run_dir = run_dir
        self.publish_to = publish_to  # a hidden run's name once sealed (create(hidden=True))
        self.lock = lock
        self.manifest = manifest
        self._seen = {w.key for w in windows}
        # What completeness needs of each window, without its histogram (~200 KB each).
        self._shapes = [replace(w, latency=None, metrics={}) for w in windows]
        self._results = (run_dir / RESULTS_FILE).open("ab")
        # What the run's secrets are (the runner sets them): applied to all that is written.
        self.redactor = Redactor()

    @classmethod
    def create(cls, results_dir: Path | str, manifest: Manifest,
               hidden: bool = False) -> ArchiveWriter:
        """A new run directory, `running`. hidden=True keeps it under its hidden staging name
        until it is sealed (`perfpages import`: a run that is whole or not there at all, never
        one to resume)."""
        run_dir = Path(results_dir) / manifest.id
        if run_dir.exists():
            raise ArchiveError("run directory already exists", where=run_dir,
                               fix="a run is never overwritten: choose a new id or resume it")
        run_dir.parent.mkdir(parents=True, exist_ok=True)
        # Build in a hidden sibling and rename, so a crash here leaves no half-made run behind.
        staging = Path(tempfile.mkdtemp(dir=run_dir.parent, prefix=f".{manifest.id}."))
        lock: RunLock | None = None
        try:
            staging.chmod(0o755)
            (staging / "samples").mkdir()
            (staging / "diagnostics").mkdir()
            (staging / RESULTS_FILE).touch()
            lock = RunLock(staging)  # locked before the run is visible: never `running` unlocked
            manifest = replace(manifest, status="running", files={})
            write_json_atomic(staging / RUN_FILE, manifest.to_json())
            if hidden:
                return cls(staging, manifest, [], lock, publish_to=run_dir)
            staging.rename(run_dir)
        except BaseException:  # a full disk, a signal: no hidden directory left behind
            if lock is not None:
                lock.release()
            shutil.rmtree(staging, ignore_errors=True)
            raise
        lock.move(run_dir)
        return cls(run_dir, manifest, [], lock)

    def _publish(self) -> None:
        """A hidden run, sealed: renamed to its name (never over a run that appeared since)."""
        if self.publish_to is None:
            return
        if self.publish_to.exists():
            raise ArchiveError("run directory already exists", where=self.publish_to,
                               fix="a run is never overwritten: run the command again")
        self.run_dir.rename(self.publish_to)
        finish.fsync_dir(self.publish_to.parent)
        self.run_dir, self.publish_to = self.publish_to, None
        self.lock.move(self.run_dir)

    @classmethod
    def resume(cls, run_dir: Path | str, lock: RunLock | None = None) -> ArchiveWriter:
        """Reopen a partial run, or a running one whose writer died (its lock is taken over);
        a torn last line (the interrupted window) is cut off."""
        run_dir = Path(run_dir)
        lock = lock or RunLock(run_dir)
        manifest = read_manifest(run_dir)
        if manifest.status in ("complete", "failed"):
            lock.release()
            raise ArchiveError(f"run is {manifest.status} and immutable", where=run_dir,
                               fix="archive a new run instead of resuming this one")
        results = run_dir / RESULTS_FILE
        raw = results.read_bytes() if results.exists() else b""
        if raw and not raw.endswith(b"\n"):
            with results.open("r+b") as fh:
                fh.truncate(raw.rfind(b"\n") + 1)
        run = open_run(run_dir)
        manifest = replace(manifest, status="running", ended=None,
                           format_version=schema.FORMAT_VERSION)
        write_json_atomic(run_dir / RUN_FILE, manifest.to_json())
        return cls(run_dir, manifest, run.windows, lock)

    def has(self, window_key: tuple[object, ...]) -> bool:
        """Whether a window with this key is already archived (so --resume can skip it)."""
        return window_key in self._seen

    def append(self, window: Window) -> None:
        where = self.run_dir / RESULTS_FILE
        if window.error:
            window = replace(window, error=self.redactor.text(window.error))
        if window.label not in self.manifest.labels and not (
                window.kind == "floor" and window.label == FLOOR_LABEL):
            raise ArchiveError(f"window for undeclared label {window.label!r}", where=where,
                               fix="declare the label in the suite")
        if self.manifest.blocks and window.block not in self.manifest.blocks:
            raise ArchiveError(f"window for undeclared block {window.block!r}", where=where,
                               fix="declare the block in the suite")
        if window.key in self._seen:
            raise ArchiveError(f"duplicate window {window.key}", where=where,
                               fix="each block, label, round, parameters and index runs once")
        data = window.to_json()
        fix = "a driver produced a value the reader would refuse: report it as a perfpages bug"
        try:
            line = json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
        except ValueError:
            raise ArchiveError("a window holds NaN or infinity", where=where, fix=fix) from None
        # The reader's value checks, before the line is on disk rather than after the run.
        number = len(self._seen) + 1
        try:
            schema.loads(line.encode("utf-8"), where=where, line=number)
            check_values(data, window.latency, where, number)
        except ArchiveError as exc:
            raise ArchiveError(exc.what, where=where, line=number, key=exc.key, fix=fix) from None
        line += "\n"
        self._results.write(line.encode("utf-8"))
        self._results.flush()
        os.fsync(self._results.fileno())
        self._seen.add(window.key)
        self._shapes.append(replace(window, latency=None, metrics={}))

    def write_file(self, relative: str, content: str | bytes) -> Path:
        """Store a sample or diagnostic file (e.g. 'diagnostics/lookup/statements.json'),
        redacted, then compressed as NAME.gz when `compressible`; returns the path written."""
        target = (self.run_dir / relative).resolve()
        if self.run_dir.resolve() not in target.parents or target.name in (RUN_FILE, SEAL_FILE):
            raise ArchiveError(f"refusing to write {relative!r} outside the run's files",
                               where=self.run_dir)
        target.parent.mkdir(parents=True, exist_ok=True)
        data = content.encode("utf-8") if isinstance(content, str) else content
        data = self.redactor.data(data)  # on the plain text: a .gz hides nothing from it
        packed = target.with_name(target.name + files.GZ)
        if compressible(relative, len(data)):
            write_bytes_atomic(packed, files.gzip_bytes(data))
            target.unlink(missing_ok=True)  # a rewrite replaces either form
            return packed
        target.write_bytes(data)
        packed.unlink(missing_ok=True)
        return target

    def redact_files(self) -> None:
        """Files written beside the writer (a subject's server log) are redacted before the
        run is closed: no secret reaches the checksums, the seal or the site. A .gz is
        redacted inside (its plain text), and rewritten only when that changed it."""
        for path in sorted(self.run_dir.rglob("*")):
            if path.is_file() and not path.is_symlink() and path.parent != self.run_dir:
                if path.name.endswith(files.GZ):
                    data = b"".join(files.chunks(path))
                    clean = self.redactor.data(data)
                    if clean != data:
                        write_bytes_atomic(path, files.gzip_bytes(clean))
                    continue
                data = path.read_bytes()
                clean = self.redactor.data(data)
                if clean != data:
                    write_bytes_atomic(path, clean)

    def compress_files(self) -> None:
        """Store the large files written beside the writer as NAME.gz once the run is final (a
        subject appends to its server log turn after turn, and a resumed run goes on
        appending). A plain file beside its .gz is what an interrupted call left, and is whole:
        it replaces the .gz."""
        for folder in COMPRESSED_DIRS:
            for stale in (self.run_dir / folder).rglob(".*.tmp"):  # a killed call's leftovers
                stale.unlink()
            for path in sorted((self.run_dir / folder).rglob("*")):
                relative = path.relative_to(self.run_dir).as_posix()
                if path.is_symlink() or not path.is_file() or path.name.startswith(".") or \
                        not compressible(relative, path.stat().st_size):
                    continue
                write_bytes_atomic(path.with_name(path.name + files.GZ),
                                   files.gzip_bytes(path.read_bytes()))
                path.unlink()

    @property
    def windows(self) -> list[Window]:
        """Every archived window, without histograms (enough to tell what failed)."""
        return list(self._shapes)

    def finish(self, status: Status = "complete", ended: str | None = None) -> Run | None:
        """Close the run. A complete run is searched for secrets, then sealed in the order of
        archive/finish.py (seal.json before run.json says complete), and validated once more.
        A run that lacks windows it declares is left partial instead, and the error says so;
        one that holds a secret value is left failed, unsealed. The lock is held until run.json
        says how the run ended (seals leave `.lock` out), then removed."""
        self._results.close()
        self.redact_files()
        if status == "complete":
            lacking = completeness.problems(self.manifest, self._shapes,
                                            self.run_dir / RESULTS_FILE)
            if lacking:
                self.finish("partial", ended)
                raise ArchiveError(f"{lacking[0].what}; the run is left partial",
                                   where=lacking[0].where,
                                   fix=f"complete it with `invoke bench.run --resume "
                                       f"{self.manifest.id}`")
            for stale in self.run_dir.glob(finish.STALE):  # a killed writer's temporaries
                stale.unlink()
        if status in ("complete", "failed"):  # final: nothing appends to a log any more
            self.compress_files()
        sums = archived_files(self.run_dir) if status == "complete" else {}
        self.manifest = replace(self.manifest, status=status, ended=ended or utc_now(),
                                files=sums, format_version=schema.FORMAT_VERSION)
        if status == "complete":
            final = finish.json_text(self.manifest.to_json()).encode("utf-8")
            leaked = finish.scan(self.run_dir, self.redactor, {RUN_FILE: final})
            if leaked is not None:
                self._refuse(leaked)
            finish.complete(self.run_dir, finish.stage(self.run_dir, self.manifest), sums)
            self._publish()
            self.lock.release()
            return open_run(self.run_dir)
        write_json_atomic(self.run_dir / RUN_FILE, self.manifest.to_json())
        self.lock.release()
        return None

    def _refuse(self, leaked: str) -> None:
        """A secret value got past the redaction (a file that is not UTF-8, a title): the run
        ends failed and unsealed, run.json masked as well as it can be; the value never shown."""
        self.manifest = replace(self.manifest, status="failed", files={})
        text = self.redactor.text(finish.json_text(self.manifest.to_json()))
        write_text_atomic(self.run_dir / RUN_FILE, text)
        self.lock.release()
        raise ArchiveError("holds the value of a secret; the run is left failed and unsealed",
                           where=self.run_dir / leaked,
                           fix="mark values that are not secret Public(...) in the suite, keep "
                               "secrets out of titles and parameters, remove the file, and "
                               "run again")

    @classmethod
    def finish_seal(cls, run_dir: Path) -> bool:
        """Finish the seal of a run whose writer was killed while sealing it (re-checking
        every file first: finish.recover); False for any other run."""
        if not finish.interrupted(run_dir, read_manifest(run_dir)):
            return False
        lock = RunLock(run_dir)  # refuses a live writer
        try:
            finish.recover(run_dir, read_manifest(run_dir))
        except BaseException:
            lock.release(remove=False)
            raise
        lock.release()
        return True

    def __enter__(self) -> ArchiveWriter:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if self._results.closed:
            return
        if exc_type is None:
            self.finish("complete")
            return
        # Ctrl-C or an error: keep every finished window and leave the run resumable. A full
        # disk frees the lock's reserve for run.json; when even that cannot be written, the
        # run stays `running` with a free lock naming its dead writer (--resume takes it over).
        try:
            self.finish("partial")
        except OSError as exc:
            if exc.errno == errno.ENOSPC and self.lock.free_reserve():
                try:  # the lock's reserve is room enough for run.json
                    self.finish("partial")
                    return
                except OSError:
                    pass
            self.lock.release(remove=False)

    def abandon(self) -> None:
        """Stop writing without finishing (see __exit__): the run stays resumable."""
        if not self._results.closed:
            self.__exit__(KeyboardInterrupt, None, None)
