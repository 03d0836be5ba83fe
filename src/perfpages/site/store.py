"""The runs a site reads: validated once, reduced to their cells, kept while unchanged.

A page pins runs by exact id; a pinned run must be complete and intact. What pages use of a run
is its manifest and its cells (the rounds of each block, parameters, label and metric). A
complete run never changes, so its cells are cached on disk under the sha256 of its run.json
(which lists every other file's sha256) and of the code that computes them; the files'
checksums are verified on every build, so a cache never hides a corrupted archive. A warm build
thus reads no results.jsonl and imports no pandas. The histograms of each cell's rounds are a
second product, read and cached only when a page draws them (`spectrum`).
"""

from __future__ import annotations

import functools
import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from perfpages.archive.histogram import Latency
from perfpages.archive.manifest import Manifest
from perfpages.archive.reader import (
    RUN_FILE,
    Run,
    archived_files,
    find_runs,
    open_run,
    read_manifest,
)
from perfpages.archive.window import params_key
from perfpages.archive.writer import write_text_atomic
from perfpages.errors import ArchiveError, PerfpagesError


@functools.cache
def code_hash() -> str:
    """The installed package's code and schemas: any change to perfpages invalidates every
    cache, so no hand-kept list of "the modules that matter" can go stale."""
    root = Path(__file__).resolve().parent.parent
    digest = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if p.suffix in (".py", ".json")):
        digest.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


LATEST = "latest:"  # a pin `latest:SUITE`: the newest complete run of that suite


@dataclass(frozen=True)
class Record:
    """The measured rounds of one (block, parameters, label, metric) of a run."""

    block: str
    parameters: str
    label: str
    metric: str
    params: dict[str, Any]
    values: tuple[float, ...]
    rounds: tuple[int, ...] = ()  # each value's round (pairing by round)


@dataclass
class Loaded:
    path: Path
    manifest: Manifest
    cells: list[Record]
    floors: list[Record] = field(default_factory=list)  # floor windows (label "floor")
    memo: dict[object, Any] = field(default_factory=dict)  # derived data, e.g. pins' cells
    histogram_cache: Path | None = None  # where histograms() keeps a complete run's histograms


def records(run: Run, kinds: tuple[str, ...] = ("measure",)) -> list[Record]:
    """Every cell of a run (measured, or floors), its rounds in round order (pandas only here)."""
    import pandas as pd

    from perfpages.archive.frame import COLUMNS, load

    frame = load(run, kinds=kinds)
    if frame.empty:
        return []
    param_names = [c for c in frame.columns if c not in COLUMNS]
    out = []
    for (block, pkey, label, metric), group in frame.groupby(
            ["block", "parameters", "label", "metric"], sort=False):
        first = group.iloc[0]
        params = {p: _plain(first[p]) for p in param_names if pd.notna(first[p])}
        ordered = group.sort_values("round")
        values = tuple(float(v) for v in ordered["value"])
        out.append(Record(block, pkey, label, metric, params, values,
                          tuple(int(r) for r in ordered["round"])))
    return out


def histograms(loaded: Loaded) -> dict[tuple[str, str, str], dict[int, Latency]]:
    """The latency histogram of each measured (block, parameters, label), per round: its
    successful windows merged, losslessly. Read only for the pages that draw them (spectrum),
    then cached like the cells, under the sha256 of run.json and of the code."""
    if "histograms" in loaded.memo:
        return loaded.memo["histograms"]
    path = loaded.histogram_cache
    saved = None
    if path is not None and path.is_file():
        try:
            saved = json.loads(path.read_text(encoding="utf-8"))["histograms"]
            out = _histograms(saved)
        except Exception:  # unreadable (hdrh raises assorted errors): read the archive again
            saved = None
    if saved is None:
        from perfpages.archive.frame import counted  # pandas: imported when first needed

        parts: dict[tuple[str, str, str, int], list[Latency]] = {}
        for w in counted(open_run(loaded.path).measured):
            if w.status == "ok" and w.latency is not None:
                key = (w.block, params_key(w.params), w.label, w.round)
                parts.setdefault(key, []).append(w.latency)
        merged = {key: Latency.merged(latencies) for key, latencies in parts.items()}
        saved = [{"block": b, "parameters": pk, "label": lab, "round": r, "hdr": lat.encode(),
                  "clamped": lat.clamped} for (b, pk, lab, r), lat in merged.items()]
        out = _histograms(saved)
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            write_text_atomic(path, json.dumps({"histograms": saved}))
    loaded.memo["histograms"] = out
    return out


def product_cache(loaded: Loaded, product: str) -> Path | None:
    """Where a complete run's derived `product` (e.g. its warnings) is cached, beside its
    histograms and under the same key; None when the run is not cached."""
    path = loaded.histogram_cache
    return None if path is None else path.parent.parent / product / path.name


def _histograms(saved: list[dict[str, Any]]) -> dict[tuple[str, str, str], dict[int, Latency]]:
    out: dict[tuple[str, str, str], dict[int, Latency]] = {}
    for h in saved:
        rounds = out.setdefault((h["block"], h["parameters"], h["label"]), {})
        rounds[int(h["round"])] = Latency.decode(h["hdr"], int(h["clamped"]))
    return out


def _plain(value: Any) -> Any:
    """A parameter as archived: numpy scalars to Python, 32.0 in a float column back to 32."""
    value = value.item() if hasattr(value, "item") else value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def _stamp(run_dir: Path) -> object:
    """Every file's size and mtime: any change to a run (under `mkdocs serve`) reloads it."""
    return tuple(sorted((str(p), p.stat().st_size, p.stat().st_mtime_ns)
                        for p in run_dir.rglob("*") if p.is_file()))


def _read_cache(path: Path) -> tuple[list[Record], list[Record]] | None:
    """A cache file's cells and floors, or None when it cannot be read (the archive is then
    read again and the cache rewritten: a cache is never a reason for a build to fail)."""
    try:
        saved = json.loads(path.read_text(encoding="utf-8"))
        cells, floors = ([Record(**{**c, "values": tuple(c["values"]),
                                    "rounds": tuple(c.get("rounds", ()))}) for c in saved[k]]
                         for k in ("cells", "floors"))
        return cells, floors
    except (OSError, ValueError, TypeError, KeyError):
        return None


class RunStore:
    """Opens runs under one results/ directory; `pin` is what a page's front matter calls."""

    def __init__(self, results_dir: Path | str, cache_dir: Path | None = None) -> None:
        self.results_dir = Path(results_dir)
        self.cache_dir = cache_dir
        self._loaded: dict[str, tuple[object, Loaded]] = {}
        self._code = code_hash()

    def _cache_file(self, run_dir: Path, product: str = "cells") -> Path | None:
        if self.cache_dir is None:
            return None
        raw = (run_dir / RUN_FILE).read_bytes()
        key = hashlib.sha256(raw + self._code.encode()).hexdigest()[:24]
        return self.cache_dir / product / f"{run_dir.name}.{key}.json"

    def get(self, run_id: str) -> Loaded:
        """A run's manifest and cells, validated (raises ArchiveError on any problem)."""
        run_dir = self.results_dir / run_id
        stamp = _stamp(run_dir)
        cached = self._loaded.get(run_id)
        if cached and cached[0] == stamp:
            return cached[1]
        manifest = read_manifest(run_dir)
        cache = self._cache_file(run_dir) if manifest.status == "complete" else None
        saved = None
        if cache is not None and cache.is_file() and archived_files(run_dir) == manifest.files:
            saved = _read_cache(cache)
        if saved is not None:
            cells, floors = saved
        else:  # not cached, or its files changed: open_run validates and names any problem
            run = open_run(run_dir)
            manifest, cells, floors = run.manifest, records(run), records(run, ("floor",))
            if cache is not None:
                cache.parent.mkdir(parents=True, exist_ok=True)
                write_text_atomic(cache, json.dumps({"cells": [c.__dict__ for c in cells],
                                                     "floors": [c.__dict__ for c in floors]}))
        hists = self._cache_file(run_dir, "histograms") if cache is not None else None
        loaded = Loaded(run_dir, manifest, cells, floors, histogram_cache=hists)
        self._loaded[run_id] = (stamp, loaded)
        return loaded

    def latest(self, suite: str, *, where: str, line: int | None, key: str) -> str:
        """The id of the newest complete run of `suite` (by its start): what a pin
        `latest:SUITE` reads, so that a page such as a history grows with each new run."""
        found = []
        for run_dir in find_runs(self.results_dir):
            try:
                m = read_manifest(run_dir)
            except ArchiveError:
                continue  # a damaged run is never the newest good one; verify names it
            if m.suite == suite and m.status == "complete":
                found.append((m.started, m.id))
        if not found:
            raise PerfpagesError(f"no complete run of suite {suite!r} in {self.results_dir}",
                                 where=where, line=line, key=key,
                                 fix=f"archive one with `invoke bench.run --suite {suite}`")
        return max(found)[1]

    def pin(self, run_id: str, *, where: str, line: int | None, alias: str,
            allow_failed: bool = False) -> Loaded:
        """A complete, intact run for a page (or a failed one the page opts in to with
        `allow_failed`); any other state is one error naming the page."""
        key = f"runs.{alias}"
        if isinstance(run_id, str) and run_id.startswith(LATEST):
            run_id = self.latest(run_id[len(LATEST):], where=where, line=line, key=key)
        if not isinstance(run_id, str) or not run_id or "/" in run_id or run_id.startswith("."):
            raise PerfpagesError(f"run id {run_id!r} is not a run directory name", where=where,
                                 line=line, key=key,
                                 fix="pin runs by their full id, e.g. 2026-11-01-suite-slug")
        if not (self.results_dir / run_id).is_dir():
            raise PerfpagesError(
                f"no run {run_id!r} in {self.results_dir}", where=where, line=line, key=key,
                fix="list the archived runs with `invoke bench.list` and pin one of them")
        try:
            status = read_manifest(self.results_dir / run_id).status
            if status == "complete" or (status == "failed" and allow_failed):
                return self.get(run_id)
        except ArchiveError as exc:
            raise PerfpagesError(f"run {run_id!r} is corrupt ({exc})", where=where, line=line,
                                 key=key, fix="restore it from git, or pin another run") from None
        if status == "failed":
            raise PerfpagesError(f"run {run_id!r} failed", where=where, line=line, key=key,
                                 fix=f"pin another run, or opt in with `allow_failed: [{alias}]`")
        raise PerfpagesError(
            f"run {run_id!r} is {status}, not complete", where=where, line=line, key=key,
            fix="a page may pin only complete runs: finish it with "
                f"`invoke bench.run --resume {run_id}`, or pin another run")
