"""Sealing a run archived before sealing existed (format 1), later: `bench.seal RUN`.

Such a run's run.json lists every other file's sha256 but nothing covers run.json itself. The
seal added later is the writer's seal (every file's sha256, run.json's included) plus an
`added` record: when, by which perfpages and from which commit, and that every file was first
checked against run.json's checksums — by the very checks of `bench.verify` (reader.verify).
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from perfpages.archive import schema, seal
from perfpages.archive.reader import read_manifest, status_text, verify
from perfpages.archive.seal import ADDED, SEAL_FILE, SEALED_SINCE
from perfpages.archive.writer import write_json_durable
from perfpages.errors import ArchiveError, PerfpagesError

CHECKED = "run.json files"  # the record's `checked`: the files matched run.json's checksums
CLEAN_CHECKOUT = ("seal from a clean checkout of a landed commit (a seal names a commit anyone "
                  "can check out)")


def _refuse_run(run_dir: Path) -> None:
    """Raise unless the run is complete, of format 1, unsealed and intact."""
    manifest = read_manifest(run_dir)
    if (run_dir / SEAL_FILE).exists() or (run_dir / SEAL_FILE).is_symlink():
        raise ArchiveError("already sealed", where=run_dir / SEAL_FILE,
                           fix="nothing to do: `bench.verify --run "
                               f"{manifest.id}` checks the seal")
    if manifest.status != "complete":
        why = {"partial": f"complete it first with `invoke bench.run --resume {manifest.id}`",
               "failed": "a failed run is never sealed: archive a new run"}
        raise ArchiveError(f"a {status_text(run_dir, manifest)} run is not sealed (only complete "
                           "runs are)", where=run_dir / "run.json", key="status",
                           fix=why.get(manifest.status, "wait for its writer to complete it"))
    if manifest.format_version >= SEALED_SINCE:
        raise ArchiveError(f"a format-{manifest.format_version} run is sealed by its writer: "
                           "its seal.json is missing", where=run_dir,
                           fix="restore seal.json from git; a seal is never added to such a run")
    problems = verify(run_dir)
    if problems:
        first = problems[0]
        raise ArchiveError(f"not sealed: {len(problems)} problem(s), the first: {first.what}",
                           where=first.where, line=first.line, key=first.key,
                           fix=f"{first.fix}; `bench.verify --run {manifest.id}` lists them all")


def _record(harness: dict[str, Any], now: datetime) -> dict[str, Any]:
    commit = harness.get("commit")
    if not commit:
        raise PerfpagesError(f"perfpages {harness.get('version')} runs from no git checkout of "
                             "its own, so the seal could name no commit", key="harness",
                             fix=f"install perfpages editable from its repository and "
                                 f"{CLEAN_CHECKOUT}")
    if harness.get("dirty") is not False:
        raise PerfpagesError(f"the perfpages checkout at {commit[:12]} has uncommitted changes",
                             key="harness", fix=f"commit or stash them: {CLEAN_CHECKOUT}")
    return {"at": now.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "perfpages": str(harness.get("version")), "commit": commit, "dirty": False,
            "checked": CHECKED}


def seal_later(run_dir: Path, harness: dict[str, Any],
               now: datetime | None = None) -> dict[str, Any]:
    """Check the run as `bench.verify` does, then write its seal with the `added` record
    (atomically: a temporary file beside it, fsynced, renamed). Writes nothing when refusing;
    returns the record."""
    run_dir = Path(run_dir)
    record = _record(harness, now or datetime.now(UTC))
    for stale in run_dir.glob(f".{SEAL_FILE}.*.tmp"):  # what a killed bench.seal left behind
        stale.unlink()
    _refuse_run(run_dir)
    data = {**seal.contents(run_dir), ADDED: record}
    listed = read_manifest(run_dir).files
    if {k: v for k, v in data["files"].items() if k != "run.json"} != listed:
        raise ArchiveError("a file changed while it was being sealed", where=run_dir,
                           fix="run bench.seal again once nothing writes to the run")
    schema.check(data, "seal", where=run_dir / SEAL_FILE, fix="report this as a bug")
    write_json_durable(run_dir / SEAL_FILE, data)
    return record
