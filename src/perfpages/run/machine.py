"""The machine fingerprint recorded in every run, and the harness's own version and commit."""

from __future__ import annotations

import os
import platform
import subprocess
from pathlib import Path
from typing import Any

from perfpages import __version__


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def memory_gib() -> float:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return round(int(line.split()[1]) / 1024 / 1024, 1)
    except OSError:
        pass
    return 0.0


def fingerprint(postgresql: str | None = None,
                pg_settings: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "cpu": cpu_model(),
        "cores": os.cpu_count() or 1,
        "memory_gib": memory_gib(),
        "kernel": platform.release(),
        "python": platform.python_version(),
        "postgresql": postgresql,
        "pg_settings": pg_settings or {},
    }


def harness(checkout: Path | None = None) -> dict[str, Any]:
    """perfpages' version and the commit of the checkout it runs from (None outside git)."""
    cwd = checkout or Path(__file__).resolve().parent
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=cwd, capture_output=True,
                                text=True, check=True).stdout.strip()
        dirty = bool(subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                                    cwd=cwd, capture_output=True, text=True,
                                    check=True).stdout.strip())
    except (OSError, subprocess.CalledProcessError):
        return {"version": __version__, "commit": None}
    return {"version": __version__, "commit": commit, "dirty": dirty}
