"""What a run directory may hold, read without following links, and the seal of a complete run.

A run holds regular files and directories only. When a run completes, the writer writes
`seal.json` last: the sha256 of every file, run.json included, so an edit anywhere shows.
Runs of format version 1 were archived before sealing existed: run.json lists the other
files' sha256, and run.json itself is unchecked until `bench.seal` adds a seal later (with an
`added` record saying when, by which perfpages and from which commit: see archive/unsealed.py).
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
from pathlib import Path
from typing import Any, BinaryIO

from perfpages.archive import schema
from perfpages.archive.manifest import Manifest
from perfpages.errors import ArchiveError

RUN_FILE = "run.json"
RESULTS_FILE = "results.jsonl"
SEAL_FILE = "seal.json"
LOCK_FILE = ".lock"  # a running run's writer lock: never sealed, removed when the run ends
SEAL_FORMAT = "perfpages-seal"
SEALED_SINCE = 2  # the first format version whose complete runs are sealed
MAX_JSON_BYTES = 16 << 20  # run.json and seal.json: real ones are ~10 KB
LEGACY_NOTE = "unsealed (archived before sealing)"
ADDED = "added"  # the key of a seal added later to a run archived before sealing
_SHA256 = re.compile(r"[0-9a-f]{64}")
_ONLY_REGULAR = "a run holds only regular files and directories: remove it or restore the run"


def _shown(path: Path) -> str:
    """A path as an error line may show it: a file named with a newline stays one line."""
    return schema.one_line(str(path))


def open_regular(path: Path) -> BinaryIO:
    """Open a run's file for reading: never through a link, never a device, FIFO or socket.

    Raises FileNotFoundError as is (callers say what a missing file means)."""
    if path.is_symlink():
        raise ArchiveError("a symbolic link", where=_shown(path), fix=_ONLY_REGULAR)
    # O_NOFOLLOW closes the race with the check above; O_NONBLOCK keeps a FIFO from blocking.
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise ArchiveError(f"cannot be read ({exc.strerror})", where=_shown(path),
                           fix="check the file's permissions") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise ArchiveError("not a regular file (a directory, device, FIFO or socket)",
                           where=_shown(path), fix=_ONLY_REGULAR)
    return os.fdopen(fd, "rb")


def read_bounded(path: Path, limit: int = MAX_JSON_BYTES) -> bytes:
    with open_regular(path) as fh:
        raw = fh.read(limit + 1)
    if len(raw) > limit:
        raise ArchiveError(f"larger than {limit >> 20} MiB", where=_shown(path),
                           fix="this is not a file perfpages wrote: restore it from git")
    return raw


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open_regular(path) as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def walk(run_dir: Path) -> tuple[list[str], list[ArchiveError]]:
    """Every regular file under run_dir (relative POSIX paths, sorted, hidden ones included but
    the writer's lock), and a problem for every link, device, FIFO or socket (never followed)."""
    files: list[str] = []
    problems: list[ArchiveError] = []
    pending = [run_dir]
    while pending:
        folder = pending.pop()
        try:
            with os.scandir(folder) as listing:
                entries = sorted(listing, key=lambda e: e.name)
        except OSError as exc:
            problems.append(ArchiveError(f"cannot be listed ({exc.strerror})", where=_shown(folder),
                                         fix="check the directory's permissions"))
            continue
        for entry in entries:
            path = Path(entry.path)
            if folder == run_dir and entry.name == LOCK_FILE:
                continue  # the writer's lock (see LOCK_FILE), never part of the archive
            if entry.is_symlink():
                problems.append(ArchiveError("a symbolic link", where=_shown(path),
                                             fix=_ONLY_REGULAR))
            elif entry.is_dir(follow_symlinks=False):
                pending.append(path)
            elif entry.is_file(follow_symlinks=False):
                files.append(path.relative_to(run_dir).as_posix())
            else:
                problems.append(ArchiveError("not a regular file (a device, FIFO or socket)",
                                             where=_shown(path), fix=_ONLY_REGULAR))
    return sorted(files), problems


def archived_files(run_dir: Path) -> dict[str, str]:
    """sha256 of every file but run.json and seal.json, by relative POSIX path; raises on a link
    or a special file (nothing that is not a regular file can be sealed)."""
    files, problems = walk(run_dir)
    if problems:
        raise problems[0]
    return {name: sha256_file(run_dir / name) for name in files
            if name not in (RUN_FILE, SEAL_FILE)}


def contents(run_dir: Path) -> dict[str, Any]:
    """The seal of a run whose run.json is final: every file's sha256, run.json's included."""
    files = archived_files(run_dir)
    files[RUN_FILE] = sha256_file(run_dir / RUN_FILE)
    return document(files)


def document(files: dict[str, str]) -> dict[str, Any]:
    """seal.json's contents for these sha256 by file (run.json's among them)."""
    return {"format": SEAL_FORMAT, "algorithm": "sha256", "files": dict(sorted(files.items()))}


def _load(run_dir: Path) -> dict[str, Any]:
    """seal.json, checked (raises ArchiveError when it is malformed)."""
    where = run_dir / SEAL_FILE
    data = schema.loads(read_bounded(where), where=where)
    fix = "restore seal.json from git"
    if not isinstance(data, dict) or not {"format", "algorithm", "files"} <= set(data) or \
            not set(data) <= {"format", "algorithm", "files", ADDED}:
        raise ArchiveError("not a seal: expected the keys format, algorithm and files",
                           where=where, fix=fix)
    if data["format"] != SEAL_FORMAT or data["algorithm"] != "sha256":
        raise ArchiveError(f"not a {SEAL_FORMAT} with sha256 checksums", where=where,
                           key="format", fix=fix)
    files = data["files"]
    if not isinstance(files, dict) or RUN_FILE not in files or not all(
            isinstance(v, str) and _SHA256.fullmatch(v) for v in files.values()):
        raise ArchiveError("expected the sha256 (64 hex digits) of every file, run.json's "
                           "included", where=where, key="files", fix=fix)
    schema.check(data, "seal", where=where, fix=fix)  # the added-later record's keys
    return data


def read(run_dir: Path) -> dict[str, str]:
    """The sha256 by file that seal.json fixes (raises ArchiveError when it is malformed)."""
    files: dict[str, str] = _load(run_dir)["files"]
    return files


def added(run_dir: Path) -> dict[str, Any] | None:
    """The record of a seal added later (`bench.seal`), or None: no seal, or the writer's."""
    if not (run_dir / SEAL_FILE).is_file():
        return None
    record: dict[str, Any] | None = _load(run_dir).get(ADDED)
    return record


def added_text(record: dict[str, Any]) -> str:
    """One line for verify and the run page: "added later, 2026-12-02, perfpages 0.1.0 at …"."""
    return (f"added later, {str(record['at'])[:10]}, perfpages {record['perfpages']} at "
            f"{record['commit']}")


def _compare(run_dir: Path, expected: dict[str, str], present: list[str], listing: str,
             flagged: list[ArchiveError]) -> list[ArchiveError]:
    problems = []
    named = {p.where for p in flagged}  # a link in a file's place is reported once, as a link
    there = set(present)
    for name, digest in expected.items():
        if _shown(run_dir / name) in named:
            continue
        if name not in there:
            problems.append(ArchiveError(f"{schema.one_line(name)} is missing", where=run_dir,
                                         fix="restore it from git"))
        elif sha256_file(run_dir / name) != digest:
            what = "the run was sealed" if name == RUN_FILE else "the run was complete"
            problems.append(ArchiveError(
                f"checksum mismatch (the file changed after {what})", where=_shown(run_dir / name),
                fix="restore it from git: a complete run is immutable"))
    for name in present:
        if name not in expected:
            problems.append(ArchiveError(f"file not listed in {listing}",
                                         where=_shown(run_dir / name),
                                         fix="remove it: a complete run is immutable"))
    problems.sort(key=lambda p: p.where != str(run_dir / RUN_FILE))  # run.json's first
    return problems


def check(run_dir: Path, manifest: Manifest) -> tuple[list[ArchiveError], list[str]]:
    """The run's files against its seal (or a legacy run's checksums): problems and notes."""
    files, problems = walk(run_dir)
    sealed = SEAL_FILE in files
    where = run_dir / SEAL_FILE
    if manifest.status != "complete":
        if sealed:
            problems.append(ArchiveError(
                f"a seal in a {manifest.status} run (only complete runs are sealed)", where=where,
                fix=f"if its writer was killed while sealing it, `invoke bench.run --resume "
                    f"{manifest.id}` finishes the seal; else restore the run from git"))
        return problems, []
    # A resumable run may hold both (an interrupted compression); a complete one never does
    present = set(files)
    for name in files:  # which of the two would a reader take? Neither: one line
        if name.endswith(".gz") and name[:-3] in present:
            problems.append(ArchiveError(
                f"{name[:-3]} and {name} are both present (one file, stored twice)",
                where=run_dir / name[:-3], fix="restore the run from git: a writer keeps "
                                               "one of them"))
    if not manifest.files:
        problems.append(ArchiveError("a complete run lists no checksums",
                                     where=run_dir / RUN_FILE, key="files",
                                     fix="archive a new run"))
    others = [name for name in files if name not in (RUN_FILE, SEAL_FILE)]
    listed = "run.json's checksums"
    if manifest.format_version < SEALED_SINCE and not sealed:
        return problems + _compare(run_dir, manifest.files, others, listed, problems), \
            [LEGACY_NOTE]
    if not sealed:
        problems.append(ArchiveError(
            f"seal.json is missing (a complete format-{manifest.format_version} run is sealed)",
            where=run_dir, fix=f"restore it from git; a seal is never rewritten by hand (when "
                               f"its writer was killed sealing it, a {LOCK_FILE} is left and "
                               f"`invoke bench.run --resume {manifest.id}` seals it)"))
        return problems + _compare(run_dir, manifest.files, others, listed, problems), []
    try:
        data = _load(run_dir)
    except ArchiveError as exc:
        return [*problems, exc], []
    seal, record = data["files"], data.get(ADDED)
    legacy = manifest.format_version < SEALED_SINCE
    if legacy and record is None:  # only `bench.seal` seals a format-1 run, and says so
        problems.append(ArchiveError(
            f"a seal in a format-{manifest.format_version} run (that format predates sealing)",
            where=where, fix="run.json's format_version was edited, or seal.json lost the "
                             "record of being added later: restore the run from git"))
        return problems, []
    if not legacy and record is not None:
        problems.append(ArchiveError(
            f"a seal added later in a format-{manifest.format_version} run (its writer sealed "
            "it)", where=where, fix="seal.json was edited: restore the run from git"))
        return problems, []
    problems += _compare(run_dir, seal, [RUN_FILE, *others], "seal.json", problems)
    if not problems and {k: v for k, v in seal.items() if k != RUN_FILE} != manifest.files:
        problems.append(ArchiveError("run.json's checksums differ from seal.json's",
                                     where=run_dir / RUN_FILE, key="files",
                                     fix="restore the run from git"))
    return problems, [f"sealed: {added_text(record)}"] if record is not None else []
