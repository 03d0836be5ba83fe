"""run.json (which the site serves) never records a path of the build machine for a git pin:
a local checkout is recorded by its remote's URL (without credentials), else by its path
relative to the repository the run is made in, else by its directory's name; a run archived
before, with an absolute path, still replays from the suite's own address. Through the real
command line: a run of a label pinned to a local checkout (`--pin a=git+PATH@REF`)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from perfpages.archive.manifest import Pin
from perfpages.run import builds
from perfpages.run.builds import as_recorded, pinned_repository, same_repository
from perfpages.run.suite import LabelSpec
from test_runner import BENCHMARKS, ROOT  # beside this file


def repo(path: Path, origin: str | None = None) -> Path:
    path.mkdir(parents=True)
    for args in (["init", "-q", "-b", "main"],
                 ["-c", "user.name=t", "-c", "user.email=t@example.org", "commit", "-q",
                  "--allow-empty", "-m", "one"]):
        subprocess.run(["git", "-C", str(path), *args], check=True, capture_output=True)
    if origin:
        subprocess.run(["git", "-C", str(path), "remote", "add", "origin", origin], check=True)
    return path


def test_a_checkout_is_recorded_by_its_remote_or_relative_path(tmp_path: Path,
                                                              monkeypatch) -> None:
    hosted = repo(tmp_path / "hosted", "https://bob:tok3n@git.example.org/team/svc.git")
    assert pinned_repository(str(hosted)) == "https://git.example.org/team/svc.git"
    assert pinned_repository(hosted.as_uri()) == "https://git.example.org/team/svc.git"
    # a remote that is itself a path is no address to publish
    mirror = repo(tmp_path / "mirrored", str(tmp_path / "hosted"))
    outer = repo(tmp_path / "adopter")
    inner = repo(outer / "vendor" / "lib")
    monkeypatch.chdir(outer)
    assert pinned_repository(".") == "."
    assert builds._remote(".") == "adopter"  # shown by its name, never "." or a path
    assert pinned_repository(str(inner)) == "vendor/lib"
    assert pinned_repository(str(mirror)) == "mirrored"  # outside: its directory's name
    assert pinned_repository("https://u:p@example.org/x.git") == "https://example.org/x.git"
    for found in map(pinned_repository, (".", str(inner), str(mirror), str(hosted))):
        assert str(tmp_path) not in found and not found.startswith("/")


def test_a_run_archived_before_keeps_the_suites_address(tmp_path: Path, monkeypatch) -> None:
    checkout = repo(tmp_path / "svc")
    monkeypatch.chdir(tmp_path)
    spec = LabelSpec("a", git=str(checkout), ref="main")
    legacy = Pin("git", repository=str(checkout.resolve()), ref="main", commit="a" * 40)
    assert same_repository(str(checkout), legacy.repository)
    assert as_recorded(spec, legacy).git == str(checkout)
    now = Pin("git", repository=pinned_repository(str(checkout)), ref="main", commit="a" * 40)
    assert now.repository == "svc" and as_recorded(spec, now).git == str(checkout)


@pytest.mark.postgres
@pytest.mark.network
def test_run_json_names_no_path_of_this_machine(tmp_path: Path) -> None:
    from test_build import package_repo

    pkg = tmp_path / "tinypkg"
    pkg.mkdir()
    first, _ = package_repo(pkg)
    suites = tmp_path / "suites"
    suites.mkdir()
    shutil.copy(BENCHMARKS / "tiny.py", suites)
    shutil.copytree(BENCHMARKS / "tiny", suites / "tiny")
    env = {**os.environ, "COLUMNS": "200"}
    done = subprocess.run([sys.executable, "-m", "invoke", "-r", str(ROOT), "bench.run",
                           "--suite", "tiny", "--suites", str(suites), "--labels", "a",
                           "--rounds", "1", "--pin", f"a=git+{pkg}@{first}", "--results",
                           str(tmp_path / "r")], capture_output=True, text=True, env=env,
                          cwd=tmp_path, timeout=600)
    assert done.returncode == 0, done.stderr
    manifest = json.loads(next((tmp_path / "r").glob("*/run.json")).read_text())
    pin = manifest["labels"]["a"]["pin"]
    assert (pin["repository"], pin["commit"]) == ("tinypkg", first)
    assert str(tmp_path) not in json.dumps(manifest["labels"])
