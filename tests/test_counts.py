"""Exact counts per call (perfpages.run.counts): a subject that runs exactly BEGIN, one SELECT
and COMMIT per call, at 8 callers, with a connection per call and with a pool, through
`invoke bench.run` on real PostgreSQL."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from perfpages.analysis.metric import COST_METRICS, info
from perfpages.archive.reader import open_run, verify
from perfpages.run import machine

ROOT = Path(__file__).resolve().parent.parent
ENV = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "COLUMNS": "200"}


def test_connections_per_call_is_a_cost_lower_is_better() -> None:
    assert "connections" in COST_METRICS
    assert info("connections").higher_is_better is False
    assert info("connections").title == "connections per call"


@pytest.mark.postgres
def test_counts_per_call_are_exact_under_connection_churn(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "invoke", "bench.run", "--suite", "tinycount",
                           "--rounds", "2", "--results", str(tmp_path)], cwd=ROOT,
                          capture_output=True, text=True, env=ENV)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    run_dir = next(tmp_path.iterdir())
    assert verify(run_dir) == []
    run = open_run(run_dir)
    # The machine's speed beside its fingerprint: the first block's pgbench floor (run.json's
    # schema declares it; verify() validated it above).
    assert run.manifest.machine["floor_tps"] > 0 and "cpu_flags" in run.manifest.machine
    windows = [w for w in run.measured if w.block == "calls"]
    assert {w.label for w in windows} == {"churn", "pooled"}
    for w in windows:
        # Exact, not 3.02–3.11: the batch's counters bound its calls, none in flight.
        assert w.metrics["statements"] == 3.0, w
        assert w.metrics["buffers_read"] == 0.0, w
        # A connection per call opens exactly one session per call; the pool, after the
        # measured load filled it, none.
        assert w.metrics["connections"] == (1.0 if w.label == "churn" else 0.0), w


def test_the_fingerprint_tells_vm_builds_apart() -> None:
    """This machine's fingerprint, read from /proc and systemd-detect-virt: a kernel build
    string, a stable flags hash, the microcode and hypervisor where the machine says them."""
    m = machine.fingerprint()
    assert m["cpu_flags"] is None or re.fullmatch(r"\d+ flags, sha256 [0-9a-f]{12}",
                                                  m["cpu_flags"])
    assert m["cpu_flags"] == machine.fingerprint()["cpu_flags"]  # stable
    assert isinstance(m["kernel_version"], str) and m["kernel_version"]
    assert m["hypervisor"] is None or isinstance(m["hypervisor"], str)
