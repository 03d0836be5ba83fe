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


def test_a_batch_sends_its_calls_one_after_another_and_counts_failures() -> None:
    """The batch's sender on a real socket: every call answered before the next; a 500 is a
    failed call (the batch is then discarded: it may have run statements)."""
    import asyncio
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    from perfpages.loadgen.spec import Load, Request
    from perfpages.run import counts

    seen: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:
            seen.append(self.path)
            self.send_response(500 if self.path == "/bad" else 200)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"ok")

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        base = f"http://127.0.0.1:{server.server_address[1]}"
        good = Load([Request(f"{base}/ok")], duration_s=1.0)
        assert asyncio.run(counts._send(good, 12, 10.0, 0)) == (12, 0)
        assert seen == ["/ok"] * 12
        bad = Load([Request(f"{base}/ok"), Request(f"{base}/bad")], duration_s=1.0)
        sent, failed = asyncio.run(counts._send(bad, 20, 10.0, 1))
        assert sent == 20 and failed == seen[12:].count("/bad") > 0
    finally:
        server.shutdown()
        server.server_close()
