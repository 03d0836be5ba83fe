"""`bench.seal RUN`: a run archived before sealing (format 1) gets its seal later, through the
real command line, from a perfpages installed from a clean git checkout (a seal names a commit
anyone can check out). Copies of this repository's legacy runs are sealed in tmp_path; results/
is never touched."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

from perfpages.archive.reader import read_manifest, verify
from perfpages.archive.seal import LEGACY_NOTE
from perfpages.archive.unsealed import seal_later
from perfpages.errors import ArchiveError
from perfpages.site.page import render_file
from perfpages.site.reproduction import Docs
from perfpages.site.runpages import RunPages
from perfpages.site.store import RunStore
from sites import CLI_ENV
from test_provenance import VERSION, copy_source, git, init, install

ROOT = Path(__file__).resolve().parent.parent
SKY = "2026-11-30-sky-quick"  # the two small legacy runs (the third is 48 MB)
SIZING = "2026-11-30-sizing-quick"
HARNESS = {"version": "9.9.9", "commit": "c" * 40, "dirty": False}


@pytest.fixture(scope="module")
def clean(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, str]:
    """perfpages installed from a committed git checkout of this one: (site, checkout, HEAD).
    The install records its source directory, so harness() reads that checkout's state."""
    repo = copy_source(tmp_path_factory.mktemp("clean") / "perfpages")
    init(repo)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "perfpages")
    site = install(tmp_path_factory.mktemp("site") / "site", str(repo))
    return site, repo, git(repo, "rev-parse", "HEAD")


def cli(site: Path | None, *args: str) -> subprocess.CompletedProcess[str]:
    """`perfpages ARGS` as a user types it; `site` first on the path when given."""
    env = dict(CLI_ENV)
    if site is not None:
        env["PYTHONPATH"] = str(site)
    return subprocess.run([sys.executable, "-m", "perfpages", *args], cwd=ROOT,
                          capture_output=True, text=True, env=env)


def legacy_copy(results: Path, run_id: str = SKY) -> Path:
    """The run as it was archived: results/ holds it sealed since, so its seal stays behind."""
    shutil.copytree(ROOT / "results" / run_id, results / run_id,
                    ignore=shutil.ignore_patterns("seal.json"))
    return results / run_id


def listing(run_dir: Path) -> dict[str, bytes]:
    return {p.relative_to(run_dir).as_posix(): p.read_bytes()
            for p in sorted(run_dir.rglob("*")) if p.is_file()}


def edit_status(run_dir: Path, status: str) -> None:
    data = json.loads((run_dir / "run.json").read_text())
    data["status"] = status
    (run_dir / "run.json").write_text(json.dumps(data, indent=2) + "\n")


def test_a_sealed_legacy_run_verifies_as_sealed_and_an_edit_shows(
        tmp_path: Path, clean: tuple[Path, Path, str]) -> None:
    site, _, head = clean
    run_dir = legacy_copy(tmp_path)
    before = listing(run_dir)
    assert read_manifest(run_dir).format_version == 1 and LEGACY_NOTE in verify(run_dir).notes

    done = cli(site, "bench.seal", "sky-quick", "--results", str(tmp_path))
    assert done.returncode == 0, done.stderr
    day = datetime.now(UTC).strftime("%Y-%m-%d")
    line = f"added later, {day}, perfpages {VERSION} at {head}"
    assert done.stdout.splitlines()[0] == f"sealed: {SKY} ({line})"
    # Only seal.json was added: no temporary file left, nothing else touched.
    after = listing(run_dir)
    assert set(after) == set(before) | {"seal.json"}
    assert all(after[name] == data for name, data in before.items())
    seal = json.loads(after["seal.json"])
    manifest = read_manifest(run_dir)
    run_json = hashlib.sha256(before["run.json"]).hexdigest()
    assert seal["files"] == {**manifest.files, "run.json": run_json}
    assert seal["added"]["commit"] == head and seal["added"]["dirty"] is False
    assert (seal["added"]["perfpages"], seal["added"]["checked"]) == (VERSION, "run.json files")

    shown = cli(None, "bench.verify", "--results", str(tmp_path))
    assert shown.returncode == 0, shown.stderr
    assert f"note: {SKY}: sealed: {line}" in shown.stdout.splitlines()
    assert shown.stdout.splitlines()[-1] == "1 run verified, 0 unsealed"

    data = json.loads(before["run.json"])
    data["title"] = "A better title"
    (run_dir / "run.json").write_text(json.dumps(data, indent=2) + "\n")
    edited = cli(None, "bench.verify", "--run", SKY, "--results", str(tmp_path))
    assert edited.returncode == 1
    assert edited.stderr.splitlines()[0] == (
        f"error: {run_dir}/run.json: checksum mismatch (the file changed after the run was "
        "sealed) — restore it from git: a complete run is immutable")


def test_sealing_twice_refuses_and_keeps_the_seal(tmp_path: Path,
                                                  clean: tuple[Path, Path, str]) -> None:
    site, _, _ = clean
    run_dir = legacy_copy(tmp_path)
    assert cli(site, "bench.seal", SKY, "--results", str(tmp_path)).returncode == 0
    sealed = listing(run_dir)
    again = cli(site, "bench.seal", SKY, "--results", str(tmp_path))
    assert again.returncode == 1 and again.stdout == ""
    assert again.stderr == (f"error: {run_dir}/seal.json: already sealed — nothing to do: "
                            f"`bench.verify --run {SKY}` checks the seal\n")
    assert listing(run_dir) == sealed


def test_a_corrupted_file_is_named_and_nothing_is_written(
        tmp_path: Path, clean: tuple[Path, Path, str]) -> None:
    site, _, _ = clean
    run_dir = legacy_copy(tmp_path)
    with (run_dir / "diagnostics" / "setup.json").open("ab") as fh:
        fh.write(b" ")  # one byte more: only the checksum can tell
    before = listing(run_dir)
    done = cli(site, "bench.seal", SKY, "--results", str(tmp_path))
    assert done.returncode == 1 and len(done.stderr.splitlines()) == 1
    assert done.stderr.startswith(
        f"error: {run_dir}/diagnostics/setup.json: not sealed: 1 problem(s), the first: checksum "
        "mismatch (the file changed after the run was complete) — restore it from git")
    assert f"`bench.verify --run {SKY}` lists them all" in done.stderr
    assert listing(run_dir) == before


@pytest.mark.parametrize(("status", "says"), [
    ("partial", f"a partial run is not sealed (only complete runs are) — complete it first "
                f"with `perfpages bench.run --resume {SKY}`"),
    ("failed", "a failed run is not sealed (only complete runs are) — a failed run is never "
               "sealed: archive a new run"),
])
def test_a_run_that_is_not_complete_refuses(tmp_path: Path, clean: tuple[Path, Path, str],
                                            status: str, says: str) -> None:
    site, _, _ = clean
    run_dir = legacy_copy(tmp_path)
    edit_status(run_dir, status)
    before = listing(run_dir)
    done = cli(site, "bench.seal", SKY, "--results", str(tmp_path))
    assert done.returncode == 1
    assert done.stderr == f"error: {run_dir}/run.json: status: {says}\n"
    assert listing(run_dir) == before


def test_a_dirty_checkout_or_none_refuses(tmp_path: Path, clean: tuple[Path, Path, str]) -> None:
    site, repo, head = clean
    run_dir = legacy_copy(tmp_path)
    before = listing(run_dir)
    module = repo / "src" / "perfpages" / "errors.py"
    original = module.read_text()
    module.write_text(original + "# an uncommitted change\n")
    try:
        done = cli(site, "bench.seal", SKY, "--results", str(tmp_path))
    finally:
        module.write_text(original)
    assert done.returncode == 1
    assert done.stderr == (f"error: harness: the perfpages checkout at {head[:12]} has "
                           "uncommitted changes — commit or stash them: seal from a clean "
                           "checkout of a landed commit (a seal names a commit anyone can check "
                           "out)\n")
    with pytest.raises(Exception, match="runs from no git checkout of its own"):
        seal_later(run_dir, {"version": "9.9.9", "commit": None})
    assert listing(run_dir) == before


def test_a_format_2_run_is_never_sealed_later(tmp_path: Path) -> None:
    from sites import DEMO, make_results

    make_results(tmp_path)
    (tmp_path / DEMO / "seal.json").unlink()
    with pytest.raises(ArchiveError, match=r"a format-2 run is sealed by its writer: its "
                                           r"seal\.json is missing — restore seal\.json from git"):
        seal_later(tmp_path / DEMO, HARNESS)
    assert not (tmp_path / DEMO / "seal.json").exists()


def test_the_seal_is_renamed_into_place_and_a_kill_leaves_none(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Written beside the run as a temporary file, then renamed: stopped before the rename
    (as by a kill), no seal.json and no temporary file remain; a temporary file a SIGKILL left
    is removed by the next bench.seal."""
    run_dir = legacy_copy(tmp_path)
    before = listing(run_dir)
    renames: list[tuple[Path, Path]] = []

    def killed(src: str, dst: str) -> None:
        renames.append((Path(src), Path(dst)))
        raise KeyboardInterrupt  # stands for the kill: the rename never happens

    monkeypatch.setattr(os, "replace", killed)
    with pytest.raises(KeyboardInterrupt):
        seal_later(run_dir, HARNESS)
    monkeypatch.undo()
    [(src, dst)] = renames
    assert dst == run_dir / "seal.json" and src.parent == run_dir
    assert src.name.startswith(".seal.json.") and src.name.endswith(".tmp")
    assert listing(run_dir) == before  # neither seal.json nor the temporary file

    (run_dir / ".seal.json.left.tmp").write_text('{"format": "perfpages-')  # a SIGKILL's leftover
    record = seal_later(run_dir, HARNESS)
    assert set(listing(run_dir)) == set(before) | {"seal.json"}
    assert record["commit"] == HARNESS["commit"]
    assert verify(run_dir).notes == [f"sealed: added later, {record['at'][:10]}, perfpages 9.9.9 "
                                     f"at {'c' * 40}"]


def test_a_seal_added_later_is_checked_like_any_other(tmp_path: Path) -> None:
    run_dir = legacy_copy(tmp_path)
    seal_later(run_dir, HARNESS)
    seal = json.loads((run_dir / "seal.json").read_text())
    (run_dir / "seal.json").write_text(json.dumps({**seal, "added": {**seal["added"],
                                                                     "dirty": True}}))
    assert [p.key for p in verify(run_dir)] == ["added.dirty"]
    del seal["added"]  # the writer's kind of seal in a format-1 run
    (run_dir / "seal.json").write_text(json.dumps(seal))
    assert [p.what for p in verify(run_dir)] == [
        "a seal in a format-1 run (that format predates sealing)"]


def test_pages_after_sealing(tmp_path: Path) -> None:
    """The v1 pages pinning the sealed runs stay byte-identical to their snapshots; a run's
    cached page gains the sealed row (and seal.json's file row) and nothing else."""
    results = tmp_path / "results"
    results.mkdir()
    for run_id in (SKY, SIZING):
        legacy_copy(results, run_id)
    pages = RunPages(results, tmp_path / "cache", "")
    unsealed = pages.entry(results / SKY).markdown
    for run_id in (SKY, SIZING):
        seal_later(results / run_id, HARNESS, datetime(2026, 12, 2, 13, 0, tzinfo=UTC))
    store = RunStore(results)
    for name in ("sky", "sizing"):
        page = f"docs/performance/{name}/v1.md"
        rendered = render_file(ROOT / page, path=page, store=store, docs=Docs(ROOT, ROOT / "docs"))
        assert rendered.markdown == (ROOT / f"tests/golden/pages/{name}-v1.md").read_text()
    sealed = RunPages(results, tmp_path / "cache", "").entry(results / SKY).markdown
    gone = [line for line in unsealed.splitlines() if line not in sealed.splitlines()]
    new = [line for line in sealed.splitlines() if line not in unsealed.splitlines()]
    assert gone == []  # the cached page was not served: the seal is part of its key
    assert new == [f"- **sealed**: added later, 2026-12-02, perfpages 9.9.9 at {'c' * 40}",
                   f"| [seal.json]({SKY}/seal.json) | 1000 B | <code>—</code> |"]
