"""Pinned builds: a throwaway git repository with two commits, pins that cannot resolve, and how
a git pin is shown."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from perfpages.archive.manifest import Pin
from perfpages.archive.secrets import redact_command
from perfpages.errors import PerfpagesError
from perfpages.run import builds as build
from perfpages.run.suite import LabelSpec

PYPROJECT = """[build-system]
requires = ["setuptools>=61"]
build-backend = "setuptools.build_meta"

[project]
name = "perfpages-tinypkg"
version = "{version}"

[tool.setuptools]
packages = ["tinypkg"]
"""


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True,
                          text=True).stdout.strip()


def commit_version(path: Path, version: str) -> str:
    """Commit tinypkg at `version` on the current branch (or detached HEAD); its SHA."""
    (path / "tinypkg").mkdir(exist_ok=True)
    (path / "tinypkg" / "__init__.py").write_text(f"VERSION = {version!r}\n")
    (path / "pyproject.toml").write_text(PYPROJECT.format(version=version))
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", f"version {version}")
    return git(path, "rev-parse", "HEAD")


def package_repo(path: Path, versions: tuple[str, ...] = ("1.0", "2.0")) -> list[str]:
    """A local package repository with one commit per version on `main`; their SHAs."""
    git(path, "init", "-q", "-b", "main")
    git(path, "config", "user.email", "test@example.org")
    git(path, "config", "user.name", "test")
    return [commit_version(path, version) for version in versions]


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    """A local package whose VERSION differs between its two commits."""
    path = tmp_path_factory.mktemp("tinypkg-repo")
    return path, package_repo(path)


def installed_version(b: build.Build) -> str:
    assert b.venv is not None
    return subprocess.run([str(b.venv / "bin" / "python"), "-c",
                           "import tinypkg; print(tinypkg.VERSION)"], check=True,
                          capture_output=True, text=True).stdout.strip()


@pytest.mark.network
def test_git_pin_resolves_to_the_commit_and_installs_it(repo: tuple[Path, list[str]]) -> None:
    path, (first, second) = repo
    head = build.resolve(LabelSpec("new", git=str(path), ref="main"))
    assert head.label.pin.kind == "git" and head.label.pin.commit == second
    assert head.label.pin.ref == "main" and len(head.label.pin.commit) == 40
    assert installed_version(head) == "2.0"
    old = build.resolve(LabelSpec("old", git=str(path), ref=first[:10]))
    assert old.label.pin.commit == first
    assert installed_version(old) == "1.0"
    assert old.venv != head.venv
    again = build.resolve(LabelSpec("new", git=str(path), ref="main"))
    assert again.cached and again.venv == head.venv and not head.cached


@pytest.mark.network
def test_recorded_commit_wins_over_a_moved_ref(repo: tuple[Path, list[str]]) -> None:
    path, (first, _) = repo
    recorded = build.resolve(LabelSpec("x", git=str(path), ref=first)).label.pin
    resumed = build.resolve(LabelSpec("x", git=str(path), ref="main"), recorded)
    assert resumed.label.pin.commit == first and installed_version(resumed) == "1.0"


def test_unknown_ref_is_one_line(repo: tuple[Path, list[str]]) -> None:
    with pytest.raises(PerfpagesError) as err:
        build.resolve(LabelSpec("x", git=str(repo[0]), ref="no-such-branch"))
    text = str(err.value)
    assert "\n" not in text and "labels.x.ref" in text and "no-such-branch" in text


@pytest.mark.network
def test_version_that_does_not_exist_is_one_line() -> None:
    with pytest.raises(PerfpagesError) as err:
        build.resolve(LabelSpec("old", package="six==0.0.999"))
    text = str(err.value)
    assert "\n" not in text and "labels.old.package" in text and "six==0.0.999" in text


@pytest.mark.parametrize("requirement", ["six", "six>=1.0", "six==1.*"])
def test_a_pin_must_be_exact(requirement: str) -> None:
    with pytest.raises(PerfpagesError, match="not an exact pin"):
        build.resolve(LabelSpec("x", package=requirement))


@pytest.mark.network
def test_a_git_pin_is_shown_by_its_name_with_its_sha_once(repo: tuple[Path, list[str]]) -> None:
    path, (first, second) = repo
    by_sha = build.resolve(LabelSpec("old", git=str(path), ref=first)).label.pin
    # Never a path of this machine: a checkout with no remote, outside the repository the run
    # is made in, is recorded by its directory's name.
    assert by_sha.repository == path.name and by_sha.remote == path.name
    assert by_sha.describe() == f"{path.name} @ {first}"  # the ref is the SHA: shown once
    by_branch = build.resolve(LabelSpec("new", git=str(path), ref="main")).label.pin
    assert by_branch.describe() == f"{path.name} @ {second} (main)"
    assert str(path.parent) not in by_sha.describe() + by_branch.describe()


@pytest.mark.network
def test_a_local_checkout_is_shown_by_its_origin_url(repo: tuple[Path, list[str]],
                                                     tmp_path: Path) -> None:
    path, (first, _) = repo
    clone = tmp_path / "checkout"
    git(tmp_path, "clone", "-q", str(path), str(clone))
    git(clone, "remote", "set-url", "origin", "https://user:s3cret@example.org/org/tinypkg.git")
    pin = build.resolve(LabelSpec("x", git=str(clone), ref=first[:12])).label.pin
    assert pin.remote == "https://example.org/org/tinypkg.git"
    assert pin.describe() == f"https://example.org/org/tinypkg.git @ {first}"
    assert "s3cret" not in json.dumps(pin.to_json())


@pytest.mark.network
def test_a_ref_the_mirror_does_not_follow_is_fetched(repo: tuple[Path, list[str]]) -> None:
    """A pull request's head (refs/pull/N/head, or a detached CI checkout) is on no branch."""
    path, (_, second) = repo
    build.resolve(LabelSpec("base", git=str(path), ref="main"))  # the mirror exists from here
    git(path, "checkout", "-q", "--detach")
    try:
        pulled = commit_version(path, "3.0")
        git(path, "update-ref", "refs/pull/1/head", pulled)
        detached = commit_version(path, "4.0")  # on no ref at all
    finally:
        git(path, "checkout", "-q", "main")
    by_ref = build.resolve(LabelSpec("head", git=str(path), ref="refs/pull/1/head"))
    assert by_ref.label.pin.commit == pulled and installed_version(by_ref) == "3.0"
    by_sha = build.resolve(LabelSpec("head", git=str(path), ref=detached))
    assert by_sha.label.pin.commit == detached and installed_version(by_sha) == "4.0"
    git(path, "update-ref", "-d", "refs/pull/1/head")
    assert git(path, "rev-parse", "main") == second  # the other tests' repository is as it was


@pytest.mark.parametrize(("repository", "shown"), [
    ("/home/alice/src/service", "service"),  # an older run's local path: its name only
    ("file:///home/alice/src/service.git", "service.git"),
    ("https://x-token:s3cret@example.org/org/service.git", "https://example.org/org/service.git"),
    ("https://ghp_s3cret@example.org/org/service.git", "https://example.org/org/service.git"),
    ("git@example.org:org/service.git", "git@example.org:org/service.git"),
])
def test_a_recorded_git_pin_never_shows_a_path_or_a_secret(repository: str, shown: str) -> None:
    sha = "ab" * 20
    pin = Pin("git", repository=repository, ref="v1.2", commit=sha)
    assert pin.describe() == f"{shown} @ {sha} (v1.2)"
    assert Pin("git", repository=repository, ref=sha[:7], commit=sha).describe() == \
        f"{shown} @ {sha}"


def test_a_pin_url_in_the_command_line_is_archived_without_its_token() -> None:
    command = ("perfpages bench.run --pin b=git+https://ghp_s3cret@example.org/o/r.git@v1 "
               "--pin=c=git+https://u:s3cret@example.org/o/r.git@v2 --dsn postgresql://bob:pw@h/db")
    assert redact_command(command) == (
        "perfpages bench.run --pin b=git+https://example.org/o/r.git@v1 "
        "--pin=c=git+https://example.org/o/r.git@v2 --dsn postgresql://bob@h/db")


RESOLVE = """
import json, sys
from perfpages.run.builds import resolve
from perfpages.run.suite import LabelSpec
sys.stdin.read()  # both processes wait here: the test starts them at the same moment
b = resolve(LabelSpec("x", git=sys.argv[1], ref="main"))
print(json.dumps({"cached": b.cached, "venv": str(b.venv), "commit": b.label.pin.commit}))
"""


@pytest.mark.network
def test_two_runs_resolving_the_same_pin_at_once_build_it_once(tmp_path: Path) -> None:
    """The second waits on the build lock, then reuses the first's venv (without the lock both
    build into the same directory, each removing the other's half-made venv)."""
    path = tmp_path / "repo"
    path.mkdir()
    [commit] = package_repo(path, ("5.0",))  # a commit no venv in the cache was built from
    wait, go = os.pipe()  # both read one pipe: closing its other end starts them together
    procs = [subprocess.Popen([sys.executable, "-c", RESOLVE, str(path)], stdin=wait,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(2)]
    os.close(wait)
    os.close(go)
    results = []
    for proc in procs:
        out, err = proc.communicate(timeout=600)
        assert proc.returncode == 0, err
        results.append(json.loads(out))
    assert sorted(r["cached"] for r in results) == [False, True]  # one build, one reuse
    assert {r["venv"] for r in results} == {results[0]["venv"]}
    assert {r["commit"] for r in results} == {commit}
    python = Path(results[0]["venv"]) / "bin" / "python"
    assert subprocess.run([str(python), "-c", "import tinypkg; print(tinypkg.VERSION)"],
                          check=True, capture_output=True, text=True).stdout.strip() == "5.0"
