"""The runs a site reads: validated, reduced to their cells, kept while unchanged.

A page pins runs by exact id; a pinned run must be complete and intact. What pages use of a run
is its manifest and its cells (the rounds of each block, parameters, label and metric). A
complete run never changes, so its cells are cached on disk (.cache/perfpages/) under the
sha256 of its seal.json and run.json and of the code that computes them. An entry is used only
when it names that key, its own checksum holds (an HMAC under a key kept in PERFPAGES_CACHE,
outside the site's cache: an entry edited by hand, its checksum recomputed or not, is computed
again from the sealed run) and
the run's fingerprint (every file's size, mtime, ctime and inode) is the one recorded when the
run was last found intact; otherwise the run is checked in full (seal, every file's sha256,
every .gz and samples file: `reader.open_run`) before its cells are used. A deleted, edited or
garbage seal therefore never publishes, and a warm build reads no results.jsonl, hashes no
file but run.json and seal.json, and imports no pandas. The histograms of each cell's rounds
are a second product, read and cached only when a page draws them (`spectrum`).
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import json
import os
import secrets
import stat
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from perfpages.archive.histogram import Latency
from perfpages.archive.manifest import Manifest
from perfpages.archive.reader import (
    RUN_FILE,
    SEAL_FILE,
    Fingerprint,
    Run,
    find_runs,
    fingerprint,
    intact,
    open_run,
    read_manifest,
    settled,
    sha256_file,
)
from perfpages.archive.window import params_key
from perfpages.archive.writer import write_text_atomic
from perfpages.cache import cache_dir
from perfpages.errors import ArchiveError, PerfpagesError

if TYPE_CHECKING:
    from perfpages.analysis.reading import Reading


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
    cache_key: str = ""  # what its cache entries are keyed on (see `cache_key`)


def records(run: Run, kinds: tuple[str, ...] = ("measure",)) -> list[Record]:
    """Every cell of a run (measured, or floors), its rounds in round order: the tidy rows
    grouped in plain Python (a pandas groupby of every cell cost more than the rows did)."""
    from perfpages.analysis.rows import COLUMNS, rows

    groups: dict[tuple[str, str, str, str], list[dict[str, Any]]] = {}
    for row in rows(run, kinds):
        groups.setdefault((row["block"], row["parameters"], row["label"], row["metric"]),
                          []).append(row)
    out = []
    for (block, pkey, label, metric), group in groups.items():
        params = {k: _plain(v) for k, v in group[0].items() if k not in COLUMNS}
        group.sort(key=lambda r: r["round"])
        out.append(Record(block, pkey, label, metric, params,
                          tuple(float(r["value"]) for r in group),
                          tuple(int(r["round"]) for r in group)))
    return out


def histograms(loaded: Loaded) -> dict[tuple[str, str, str], dict[int, Latency]]:
    """The latency histogram of each measured (block, parameters, label), per round: its
    successful windows merged, losslessly. Read only for the pages that draw them (spectrum),
    then cached like the cells, under the sha256 of run.json and of the code."""
    if "histograms" in loaded.memo:
        memo: dict[tuple[str, str, str], dict[int, Latency]] = loaded.memo["histograms"]
        return memo
    path = loaded.histogram_cache
    saved = read_entry(path, loaded.cache_key) if path is not None else None
    if saved is not None:
        try:
            out = _histograms(saved)
        except Exception:  # unreadable (hdrh raises assorted errors): read the archive again
            saved = None
    if saved is None:
        from perfpages.analysis.rows import counted  # pandas: imported when first needed

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
            write_entry(path, loaded.cache_key, saved)
    loaded.memo["histograms"] = out
    return out


PRODUCT = "reading"  # a run's one derived product (histograms aside: only some pages draw them)


def product_cache(loaded: Loaded, product: str) -> Path | None:
    """Where a complete run's derived `product` (its reading) is cached, beside its
    histograms and under the same key; None when the run is not cached."""
    path = loaded.histogram_cache
    return None if path is None else path.parent.parent / product / path.name


def reading(loaded: Loaded, run: Run | None = None) -> Reading:
    """The run's one reading (`perfpages.analysis.reading`): what its page, a page's header,
    the runs index and the floor macros say of it. Made once per run (`run`: the same run
    already open, so that it is not read and validated again) and, for a complete run, cached
    on disk beside its cells under the same key; an AnalysisError when it cannot be read (a
    run with no measurement windows)."""
    from perfpages.analysis.reading import Reading, read

    if PRODUCT in loaded.memo:
        memo: Reading = loaded.memo[PRODUCT]
        return memo
    path = product_cache(loaded, PRODUCT)
    saved = read_entry(path, loaded.cache_key) if path is not None else None
    out = None
    if saved is not None:
        try:
            out = Reading.from_json(saved)
        except (ValueError, TypeError, KeyError):
            out = None  # a cache is never a reason for a build to fail: read again
    if out is None:
        out = read(run if run is not None and run.path == loaded.path else open_run(loaded.path))
        if path is not None:
            write_entry(path, loaded.cache_key, out.to_cache())
    loaded.memo[PRODUCT] = out
    return out


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


def cache_key(run_dir: Path, code: str) -> str:
    """What a run's cache entries are keyed on: the sha256 of its seal.json (what vouches for
    every file) and of run.json (a run archived before sealing lists its checksums there),
    and the code's hash. A missing seal is part of the key too: the full check then refuses it."""
    digest = hashlib.sha256()
    for name in (SEAL_FILE, RUN_FILE):
        try:
            digest.update(sha256_file(run_dir / name).encode() + b"\0")
        except FileNotFoundError:
            digest.update(b"-\0")
    return digest.hexdigest() + "-" + code


def entry_path(cache_dir: Path, product: str, run_dir: Path, key: str) -> Path:
    """Where a run's cache entry of `product` (cells, histograms, pages…) under `key` lives."""
    name = hashlib.sha256(key.encode()).hexdigest()[:24]
    return cache_dir / product / f"{run_dir.name}.{name}.json"


SECRET_FILE = "site-cache.key"  # in PERFPAGES_CACHE: never in the site's cache it vouches for


@functools.cache
def _secret() -> bytes:
    """This machine's key for the site cache's checksums, kept outside the site's
    .cache/perfpages (the directory a CI restores between runs): an entry edited with a
    checksum recomputed by anyone without this key is not this machine's, and is computed
    again from the sealed run. Created once, exclusively (a link of a whole file); when it
    cannot be kept, a key of this process only (nothing cached is trusted later)."""
    path = cache_dir() / SECRET_FILE
    for _ in range(2):
        try:
            with path.open("rb") as fh:
                st = os.fstat(fh.fileno())
                key = fh.read(33)
            if len(key) == 32 and st.st_uid == os.getuid() and not st.st_mode & 0o077:
                return key
            return secrets.token_bytes(32)  # not ours alone: trust nothing cached
        except FileNotFoundError:
            pass
        except OSError:
            return secrets.token_bytes(32)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{SECRET_FILE}.")
            try:
                os.write(fd, secrets.token_bytes(32))
                os.close(fd)
                os.link(tmp, path)  # fails if another process made it first: read theirs
            except FileExistsError:
                pass
            finally:
                os.unlink(tmp)
        except OSError:
            return secrets.token_bytes(32)
    return secrets.token_bytes(32)


def _checksum(key: str, data: Any) -> str:
    body = json.dumps(data, sort_keys=True, ensure_ascii=False)
    return hmac.new(_secret(), f"{key}\0{body}".encode(), hashlib.sha256).hexdigest()


def write_entry(path: Path, key: str, data: Any) -> None:
    """A cache entry: `data` with the key it was computed under and its checksum. Not fsynced:
    an entry a crash cut short fails its checksum and is rebuilt (read_entry); one that cannot
    be written (a directory in its place, a full disk) is not cached."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_text_atomic(path, json.dumps({"key": key, "checksum": _checksum(key, data),
                                            "data": data}), durable=False)
    except OSError:
        pass


def read_entry(path: Path, key: str) -> Any | None:
    """An entry's data, or None when it is missing, unreadable, of another key (the key holds
    the sha256 of the run's seal: an entry serves only the sealed data it was computed from)
    or edited (its checksum, keyed by this machine's secret, does not hold — recomputing it
    without the key does not help): the archive is then read again and the entry rewritten; a
    cache is never a reason for a build to fail, nor a source of what a page shows."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)  # a FIFO in its place never waits
        with os.fdopen(fd, "rb") as fh:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                return None
            saved = json.loads(fh.read().decode("utf-8"))
        if saved["key"] == key and hmac.compare_digest(str(saved["checksum"]),
                                                       _checksum(key, saved["data"])):
            return saved["data"]
    except (OSError, ValueError, TypeError, KeyError):
        pass
    return None


def _cells(saved: Any) -> tuple[list[Record], list[Record]] | None:
    """A cells entry's cells and floors, or None when it cannot be read."""
    try:
        cells, floors = ([Record(**{**c, "values": tuple(c["values"]),
                                    "rounds": tuple(c.get("rounds", ()))}) for c in saved[k]]
                         for k in ("cells", "floors"))
        return cells, floors
    except (ValueError, TypeError, KeyError):
        return None


def _fingerprint(saved: Any) -> Fingerprint | None:
    """The fingerprint an entry recorded, as `fingerprint` returns it (JSON made it lists)."""
    try:
        return tuple(tuple(f) for f in saved["fingerprint"])
    except (TypeError, KeyError):
        return None


class RunStore:
    """Opens runs under one results/ directory; `pin` is what a page's front matter calls."""

    def __init__(self, results_dir: Path | str, cache_dir: Path | None = None) -> None:
        self.results_dir = Path(results_dir)
        self.cache_dir = cache_dir
        self._loaded: dict[str, tuple[object, Loaded]] = {}
        self._code = code_hash()

    def _cache_file(self, run_dir: Path, key: str, product: str = "cells") -> Path | None:
        return None if self.cache_dir is None else entry_path(self.cache_dir, product, run_dir,
                                                              key)

    def get(self, run_id: str, run: Run | None = None) -> Loaded:
        """A run's manifest and cells, validated (raises ArchiveError on any problem); `run`:
        the same run already opened (validated) by the caller, not read again."""
        run_dir = self.results_dir / run_id
        taken, stamp = time.time_ns(), fingerprint(run_dir)
        cached = self._loaded.get(run_id)
        if cached and cached[0] == stamp:
            return cached[1]
        manifest = read_manifest(run_dir)
        complete = manifest.status == "complete" and self.cache_dir is not None
        key = cache_key(run_dir, self._code) if complete else ""
        cache = self._cache_file(run_dir, key) if complete else None
        saved = read_entry(cache, key) if cache is not None else None
        found = _cells(saved) if saved is not None else None
        if saved is not None and found is not None:
            # The entry's cells, once the run is intact: unchanged since the full check that
            # recorded them, or checked in full now (a fresh checkout, the seal edited).
            known = _fingerprint(saved)
            recorded = intact(run_dir, known)
            cells, floors = found
            if recorded != known and cache is not None:
                write_entry(cache, key, {**saved, "fingerprint": recorded})
        else:  # not cached, or its entry edited: open_run validates and names any problem
            if run is None or run.path != run_dir:
                run = open_run(run_dir)
            manifest, cells, floors = run.manifest, records(run), records(run, ("floor",))
            if cache is not None:
                write_entry(cache, key, {"fingerprint": settled(stamp, taken),
                                         "cells": [c.__dict__ for c in cells],
                                         "floors": [c.__dict__ for c in floors]})
        hists = self._cache_file(run_dir, key, "histograms") if cache is not None else None
        loaded = Loaded(run_dir, manifest, cells, floors, histogram_cache=hists, cache_key=key)
        self._loaded[run_id] = (stamp, loaded)
        return loaded

    def latest(self, suite: str, *, where: str, line: int | None, key: str) -> str:
        """The id of the newest complete run of `suite` (by its start): what a pin
        `latest:SUITE` reads, so that a page such as a history grows with each new run. A run
        whose run.json cannot be read and whose id names the suite, dated on or after that
        run, is refused: it may be the newest, and an older run is never pinned silently."""
        found, damaged = [], []
        for run_dir in find_runs(self.results_dir):
            try:
                m = read_manifest(run_dir)
            except ArchiveError as exc:
                name = run_dir.name
                if name[11:] == suite or name[11:].startswith(suite + "-"):
                    damaged.append((name[:10], name, exc))
                continue
            if m.suite == suite and m.status == "complete":
                found.append((m.started, m.id))
        newest = max(found) if found else ("", "")
        for date, name, problem in sorted(damaged, reverse=True):
            if date >= newest[0][:10]:
                raise PerfpagesError(
                    f"run {name!r}, which may be the newest of suite {suite!r}, is corrupt "
                    f"({problem})", where=where, line=line, key=key,
                    fix="restore it from git (`invoke bench.verify` names every problem), or "
                        "pin a run by its id")
        if not found:
            raise PerfpagesError(f"no complete run of suite {suite!r} in {self.results_dir}",
                                 where=where, line=line, key=key,
                                 fix=f"archive one with `invoke bench.run --suite {suite}`")
        return newest[1]

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
