"""Locust (https://locust.io), run from a venv of its own: gevent monkeypatches the standard
library of the process that imports locust, so that must never be perfpages' own.

`venv()` installs the pinned Locust and the very HdrHistogram library perfpages encodes its
histograms with (the workers' histograms are decoded and merged here, losslessly) on first use
(PyPI, once); `LOCUSTFILE` is the self-contained locustfile the master and every worker run
(`perfpages.loadgen.locust` drives them; it imports nothing of perfpages).
"""

from __future__ import annotations

from pathlib import Path

from perfpages.tools.venvs import tool_venv

# hdrhistogram pinned to the version perfpages' own venv runs (pyproject asks for >= 0.10):
# the encoding must be one both sides read.
REQUIREMENTS = ["locust==2.47.0", "hdrhistogram==0.10.8"]
LOCUSTFILE = Path(__file__).with_name("locustfile.py")


def venv() -> Path:
    """The tool's venv, installed on first use (atomically: a venv is whole or absent)."""
    return tool_venv(REQUIREMENTS, "locust")


def python() -> Path:
    return venv() / "bin" / "python"
