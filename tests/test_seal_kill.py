"""A writer SIGKILLed inside the sealing window leaves a run that `bench.run --resume` seals.

A child process writes a small run with the archive writer and is killed (SIGKILL, by itself)
at each step boundary of archive/finish.py: the final run.json staged, seal.json half written,
seal.json written, run.json in place. Then the real command line: verify says what is wrong,
resume re-checks the files and finishes the seal (nothing is measured: no PostgreSQL), and
verify passes."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from perfpages.archive.reader import read_manifest
from perfpages.testing import Spec, generate

RUN = "2026-12-03-killed"
CHILD = r'''
import os, signal, sys
from pathlib import Path
from perfpages.archive import finish, writer
from perfpages.testing import Spec, generate

point = sys.argv[2]
replace = os.replace


def die():
    os.kill(os.getpid(), signal.SIGKILL)


def renaming(src, dst, *args, **kw):
    name = Path(dst).name
    if (point == "seal-half" and name == "seal.json") or (
            point == "sealed" and name == "run.json" and Path(dst).with_name("seal.json").exists()):
        die()
    return replace(src, dst, *args, **kw)


def releasing(self, remove=True):
    if point == "published" and self.fd is not None and remove:
        die()
    return release(self, remove)


os.replace = renaming
release = writer.RunLock.release
writer.RunLock.release = releasing
if point == "staged":
    finish.write_json_durable = lambda *a: die()
generate(Path(sys.argv[1]), Spec(run_id=sys.argv[3], labels={"a": 1.0, "b": 1.0}, rounds=2,
                                 blocks={"lookup": [{"callers": 1}]}))
'''


def perfpages(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "perfpages", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=120)


def killed_at(point: str, results: Path) -> Path:
    done = subprocess.run([sys.executable, "-c", CHILD, str(results), point, RUN],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == -signal.SIGKILL, done.stderr
    return results / RUN


@pytest.mark.parametrize(("point", "before", "fails"), [
    ("staged", "writer dead", False),  # an unfinished run, as verify says of any
    ("seal-half", "writer dead", False),
    ("sealed", "a seal in a running run", True),
])
def test_a_writer_killed_while_sealing_leaves_a_run_resume_seals(
        tmp_path: Path, point: str, before: str, fails: bool) -> None:
    results = tmp_path / "results"
    run_dir = killed_at(point, results)
    assert read_manifest(run_dir).status == "running"  # never complete without its seal
    checked = perfpages("bench.verify", "--results", str(results), cwd=tmp_path)
    assert (checked.returncode != 0) is fails
    assert before in checked.stdout + checked.stderr
    assert f"bench.run --resume {RUN}" in checked.stdout + checked.stderr
    resumed = perfpages("bench.run", "--resume", RUN, "--results", str(results), cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    assert f"complete: {run_dir}" in resumed.stdout
    checked = perfpages("bench.verify", "--results", str(results), cwd=tmp_path)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert sorted(p.name for p in run_dir.iterdir() if p.name.startswith(".")) == []


def test_a_writer_killed_after_run_json_leaves_a_sealed_run(tmp_path: Path) -> None:
    run_dir = killed_at("published", tmp_path / "results")
    assert read_manifest(run_dir).status == "complete" and (run_dir / "seal.json").exists()
    checked = perfpages("bench.verify", "--results", str(tmp_path / "results"), cwd=tmp_path)
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_a_run_changed_after_the_kill_is_not_sealed(tmp_path: Path) -> None:
    run_dir = killed_at("sealed", tmp_path / "results")
    with (run_dir / "results.jsonl").open("a") as fh:
        fh.write("\n")
    resumed = perfpages("bench.run", "--resume", RUN, "--results", str(tmp_path / "results"),
                        cwd=tmp_path)
    assert resumed.returncode != 0 and "Traceback" not in resumed.stderr
    assert "its files differ from the checksums it was being sealed with" in resumed.stderr
    assert read_manifest(run_dir).status == "running"


@pytest.mark.parametrize("lock", [True, False])
def test_an_older_writers_complete_run_without_its_seal(tmp_path: Path, lock: bool) -> None:
    """Writers before finish.py wrote run.json complete, then seal.json: a kill between left
    the run complete, unsealed, with its lock file. Resume seals it; without the lock file
    (a seal deleted) it refuses, as verify does."""
    results = tmp_path / "results"
    run_dir = generate(results, Spec(run_id=RUN, labels={"a": 1.0}, rounds=1,
                                     blocks={"lookup": [{"callers": 1}]})).path
    (run_dir / "seal.json").unlink()
    if lock:
        (run_dir / ".lock").write_text(json.dumps({"pid": 999999, "host": "h"}) + "\n")
    resumed = perfpages("bench.run", "--resume", RUN, "--results", str(results), cwd=tmp_path)
    checked = perfpages("bench.verify", "--results", str(results), cwd=tmp_path)
    assert (resumed.returncode == 0) is lock and (checked.returncode == 0) is lock
    if not lock:
        assert "already complete" in resumed.stderr and "seal.json is missing" in checked.stderr
