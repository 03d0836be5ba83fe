"""A run's lifecycle under real signals: statuses, the writer's lock, nothing left running.

Every run here uses its own PERFPAGES_CACHE under the test's tmp: the PostgreSQL binaries are
copied there, so this test's servers (and pgbench) are exactly the processes whose command line
names that folder — never another PostgreSQL on the machine.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from perfpages.archive.reader import LOCK_FILE, read_manifest, verify

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.postgres  # every test here replays the tiny suite


@pytest.fixture(scope="module")
def cache() -> Iterator[Path]:
    # Not under pytest's tmp root: another pytest session resets it to 0700, and the server's
    # user must traverse to the binaries.
    folder = Path(tempfile.mkdtemp(prefix="perfpages-lifecycle-"))
    folder.chmod(0o755)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def ours(cache: Path) -> list[psutil.Process]:
    """Live processes started from this test's cache (postgres, pgbench)."""
    found = []
    for proc in psutil.process_iter(["cmdline", "status"]):
        if proc.info["status"] != psutil.STATUS_ZOMBIE and any(
                str(cache) in part for part in proc.info.get("cmdline") or []):
            found.append(proc)
    return found


def no_orphans(cache: Path) -> bool:
    """Generous wait for the kernel to deliver parent-death signals; never a timing claim."""
    deadline = time.monotonic() + 30
    while ours(cache) and time.monotonic() < deadline:
        time.sleep(0.2)
    return ours(cache) == []


def bench(cache: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "invoke", "-r", str(ROOT), *args]


def env(cache: Path) -> dict[str, str]:
    return {**os.environ, "PERFPAGES_CACHE": str(cache), "COLUMNS": "200"}  # one line a run


def invoke(cache: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(bench(cache, *args), capture_output=True, text=True, timeout=300,
                          env=env(cache))


def start(cache: Path, results: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(bench(cache, "bench.run", "--suite", "tiny", "--labels", "a",
                                  "--results", str(results)),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env(cache))


def wait_for_windows(results: Path, proc: subprocess.Popen[str], count: int) -> Path:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        found = list(results.glob("*/results.jsonl"))
        if found and len(found[0].read_bytes().splitlines()) >= count:
            return found[0].parent
        time.sleep(0.05)
    raise AssertionError(f"the run never archived {count} windows")


def resume_completes(cache: Path, results: Path, run_dir: Path) -> None:
    done = invoke(cache, "bench.run", "--suite", "tiny", "--resume", run_dir.name,
                  "--results", str(results))
    assert done.returncode == 0, done.stderr
    assert read_manifest(run_dir).status == "complete"
    assert not (run_dir / LOCK_FILE).exists() and list(verify(run_dir)) == []
    assert no_orphans(cache)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_leaves_a_partial_run_and_nothing_running(cache: Path, tmp_path: Path,
                                                           sig: signal.Signals) -> None:
    proc = start(cache, tmp_path)
    run_dir = wait_for_windows(tmp_path, proc, 1)  # after the run directory's first window
    proc.send_signal(sig)
    proc.send_signal(sig)  # a second one during the teardown: it finishes all the same
    _, err = proc.communicate(timeout=120)
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert proc.returncode == 130 and "is partial" in lines[-1], err
    assert "Traceback" not in err
    assert read_manifest(run_dir).status == "partial"
    assert not (run_dir / LOCK_FILE).exists()
    assert no_orphans(cache)
    resume_completes(cache, tmp_path, run_dir)


def test_sigkill_leaves_a_dead_writer_that_resume_takes_over(cache: Path,
                                                             tmp_path: Path) -> None:
    proc = start(cache, tmp_path)
    run_dir = wait_for_windows(tmp_path, proc, 2)
    proc.kill()
    proc.communicate(timeout=60)
    assert no_orphans(cache), [p.info["cmdline"] for p in ours(cache)]
    assert read_manifest(run_dir).status == "running"
    listed = invoke(cache, "bench.list", "--results", str(tmp_path))
    assert f"writer dead: pid {proc.pid}" in listed.stdout, listed.stdout
    resume_completes(cache, tmp_path, run_dir)  # and reaps the killed run's cluster directory
    assert not (cache / "owned").is_dir() or not any((cache / "owned").iterdir())


def test_resume_refuses_a_live_writer(cache: Path, tmp_path: Path) -> None:
    proc = start(cache, tmp_path)
    try:
        run_dir = wait_for_windows(tmp_path, proc, 1)
        # Stopped, the writer lives and holds its lock, but cannot finish the run before the
        # second command looks (on a loaded machine the tiny run otherwise might).
        proc.send_signal(signal.SIGSTOP)
        done = invoke(cache, "bench.run", "--suite", "tiny", "--resume", run_dir.name,
                      "--results", str(tmp_path))
        lines = [ln for ln in done.stderr.splitlines() if ln.strip()]
        assert done.returncode == 1 and len(lines) == 1, done.stderr
        assert f"being written by pid {proc.pid} on " in lines[0]
    finally:
        proc.send_signal(signal.SIGCONT)
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=120)
    assert proc.returncode == 130 and read_manifest(run_dir).status == "partial"
    assert no_orphans(cache)


MISSING = '''
from pathlib import Path
from perfpages import BlockSpec, DataSet, LabelSpec, Script, Suite

def load(conn, rows, seed):
    conn.execute("CREATE TABLE t (id int)")

def suite(quick):
    return Suite(name="missing", title="A pgbench script that is not there",
                 labels=(LabelSpec("a"),),
                 blocks=(BlockSpec("b", scripts=(Script(Path(__file__).parent / "gone.sql"),)),),
                 dataset=DataSet("t", rows=1, load=load), rounds=1, warmup_s=0, window_s=1,
                 floor_s=1, min_rounds=1, scope="test")
'''


def test_a_run_whose_windows_all_failed_is_failed(cache: Path, tmp_path: Path) -> None:
    suites = tmp_path / "benchmarks"
    suites.mkdir()
    (suites / "missing.py").write_text(MISSING)
    results = tmp_path / "results"
    done = invoke(cache, "bench.run", "--suite", "missing", "--suites", str(suites),
                  "--results", str(results))
    errors = [ln for ln in done.stderr.splitlines() if ln.startswith("error:")]
    assert done.returncode == 1 and len(errors) == 1, done.stderr
    assert "failed: 1 of 1 windows failed — first: b/a" in errors[0]
    [run_dir] = [p for p in results.iterdir() if p.is_dir()]
    assert read_manifest(run_dir).status == "failed" and not (run_dir / LOCK_FILE).exists()
    cited = invoke(cache, "bench.cite", run_dir.name, "--results", str(results))
    assert cited.returncode == 1 and "failed, not complete" in cited.stderr
    checked = invoke(cache, "bench.verify", "--run", run_dir.name, "--results", str(results))
    assert f"ok: {run_dir.name} (failed)" in checked.stdout
    assert "run failed: 1 of 1 windows failed" in checked.stdout
    assert no_orphans(cache)
