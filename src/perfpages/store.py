"""The runs a site reads: opened once, validated, their tidy frames kept while unchanged.

A page pins runs by exact id; a pinned run must be complete and intact. The store keeps each
opened run (and its frame) keyed by run.json's size and mtime, so `mkdocs serve` rebuilds and
pages pinning the same run pay for it once.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from perfpages.archive import RUN_FILE, Run, open_run
from perfpages.errors import ArchiveError, PerfpagesError
from perfpages.frame import load


@dataclass
class Loaded:
    run: Run
    frame: pd.DataFrame


def _stamp(path: Path) -> tuple[int, int]:
    stat = path.stat()
    return stat.st_size, stat.st_mtime_ns


class RunStore:
    """Opens runs under one results/ directory; `pin` is what a page's front matter calls."""

    def __init__(self, results_dir: Path | str) -> None:
        self.results_dir = Path(results_dir)
        self._loaded: dict[str, tuple[tuple[int, int], Loaded]] = {}

    def get(self, run_id: str) -> Loaded:
        """A run and its frame, opened and validated (raises ArchiveError on any problem)."""
        run_dir = self.results_dir / run_id
        manifest = run_dir / RUN_FILE
        stamp = _stamp(manifest) if manifest.is_file() else (-1, -1)
        cached = self._loaded.get(run_id)
        if cached and cached[0] == stamp:
            return cached[1]
        run = open_run(run_dir)
        loaded = Loaded(run, load(run))
        self._loaded[run_id] = (stamp, loaded)
        return loaded

    def pin(self, run_id: str, *, where: str, line: int | None, alias: str) -> Loaded:
        """A complete, intact run for a page; any other state is one error naming the page."""
        key = f"runs.{alias}"
        if not isinstance(run_id, str) or not run_id or "/" in run_id or run_id.startswith("."):
            raise PerfpagesError(f"run id {run_id!r} is not a run directory name", where=where,
                                 line=line, key=key,
                                 fix="pin runs by their full id, e.g. 2026-11-01-suite-slug")
        if not (self.results_dir / run_id).is_dir():
            raise PerfpagesError(
                f"no run {run_id!r} in {self.results_dir}", where=where, line=line, key=key,
                fix="list the archived runs with `invoke bench.list` and pin one of them")
        try:
            loaded = self.get(run_id)
        except ArchiveError as exc:
            raise PerfpagesError(f"run {run_id!r} is corrupt ({exc})", where=where, line=line,
                                 key=key, fix="restore it from git, or pin another run") from None
        status = loaded.run.manifest.status
        if status != "complete":
            raise PerfpagesError(
                f"run {run_id!r} is {status}, not complete", where=where, line=line, key=key,
                fix="a page may pin only complete runs: finish it with "
                    f"`invoke bench.run --resume {run_id}`, or pin another run")
        return loaded
