"""Reading archived runs: find, open, validate and verify run directories (never writes).

Every file is read as a hostile one may be: no links followed, sizes and nesting bounded,
numbers finite; each refusal is one ArchiveError naming the file, the line and the key.
"""

from __future__ import annotations

import fcntl
import itertools
import json
import os
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from perfpages.archive import completeness, files, samples, schema, seal
from perfpages.archive.files import path_part as path_part  # re-exported: the name callers import
from perfpages.archive.manifest import Manifest

# re-exported: the names readers import
from perfpages.archive.seal import LOCK_FILE as LOCK_FILE
from perfpages.archive.seal import RESULTS_FILE as RESULTS_FILE
from perfpages.archive.seal import RUN_FILE as RUN_FILE
from perfpages.archive.seal import SEAL_FILE as SEAL_FILE
from perfpages.archive.seal import archived_files as archived_files
from perfpages.archive.seal import sha256_file as sha256_file
from perfpages.archive.window import Window, params_key
from perfpages.errors import ArchiveError, clip

FLOOR_LABEL = "floor"  # floor windows (pgbench or /health straight) may use this undeclared label
MAX_LINE_BYTES = 16 << 20  # one window of results.jsonl: real ones are under 4 KB


@dataclass
class Run:
    path: Path
    manifest: Manifest
    windows: list[Window]
    notes: list[str] = field(default_factory=list)  # tolerated oddities (a partial run's torn line)
    # What readers derive from the windows, computed once per opened run (analysis.rows.rows)
    derived: dict[object, object] = field(default_factory=dict, repr=False, compare=False)

    @property
    def id(self) -> str:
        return self.manifest.id

    @property
    def measured(self) -> list[Window]:
        return [w for w in self.windows if w.kind == "measure"]

    @property
    def floors(self) -> list[Window]:
        return [w for w in self.windows if w.kind == "floor"]


def writer_state(run_dir: Path) -> str | None:
    """Who holds a run's lock: 'pid N on HOST' while its writer lives, 'writer dead: pid N on
    HOST' once it died (the kernel freed its flock); None when no lock file is there."""
    try:
        fd = os.open(run_dir / LOCK_FILE, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return None
    try:
        try:
            holder = json.loads(os.read(fd, 4096) or b"{}")
        except ValueError:
            holder = {}
        who = (f"pid {holder.get('pid', '?')} on {holder.get('host', '?')}"
               if isinstance(holder, dict) else "an unknown writer")
        try:  # a shared lock, dropped at once: only tells whether an exclusive one is held
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return who
        return f"writer dead: {who}"
    finally:
        os.close(fd)


def status_text(run_dir: Path, manifest: Manifest) -> str:
    """The status as commands show it: a `running` run says whether its writer lives."""
    if manifest.status != "running":
        return manifest.status
    state = writer_state(run_dir)
    if state is None:  # no lock at all: written before locks, or its writer died early
        return "running (writer dead)"
    return f"running ({state})"


def failure(windows: Iterable[Window]) -> str | None:
    """Why a run failed, or None: a table cell (block, label, parameters) none of whose
    measurement windows succeeded. Scattered failed windows leave the run complete (their
    cells are marked ⚠ by the report)."""
    measured = [w for w in windows if w.kind == "measure"]
    cells: dict[tuple[str, str, str], bool] = {}
    for w in measured:
        key = (w.block, w.label, params_key(w.params))
        cells[key] = cells.get(key, False) or w.status == "ok"
    if all(cells.values()):
        return None
    bad = [w for w in measured if w.status == "failed"]
    first = bad[0]
    reason = clip((first.error or "no error recorded").strip().splitlines()[0], 300)
    return (f"{len(bad)} of {len(measured)} windows failed — first: {first.block}/{first.label}"
            f" {params_key(first.params)}: {reason}")


def lifecycle_notes(run_dir: Path, manifest: Manifest, windows: Iterable[Window]) -> list[str]:
    """What a reader of a run that is not complete should be told first."""
    if manifest.status == "running":
        state = status_text(run_dir, manifest)
        if "writer dead" in state:
            return [f"{state}: complete it with `invoke bench.run --resume {manifest.id}`"]
        return [f"{state}: the run is still being written"]
    if manifest.status == "failed":
        return [f"run failed: {failure(windows) or 'see its failed windows'}"]
    return []


def incomplete(run_dir: Path, manifest: Manifest) -> tuple[str, str] | None:
    """Why a run is no complete measurement to replay or compare, as (what, what to do), or
    None when it is complete: what `bench.replay` and `--claims-only` both refuse."""
    m = manifest
    if m.status == "complete":
        return None
    if m.status == "failed":
        reason = failure(open_run(run_dir).windows)
        return (f"failed: {reason}" if reason else "failed",
                "replay a complete run; fix the cause and start a new run of the suite")
    if m.status == "partial" or "writer dead" in status_text(run_dir, m):
        return (f"is {status_text(run_dir, m)}",
                f"resume it with `invoke bench.run --suite {m.suite} --resume {m.id}`")
    return f"is still {status_text(run_dir, m)}", "replay it once it is complete"


def read_manifest(run_dir: Path) -> Manifest:
    where = run_dir / RUN_FILE
    if run_dir.is_symlink():
        raise ArchiveError("the run directory is a symbolic link", where=run_dir,
                           fix="move the run itself under results/: reading never follows a link")
    if not run_dir.is_dir():
        raise ArchiveError("no such run directory", where=run_dir,
                           fix="list the archived runs with `invoke bench.list`")
    try:
        raw = seal.read_bounded(where)
    except FileNotFoundError:
        raise ArchiveError("run.json is missing", where=run_dir,
                           fix="this is not a run directory; archive runs with `invoke bench.run`"
                           ) from None
    data = schema.loads(raw, where=where)
    try:
        manifest = Manifest.from_json(data, where)
    except (ValueError, TypeError, OverflowError) as exc:  # the schema should have said why
        raise ArchiveError(f"unreadable value ({type(exc).__name__})", where=where,
                           fix="restore the file from git or archive a new run") from None
    if manifest.id != run_dir.name:
        raise ArchiveError(f"id {manifest.id!r} does not match the directory name", where=where,
                           key="id", fix="rename nothing by hand: restore the directory's name")
    if manifest.replay_of == manifest.id:  # a reproduction of itself reproduces nothing
        raise ArchiveError("the run names itself as the run it replays", where=where,
                           key="replay_of", fix="restore run.json from git")
    return manifest


def _lines(where: Path) -> list[tuple[int, bytes, bool]]:
    """(number, bytes, whether it ended with a newline) of every line; raises on a line over
    MAX_LINE_BYTES, without reading the rest of it."""
    out: list[tuple[int, bytes, bool]] = []
    with seal.open_regular(where) as fh:
        for number in itertools.count(1):
            line = fh.readline(MAX_LINE_BYTES + 1)
            if not line:
                break
            if len(line) > MAX_LINE_BYTES:
                raise ArchiveError(f"a line longer than {MAX_LINE_BYTES >> 20} MiB",
                                   where=where, line=number,
                                   fix="this is not a file perfpages wrote: archive a new run")
            out.append((number, line.rstrip(b"\n"), line.endswith(b"\n")))
    return out


def _scan(run_dir: Path, manifest: Manifest) -> tuple[list[Window], list[ArchiveError], list[str]]:
    """Every window, every problem (in file order) and tolerated notes of results.jsonl."""
    where = run_dir / RESULTS_FILE
    windows: list[Window] = []
    problems: list[ArchiveError] = []
    notes: list[str] = []
    try:
        lines = _lines(where)
    except FileNotFoundError:
        problems.append(ArchiveError("results.jsonl is missing", where=run_dir,
                                     fix="restore it from git or archive a new run"))
        return windows, problems, notes
    except ArchiveError as exc:
        return windows, [exc], notes
    seen: dict[tuple[object, ...], int] = {}
    blocks = manifest.blocks  # a manifest that declares blocks admits windows for them only
    for number, line, whole in lines:
        if not line.strip():
            problems.append(ArchiveError("empty line", where=where, line=number,
                                         fix="the file was edited by hand: restore it from git"))
            continue
        try:
            data = schema.loads(line, where=where, line=number)
        except ArchiveError as exc:
            # The writer ends every line with \n; a crash can tear the last one.
            if not whole and manifest.status != "complete":
                notes.append(f"{where}:{number}: torn last line (the window in progress when the "
                             "run stopped) is ignored")
                continue
            if exc.what.startswith("not valid JSON"):
                exc = ArchiveError("truncated or invalid JSON line", where=where, line=number,
                                   fix="the run was cut off mid-write: archive a new run")
            problems.append(exc)
            continue
        try:
            window = Window.from_json(data, where, number)
        except ArchiveError as exc:
            problems.append(exc)
            continue
        except (ValueError, TypeError, OverflowError) as exc:  # a gap in the checks: still one line
            problems.append(ArchiveError(f"unreadable window ({type(exc).__name__})", where=where,
                                         line=number, fix="archive a new run"))
            continue
        if window.label not in manifest.labels and not (
                window.kind == "floor" and window.label == FLOOR_LABEL):
            problems.append(ArchiveError(
                f"window for undeclared label {window.label!r}", where=where, line=number,
                key="label", fix=f"declare it under labels in {RUN_FILE} or remove the run"))
            continue
        if blocks and window.block not in blocks:
            problems.append(ArchiveError(
                f"window for undeclared block {window.block!r}", where=where, line=number,
                key="block", fix=f"declare it under blocks in {RUN_FILE} or remove the run"))
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
    if not problems and manifest.status == "complete":
        problems += completeness.problems(manifest, windows, where)
    return windows, problems, notes


class Problems(list[ArchiveError]):
    """A run's problems, in the order to read them; `notes` holds what is no problem but worth
    saying (a run archived before sealing, a declared block that never ran), `size` what the
    run holds."""

    def __init__(self, problems: list[ArchiveError], notes: list[str],
                 size: files.Size | None = None) -> None:
        super().__init__(problems)
        self.notes = notes
        self.size = size


Fingerprint = tuple[tuple[str, int, int, int, int], ...]
# Run directories this process found intact, with their fingerprint then: a run read again
# unchanged (a page's histograms after its cells) is not hashed and inflated again.
_INTACT: dict[Path, Fingerprint] = {}


# A run is recorded intact only when no file changed in the SETTLE_NS before its fingerprint was
# taken: the kernel stamps ctime from a coarse clock, so a write in the same tick as the check
# could otherwise leave the fingerprint as it was (git's "racy index" rule).
SETTLE_NS = 100_000_000


def settled(stamp: Fingerprint, taken_ns: int) -> Fingerprint | None:
    """`stamp` when it may be recorded as the one of an intact run (see SETTLE_NS), else None:
    the next reader then checks the run in full again."""
    newest = max((f[3] for f in stamp), default=0)
    return stamp if newest < taken_ns - SETTLE_NS else None


def fingerprint(run_dir: Path) -> Fingerprint:
    """Every file's name, size, mtime, ctime and inode: any write to a run changes it (ctime
    cannot be set back by hand), so a run whose fingerprint is the one it had when it was last
    found intact is still intact, without hashing or inflating a byte. Links and special files
    are in it too (the full check refuses them)."""
    out = []
    for folder, dirs, names in os.walk(run_dir):
        for name in dirs + names:
            path = os.path.join(folder, name)
            try:
                st = os.lstat(path)
            except OSError:
                continue
            out.append((os.path.relpath(path, run_dir), st.st_size, st.st_mtime_ns,
                        st.st_ctime_ns, st.st_ino))
    return tuple(sorted(out))


def _check(run_dir: Path, manifest: Manifest
           ) -> tuple[list[Window], list[ArchiveError], list[str], list[str], files.Size]:
    """The one set of checks every command and the site apply: results.jsonl's windows, the
    files against the seal, every .gz inflating within its bound and every samples file
    readable. (windows, problems in reading order, notes of the lines, notes of the seal,
    size)."""
    windows, lines, notes = _scan(run_dir, manifest)
    stored, sealed = seal.check(run_dir, manifest)
    # A file already named (changed since sealing, a link) is not read to say it again.
    skip = {p.where or "" for p in stored}
    size, unreadable = files.check(run_dir, skip=skip)
    unreadable += samples.problems(run_dir, skip | {p.where or "" for p in unreadable})
    unique = {str(p): p for p in _ordered(run_dir, lines, stored + unreadable)}
    return windows, list(unique.values()), notes, sealed, size


def verify(run_dir: Path | str) -> Problems:
    """Every problem of one run directory (files and seal, schema, values, completeness, each
    .gz decompressing within its bound, each samples file readable); empty when intact."""
    run_dir = Path(run_dir)
    try:
        manifest = read_manifest(run_dir)
    except ArchiveError as exc:
        return Problems([exc], [])
    windows, problems, _, notes, size = _check(run_dir, manifest)
    return Problems(problems, lifecycle_notes(run_dir, manifest, windows) + notes, size)


def _ordered(run_dir: Path, lines: list[ArchiveError],
             files: list[ArchiveError]) -> list[ArchiveError]:
    """run.json changed after sealing first (every other check trusted it), then the lines'
    problems: they say more than the checksum mismatch they also cause."""
    edited = [p for p in files if p.where == str(run_dir / RUN_FILE)]
    return edited + lines + [p for p in files if p not in edited]


def open_run(run_dir: Path | str) -> Run:
    """Read and validate a run with `verify`'s checks; raise the first problem as a one-line
    ArchiveError. A run this process already found intact, unchanged since (its
    fingerprint), has only its windows read again."""
    run_dir = Path(run_dir)
    taken = time.time_ns()
    before = fingerprint(run_dir)
    manifest = read_manifest(run_dir)
    known = _INTACT.get(run_dir.absolute()) == before
    if known:
        windows, problems, notes = _scan(run_dir, manifest)
    else:
        windows, problems, notes, _, _ = _check(run_dir, manifest)
    if problems:
        raise problems[0]
    if not known and settled(before, taken):
        _INTACT[run_dir.absolute()] = before
    notes = lifecycle_notes(run_dir, manifest, windows) + notes
    return Run(path=run_dir, manifest=manifest, windows=windows, notes=notes)


def intact(run_dir: Path, known: Fingerprint | None = None) -> Fingerprint | None:
    """Raise the run's first problem, unless it is unchanged since `known` (a fingerprint
    recorded when it last passed the full check) or since this process found it intact; return
    the fingerprint to record for it now (None while its files changed too recently: `settled`).
    What a cache of a run's derived data is keyed on."""
    run_dir = Path(run_dir)
    taken = time.time_ns()
    now = fingerprint(run_dir)
    if now != known and _INTACT.get(run_dir.absolute()) != now:
        open_run(run_dir)
    return settled(now, taken)


def find_runs(results_dir: Path | str) -> list[Path]:
    """Run directories under results/, oldest first (ids start with their date)."""
    root = Path(results_dir)
    if not root.is_dir():
        return []
    return sorted(p for p in root.iterdir() if p.is_dir() and (p / RUN_FILE).exists()
                  and not p.name.startswith("."))  # a writer's staging: not a run (yet)


def runs_in(results_dir: Path | str) -> list[Path]:
    """`find_runs` for a command that lists or checks runs: a results directory that is not
    there is an error (a typo in --results never reads as "no runs, all fine")."""
    if not Path(results_dir).is_dir():
        raise ArchiveError("no such results directory", where=results_dir,
                           fix="pass the directory that holds the runs with --results")
    return find_runs(results_dir)


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
