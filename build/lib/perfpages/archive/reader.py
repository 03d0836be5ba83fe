"""Reading archived runs: find, open, validate and verify run directories (never writes)."""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from perfpages.archive.manifest import Manifest
from perfpages.archive.window import Window
from perfpages.errors import ArchiveError

RUN_FILE = "run.json"
RESULTS_FILE = "results.jsonl"
FLOOR_LABEL = "floor"  # floor windows (pgbench or /health straight) may use this undeclared label


def path_part(text: str) -> str:
    """A label or parameter set as one safe path segment (diagnostics/BLOCK/<this>/…)."""
    return re.sub(r"[^A-Za-z0-9_.+-]+", "-", text).strip("-") or "x"


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def archived_files(run_dir: Path) -> dict[str, str]:
    """sha256 of every file in the run directory except run.json, by relative POSIX path."""
    return {
        p.relative_to(run_dir).as_posix(): sha256_file(p)
        for p in sorted(run_dir.rglob("*"))
        if p.is_file() and p.name != RUN_FILE and not p.name.startswith(".")
    }


@dataclass
class Run:
    path: Path
    manifest: Manifest
    windows: list[Window]
    notes: list[str] = field(default_factory=list)  # tolerated oddities (a partial run's torn line)

    @property
    def id(self) -> str:
        return self.manifest.id

    @property
    def measured(self) -> list[Window]:
        return [w for w in self.windows if w.kind == "measure"]

    @property
    def floors(self) -> list[Window]:
        return [w for w in self.windows if w.kind == "floor"]


def read_manifest(run_dir: Path) -> Manifest:
    where = run_dir / RUN_FILE
    if not run_dir.is_dir():
        raise ArchiveError("no such run directory", where=run_dir,
                           fix="list the archived runs with `invoke bench.list`")
    if not where.is_file():
        raise ArchiveError("run.json is missing", where=run_dir,
                           fix="this is not a run directory; archive runs with `invoke bench.run`")
    try:
        data = json.loads(where.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ArchiveError(f"not valid JSON ({exc.msg})", where=where, line=exc.lineno,
                           fix="restore the file from git or archive a new run") from None
    except UnicodeDecodeError:
        raise ArchiveError("not UTF-8 text", where=where, fix="restore the file from git") from None
    manifest = Manifest.from_json(data, where)
    if manifest.id != run_dir.name:
        raise ArchiveError(f"id {manifest.id!r} does not match the directory name", where=where,
                           key="id", fix="rename nothing by hand: restore the directory's name")
    return manifest


def _scan(run_dir: Path, manifest: Manifest) -> tuple[list[Window], list[ArchiveError], list[str]]:
    """Every window, every problem (in file order) and tolerated notes of results.jsonl."""
    where = run_dir / RESULTS_FILE
    windows: list[Window] = []
    problems: list[ArchiveError] = []
    notes: list[str] = []
    if not where.is_file():
        problems.append(ArchiveError("results.jsonl is missing", where=run_dir,
                                     fix="restore it from git or archive a new run"))
        return windows, problems, notes
    raw = where.read_bytes()
    lines = raw.split(b"\n")
    torn_tail = lines[-1] != b""  # the writer ends every line with \n; a crash can tear the last
    seen: dict[tuple[object, ...], int] = {}
    last = len(lines) - 1 if not torn_tail else len(lines)
    for number, line in enumerate(lines[:last], start=1):
        if not line.strip():
            problems.append(ArchiveError("empty line", where=where, line=number,
                                         fix="the file was edited by hand: restore it from git"))
            continue
        is_tail = torn_tail and number == last
        try:
            data = json.loads(line)
        except (json.JSONDecodeError, UnicodeDecodeError):
            if is_tail and manifest.status != "complete":
                notes.append(f"{where}:{number}: torn last line (the window in progress when the "
                              "run stopped) is ignored")
                continue
            problems.append(ArchiveError("truncated or invalid JSON line", where=where, line=number,
                                         fix="the run was cut off mid-write: archive a new run"))
            continue
        try:
            window = Window.from_json(data, where, number)
        except ArchiveError as exc:
            problems.append(exc)
            continue
        if window.label not in manifest.labels and not (
                window.kind == "floor" and window.label == FLOOR_LABEL):
            problems.append(ArchiveError(
                f"window for undeclared label {window.label!r}", where=where, line=number,
                key="label", fix=f"declare it under labels in {RUN_FILE} or remove the run"))
            continue
        if window.round > manifest.method.rounds:
            problems.append(ArchiveError(
                f"round {window.round} beyond the method's {manifest.method.rounds} rounds",
                where=where, line=number, key="round", fix="archive a new run"))
            continue
        if window.key in seen:
            problems.append(ArchiveError(
                f"duplicate window (same block, label, round, parameters and index as line "
                f"{seen[window.key]})", where=where, line=number,
                fix="archive a new run; never append to a results file by hand"))
            continue
        seen[window.key] = number
        windows.append(window)
    if not problems and not any(w.kind == "measure" for w in windows) and \
            manifest.status == "complete":
        problems.append(ArchiveError("empty run: no measurement windows", where=where,
                                     fix="archive a new run; a complete run must hold data"))
    return windows, problems, notes


def _checksum_problems(run_dir: Path, manifest: Manifest) -> list[ArchiveError]:
    if manifest.status != "complete":
        return []
    where = run_dir / RUN_FILE
    if not manifest.files:
        return [ArchiveError("a complete run lists no checksums", where=where, key="files",
                             fix="archive a new run")]
    actual = archived_files(run_dir)
    problems = []
    for name, expected in manifest.files.items():
        if name not in actual:
            problems.append(ArchiveError(f"{name} is missing", where=run_dir,
                                         fix="restore it from git"))
        elif actual[name] != expected:
            problems.append(ArchiveError(
                "checksum mismatch (the file changed after the run was complete)",
                where=run_dir / name, fix="restore it from git: a complete run is immutable"))
    for name in sorted(set(actual) - set(manifest.files)):
        problems.append(ArchiveError("file not listed in run.json's checksums",
                                     where=run_dir / name,
                                     fix="remove it: a complete run is immutable"))
    return problems


def verify(run_dir: Path) -> list[ArchiveError]:
    """Every problem of one run directory (schema, lines, checksums); empty when intact."""
    try:
        manifest = read_manifest(run_dir)
    except ArchiveError as exc:
        return [exc]
    _, problems, _ = _scan(run_dir, manifest)
    return problems + _checksum_problems(run_dir, manifest)


def open_run(run_dir: Path | str) -> Run:
    """Read and validate a run; raise the first problem as a one-line ArchiveError."""
    run_dir = Path(run_dir)
    manifest = read_manifest(run_dir)
    windows, problems, notes = _scan(run_dir, manifest)
    # Line problems first: they say more than the checksum mismatch they also cause.
    problems += _checksum_problems(run_dir, manifest)
    if problems:
        raise problems[0]
    return Run(path=run_dir, manifest=manifest, windows=windows, notes=notes)


def find_runs(results_dir: Path | str) -> list[Path]:
    """Run directories under results/, oldest first (ids start with their date)."""
    root = Path(results_dir)
    if not root.is_dir():
        return []
    return sorted(p for p in root.iterdir() if p.is_dir() and (p / RUN_FILE).exists())


def resolve(results_dir: Path | str, ref: str | None) -> Path:
    """A run directory from an id, a path, a unique part of an id, or None for the newest run."""
    runs = find_runs(results_dir)
    if ref is None:
        if not runs:
            raise ArchiveError("no archived runs", where=results_dir,
                               fix="archive one with `invoke bench.run --suite NAME`")
        return runs[-1]
    for candidate in (Path(results_dir) / ref, Path(ref)):
        if candidate.is_dir():
            return candidate
    exact = [p for p in runs if p.name == ref]
    if exact:
        return exact[0]
    partial = [p for p in runs if ref in p.name]
    if len(partial) == 1:
        return partial[0]
    if partial:
        names = ", ".join(p.name for p in partial[:5])
        raise ArchiveError(f"run {ref!r} is ambiguous ({names})", where=results_dir,
                           fix="give more of the id")
    raise ArchiveError(f"no run {ref!r}", where=results_dir,
                       fix="list the archived runs with `invoke bench.list`")
