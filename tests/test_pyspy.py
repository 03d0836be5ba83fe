"""A suite that samples flame graphs (`flamegraph=True`) with no py-spy installed is refused
before anything starts, in one line saying how to install it: through the real command line,
by a Python whose PATH and venv hold no py-spy."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def test_flame_graphs_without_py_spy_are_refused_before_the_run(tmp_path: Path) -> None:
    python = Path(sys.base_prefix) / "bin" / "python3"
    if (python.parent / "py-spy").exists() or not python.exists():
        pytest.skip("no Python without py-spy beside it")
    path = "/usr/bin:/bin"
    if shutil.which("py-spy", path=path):
        pytest.skip("py-spy is installed system-wide")
    env = {**os.environ, "PATH": path, "COLUMNS": "200",
           "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), sysconfig.get_paths()["purelib"],
                                          sysconfig.get_paths()["platlib"]])}
    done = subprocess.run([str(python), "-m", "perfpages", "bench.run", "--suite", "tinyhttp",
                           "--results", str(tmp_path / "r")], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [
        "error: blocks.profile.flamegraph: block 'profile' samples flame graphs "
        "(flamegraph=True) but py-spy is not installed — pip install py-spy (perfpages' extra "
        "profile has it: perfpages[docs,profile]), or set flamegraph=False"], done.stderr
    assert not (tmp_path / "r").exists()
