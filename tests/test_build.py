"""Pinned builds: a throwaway git repository with two commits, and pins that cannot resolve."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

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


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    """A local package whose VERSION differs between its two commits."""
    path = tmp_path_factory.mktemp("tinypkg-repo")
    git(path, "init", "-q", "-b", "main")
    git(path, "config", "user.email", "test@example.org")
    git(path, "config", "user.name", "test")
    commits = []
    for version in ("1.0", "2.0"):
        (path / "tinypkg").mkdir(exist_ok=True)
        (path / "tinypkg" / "__init__.py").write_text(f"VERSION = {version!r}\n")
        (path / "pyproject.toml").write_text(PYPROJECT.format(version=version))
        git(path, "add", "-A")
        git(path, "commit", "-q", "-m", f"version {version}")
        commits.append(git(path, "rev-parse", "HEAD"))
    return path, commits


def installed_version(b: build.Build) -> str:
    assert b.venv is not None
    return subprocess.run([str(b.venv / "bin" / "python"), "-c",
                           "import tinypkg; print(tinypkg.VERSION)"], check=True,
                          capture_output=True, text=True).stdout.strip()


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


def test_version_that_does_not_exist_is_one_line() -> None:
    with pytest.raises(PerfpagesError) as err:
        build.resolve(LabelSpec("old", package="six==0.0.999"))
    text = str(err.value)
    assert "\n" not in text and "labels.old.package" in text and "six==0.0.999" in text


@pytest.mark.parametrize("requirement", ["six", "six>=1.0", "six==1.*"])
def test_a_pin_must_be_exact(requirement: str) -> None:
    with pytest.raises(PerfpagesError, match="not an exact pin"):
        build.resolve(LabelSpec("x", package=requirement))
