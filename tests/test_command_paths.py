"""run.json's `command` records no absolute path: inside the repository relative to its root,
outside only the path's name (never the user's home or checkout)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from perfpages.cli.names import command_line

ROOT = Path(__file__).resolve().parent.parent
ENV = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "COLUMNS": "200"}


def test_paths_in_arguments_and_values_are_unrooted(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "argv", [
        "/home/bob/.venv/bin/invoke", "-r", str(ROOT), "bench.run", "--suites",
        str(ROOT / "benchmarks"), f"--results={ROOT / 'results'}",
        "--dsn", "host=/home/bob/sock dbname=x", "--dsn", "postgresql:///db?host=/run/pg"])
    line = command_line(ROOT)
    assert line == ("invoke -r . bench.run --suites benchmarks --results=results "
                    "--dsn host=<outside the repository>/sock dbname=x "
                    "--dsn postgresql:///db?host=<outside the repository>/pg")
    assert "/home" not in line


@pytest.mark.postgres
def test_bench_run_records_its_command_without_absolute_paths(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "invoke", "bench.run", "--suite", "tiny",
                           "--quick", "--labels", "a", "--rounds", "1", "--preflight-wait", "0",
                           "--suites", str(ROOT / "benchmarks"),
                           "--results", str(tmp_path / "runs")],
                          cwd=ROOT, capture_output=True, text=True, env=ENV, timeout=600)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    command = json.loads(next((tmp_path / "runs").glob("*/run.json")).read_text())["command"]
    assert "--suites benchmarks" in command, command
    assert "--results <outside the repository>/runs" in command, command
    assert str(ROOT) not in command and str(tmp_path) not in command
