"""Writing a run: create the directory, append windows durably, finalize with checksums."""

from __future__ import annotations

import json
import os
import re
import tempfile
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import Any

from perfpages.archive.manifest import Manifest, Status
from perfpages.archive.reader import (
    FLOOR_LABEL,
    RESULTS_FILE,
    RUN_FILE,
    Run,
    archived_files,
    open_run,
    read_manifest,
)
from perfpages.archive.window import Window
from perfpages.errors import ArchiveError


def utc_now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def write_text_atomic(path: Path, text: str) -> None:
    """Write next to the destination, fsync, then rename: readers never see half a file."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            os.fchmod(fh.fileno(), 0o644)  # mkstemp makes 0600; archives are meant to be shared
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_json_atomic(path: Path, data: Any) -> None:
    write_text_atomic(path, json.dumps(data, indent=2, ensure_ascii=False) + "\n")


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


class ArchiveWriter:
    """Appends windows to one run directory; each window is on disk before append() returns."""

    def __init__(self, run_dir: Path, manifest: Manifest, windows: list[Window]) -> None:
        self.run_dir = run_dir
        self.manifest = manifest
        self._seen = {w.key for w in windows}
        self._results = (run_dir / RESULTS_FILE).open("ab")

    @classmethod
    def create(cls, results_dir: Path | str, manifest: Manifest) -> ArchiveWriter:
        run_dir = Path(results_dir) / manifest.id
        if run_dir.exists():
            raise ArchiveError("run directory already exists", where=run_dir,
                               fix="a run is never overwritten: choose a new id or resume it")
        run_dir.parent.mkdir(parents=True, exist_ok=True)
        # Build in a hidden sibling and rename, so a crash here leaves no half-made run behind.
        staging = Path(tempfile.mkdtemp(dir=run_dir.parent, prefix=f".{manifest.id}."))
        staging.chmod(0o755)
        (staging / "samples").mkdir()
        (staging / "diagnostics").mkdir()
        (staging / RESULTS_FILE).touch()
        manifest = replace(manifest, status="running", files={})
        write_json_atomic(staging / RUN_FILE, manifest.to_json())
        staging.rename(run_dir)
        return cls(run_dir, manifest, [])

    @classmethod
    def resume(cls, run_dir: Path | str) -> ArchiveWriter:
        """Reopen a partial run; a torn last line (the interrupted window) is cut off."""
        run_dir = Path(run_dir)
        manifest = read_manifest(run_dir)
        if manifest.status == "complete":
            raise ArchiveError("run is complete and immutable", where=run_dir,
                               fix="archive a new run instead of resuming this one")
        results = run_dir / RESULTS_FILE
        raw = results.read_bytes() if results.exists() else b""
        if raw and not raw.endswith(b"\n"):
            with results.open("r+b") as fh:
                fh.truncate(raw.rfind(b"\n") + 1)
        run = open_run(run_dir)
        manifest = replace(manifest, status="running", ended=None)
        write_json_atomic(run_dir / RUN_FILE, manifest.to_json())
        return cls(run_dir, manifest, run.windows)

    def has(self, window_key: tuple[object, ...]) -> bool:
        """Whether a window with this key is already archived (so --resume can skip it)."""
        return window_key in self._seen

    def append(self, window: Window) -> None:
        if window.label not in self.manifest.labels and not (
                window.kind == "floor" and window.label == FLOOR_LABEL):
            raise ArchiveError(f"window for undeclared label {window.label!r}",
                               where=self.run_dir / RESULTS_FILE,
                               fix="declare the label in the suite")
        if window.key in self._seen:
            raise ArchiveError(f"duplicate window {window.key}", where=self.run_dir / RESULTS_FILE,
                               fix="each block, label, round, parameters and index runs once")
        line = json.dumps(window.to_json(), ensure_ascii=False, separators=(",", ":")) + "\n"
        self._results.write(line.encode("utf-8"))
        self._results.flush()
        os.fsync(self._results.fileno())
        self._seen.add(window.key)

    def write_file(self, relative: str, content: str | bytes) -> Path:
        """Store a sample or diagnostic file (e.g. 'diagnostics/lookup/statements.json')."""
        target = (self.run_dir / relative).resolve()
        if self.run_dir.resolve() not in target.parents or target.name == RUN_FILE:
            raise ArchiveError(f"refusing to write {relative!r} outside the run's files",
                               where=self.run_dir)
        target.parent.mkdir(parents=True, exist_ok=True)
        data = content.encode("utf-8") if isinstance(content, str) else content
        target.write_bytes(data)
        return target

    def finish(self, status: Status = "complete", ended: str | None = None) -> Run | None:
        """Close the run: complete runs get every file's sha256 and are validated once more."""
        self._results.close()
        files = archived_files(self.run_dir) if status == "complete" else {}
        self.manifest = replace(self.manifest, status=status, ended=ended or utc_now(),
                                files=files)
        write_json_atomic(self.run_dir / RUN_FILE, self.manifest.to_json())
        return open_run(self.run_dir) if status == "complete" else None

    def __enter__(self) -> ArchiveWriter:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if self._results.closed:
            return
        if exc_type is None:
            self.finish("complete")
        else:
            # Ctrl-C or an error: keep every finished window and leave the run resumable.
            self.finish("partial")
