"""`perfpages import FILE`: a table measured elsewhere, archived as a sealed run of scope
`transcribed` with its source, through the same writer and seal as every run."""

from __future__ import annotations

import fcntl
import json
import os
import re
import shutil
from dataclasses import replace
from pathlib import Path

from rich.console import Console

from perfpages.analysis import transcribed
from perfpages.archive.manifest import Block, Label, Manifest, Method, Pin, Source
from perfpages.archive.reader import LOCK_FILE, RUN_FILE
from perfpages.archive.writer import ArchiveWriter, new_run_id, utc_now
from perfpages.cli.console import as_called
from perfpages.errors import PerfpagesError
from perfpages.run.machine import harness

# Nothing was measured on this machine: a transcribed run records none (bench cite and the
# pages say "transcribed, not measured here" instead of naming a machine).
MACHINE = {"cpu": "not recorded: transcribed from its source", "cores": None,
           "memory_gib": None, "kernel": "", "python": ""}
PIN_NOTE = "transcribed: nothing was installed or run here"
NOTES = {"rounds": "per-round values transcribed as published: each row is one round",
         "summary": "a summary transcribed as published: one given value per cell (a median, "
                    "with its given min and max as METRIC.min and METRIC.max); no rounds"}


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9_.-]+", "-", text.lower()).strip("-.")


def manifest_for(table: transcribed.Table, source: Source, suite: str, run_id: str,
                 command: str) -> Manifest:
    """The run.json of a transcribed run: labels pinned to nothing, no machine, no rule."""
    return Manifest(
        id=run_id, suite=suite, title=table.title or f"{source.title} (transcribed)",
        scope="transcribed", status="running", started=utc_now(), command=command,
        harness=harness(),
        labels={name: Label(name, Pin("none", note=PIN_NOTE)) for name in table.labels},
        method=Method(rounds=table.rounds, order="fixed", notes=NOTES[table.values]),
        machine=dict(MACHINE),
        blocks={name: Block(name, metrics=tuple(metrics), parameters=tuple(params))
                for name, (metrics, params) in table.blocks.items()},
        source=source)


_STAGED = re.compile(r"\.\d{4}-\d\d-\d\d-.+-transcribed(?:-\d+)?\.[a-z0-9_]+")


def remove_killed_imports(results: Path) -> None:
    """The hidden directories of imports killed before they sealed (their lock free: the
    writer is dead; their run.json still `running`): never a run, only what it would have
    been. Anything else hidden is left alone."""
    for path in results.glob(".*") if results.is_dir() else []:
        if not _STAGED.fullmatch(path.name) or path.is_symlink() or not path.is_dir():
            continue
        try:
            manifest = json.loads((path / RUN_FILE).read_text(encoding="utf-8"))
            if manifest.get("scope") != "transcribed" or manifest.get("status") != "running":
                continue
            fd = os.open(path / LOCK_FILE, os.O_RDWR | os.O_NOFOLLOW)
        except (OSError, ValueError, AttributeError):
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # held: that import still runs
        except BlockingIOError:
            continue
        finally:
            os.close(fd)
        shutil.rmtree(path, ignore_errors=True)


def import_table(results: Path, file: str, title: str | None, url: str | None,
                 day: str | None, suite: str | None, command: str, console: Console) -> int:
    """Check the source and the whole table, then write and seal the run; on any problem one
    error line, and no run directory left behind."""
    source = transcribed.check_source(title, url, day)
    path = Path(file)
    table = transcribed.read_table(path)
    source = replace(source, values=table.values)
    name = _slug(suite or table.suite or path.stem)
    if not name:
        raise PerfpagesError(f"no suite name in {suite or path.stem!r}", key="--suite",
                             fix="name it with letters or digits: --suite NAME")
    try:
        if results.exists() and not results.is_dir():
            raise PerfpagesError("not a directory", where=results, key="--results",
                                 fix="pass the directory that holds the runs with --results")
        remove_killed_imports(results)
        manifest = manifest_for(table, source, name, new_run_id(results, name, "transcribed"),
                                command)
        # Hidden until sealed: a killed import leaves no run to resume, only a hidden
        # directory no command reads.
        writer = ArchiveWriter.create(results, manifest, hidden=True)
        try:
            for window in transcribed.windows(table, source):
                writer.append(window)
            writer.finish("complete")
        except BaseException:
            writer.abandon()  # releases the lock; the run was never complete: take it back
            shutil.rmtree(writer.run_dir, ignore_errors=True)
            raise
    except OSError as exc:
        raise PerfpagesError(f"cannot write the run ({exc.strerror or exc}); nothing was "
                             "archived", where=results, key="--results",
                             fix="free space, or make the results directory writable") from None
    shown = f"{len(table.rows)} rows, {len(table.labels)} labels, " + (
        f"{table.rounds} rounds" if table.values == "rounds" else "a summary (no rounds)")
    console.print(f"complete: {writer.run_dir} (transcribed from {source.title!r}: {shown})",
                  highlight=False, markup=False, emoji=False)
    console.print(as_called(f"verify: invoke bench.verify --run {manifest.id} --results "
                            f"{results}"), highlight=False, markup=False, emoji=False)
    return 0
