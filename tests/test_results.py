"""Every archived run in results/ is intact, complete, and made by a harness commit on this
branch from a clean tree: what a contributor cites in a pull request, CI proves exists."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from perfpages.archive.reader import find_runs, read_manifest, verify
from perfpages.archive.seal import added

ROOT = Path(__file__).resolve().parent.parent
RUNS = find_runs(ROOT / "results")


def git(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True)


def test_there_are_archived_runs() -> None:
    assert RUNS, "results/ holds no archived run: the example pages have nothing to pin"


@pytest.mark.parametrize("run_dir", RUNS, ids=[r.name for r in RUNS])
def test_archived_run_verifies(run_dir: Path) -> None:
    problems = verify(run_dir)
    assert not problems, "\n".join(str(p) for p in problems)
    manifest = read_manifest(run_dir)
    # results/ only holds finished runs: a partial one is resumed or deleted before committing.
    assert manifest.status == "complete", f"{run_dir.name}: status {manifest.status}"


@pytest.mark.parametrize("run_dir", RUNS, ids=[r.name for r in RUNS])
def test_archived_run_names_a_clean_commit_in_history(run_dir: Path) -> None:
    if not (ROOT / ".git").exists() or git("rev-parse", "--is-shallow-repository").stdout.strip() \
            != "false":
        pytest.skip("needs the repository's full history")
    harness = read_manifest(run_dir).harness
    assert harness.get("dirty") is False, f"{run_dir.name}: made from an uncommitted tree"
    commit = str(harness.get("commit"))
    assert git("merge-base", "--is-ancestor", commit, "HEAD").returncode == 0, \
        f"{run_dir.name}: harness commit {commit} is not in HEAD's history"


@pytest.mark.parametrize("run_dir", RUNS, ids=[r.name for r in RUNS])
def test_a_seal_added_later_names_a_commit_in_history(run_dir: Path) -> None:
    record = added(run_dir)
    if record is None:
        pytest.skip("sealed by its writer, or not sealed")
    if not (ROOT / ".git").exists() or git("rev-parse", "--is-shallow-repository").stdout.strip() \
            != "false":
        pytest.skip("needs the repository's full history")
    assert record["dirty"] is False
    assert git("merge-base", "--is-ancestor", record["commit"], "HEAD").returncode == 0, \
        f"{run_dir.name}: sealed from {record['commit']}, which is not in HEAD's history"
