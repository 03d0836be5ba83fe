"""pgbench's per-transaction log format: latencies, scripts, failed and skipped transactions."""

from __future__ import annotations

from pathlib import Path

from perfpages.run.pgbench import Result, Script, parse_logs, parse_summary, reconcile
from perfpages.run.postgres import redact

SUMMARY = """transaction type: multiple scripts
number of transactions actually processed: 4
number of failed transactions: 1 (20.000%)
latency average = 1.2 ms
tps = 812.345678 (without initial connection time)
"""


def test_logs_to_histograms(tmp_path: Path) -> None:
    # client tx time script epoch epoch_us, one file per thread
    (tmp_path / "tx.123").write_text("0 1 1500 0 1700000000 100\n0 2 2500 1 1700000000 200\n"
                                     "0 3 failed 1 1700000000 300\n")
    (tmp_path / "tx.123.1").write_text("1 1 1000 0 1700000000 100\n1 2 3000 1 1700000000 9\n"
                                       "1 3 skipped 0 1700000000 10\n")
    result = Result()
    scripts = [Script(Path("lookup.sql"), 70), Script(Path("cone.sql"), 30)]
    parse_logs(sorted(tmp_path.glob("tx.*")), scripts, result)
    assert (result.transactions, result.failed, result.skipped, result.errors) == (4, 1, 1, 2)
    assert result.latency.count == 4
    assert result.per_script["lookup"].count == 2 and result.per_script["cone"].count == 2
    assert abs(result.per_script["cone"].percentile_ms(100) - 3.0) < 0.01
    summary = parse_summary(SUMMARY)
    assert summary["processed"] == 4 and summary["failed"] == 1
    assert abs(summary["tps"] - 812.345678) < 1e-9


def test_script_arguments() -> None:
    assert Script(Path("/s/cone.sql"), 30).args() == ["-f", "/s/cone.sql@30"]
    assert Script(builtin="select-only").args() == ["-b", "select-only@1"]


def test_redact_never_keeps_a_password() -> None:
    assert redact("postgresql://bob:s3cret@db.example:5433/app") == \
        "postgresql://bob@db.example:5433/app"
    assert "s3cret" not in redact("host=db user=bob password=s3cret dbname=app")
    assert redact("postgresql://bob@db/app") == "postgresql://bob@db/app"


def test_logs_must_agree_with_the_summary() -> None:
    full = Result(transactions=1000)
    assert reconcile(full, {"processed": 1000}) is None
    assert "summary says 1001" in (reconcile(full, {"processed": 1001}) or "")
    assert reconcile(Result(), {}) == "pgbench printed no summary"
    sampled = Result(transactions=1012, failed=0)
    assert reconcile(sampled, {"processed": 10_000, "failed": 3}, 0.1) is None
    assert (sampled.transactions, sampled.failed) == (10_000, 3)  # exact counts: the summary
    assert "not a 0.1 sample" in (reconcile(Result(transactions=2000), {"processed": 10_000},
                                            0.1) or "")


def test_log_directories_of_a_killed_harness_are_reaped_by_the_next(tmp_path: Path) -> None:
    """pgbench's per-transaction logs live in a directory named by the harness's pid; one whose
    harness is gone (SIGKILL skips the cleanup) is removed by the next run, a live one's kept."""
    import os
    import subprocess
    import sys

    from perfpages.run.pgbench import SCRATCH, reap_scratch

    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    alive = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        left = tmp_path / f"{SCRATCH}{int(dead.stdout)}-abc123"
        kept = [tmp_path / f"{SCRATCH}{alive.pid}-def456",
                tmp_path / f"{SCRATCH}{os.getpid()}-ghi789",
                tmp_path / f"{SCRATCH}unnamed", tmp_path / "other-dir"]
        for path in (left, *kept):
            path.mkdir()
            (path / "tx.1").write_text("0 1 2 3 4 5\n")
        assert reap_scratch(tmp_path) == [left]
        assert not left.exists() and all(p.is_dir() for p in kept)
    finally:
        alive.kill()
        alive.wait()
    assert reap_scratch(tmp_path) == [tmp_path / f"{SCRATCH}{alive.pid}-def456"]
