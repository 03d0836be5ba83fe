"""A tool's own venv in the cache, installed once from pinned requirements and published by an
atomic rename: a venv is whole or absent, and two installers racing both end with the same one."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from perfpages.cache import cache_dir
from perfpages.errors import PerfpagesError


def tool_venv(requirements: list[str], key: str) -> Path:
    """The venv holding `requirements` (installed on first use); errors name `key`."""
    name = "+".join(r.replace("==", "-") for r in requirements)
    target = cache_dir() / "tools" / name
    python = target / "bin" / "python"
    if python.exists():
        return target
    staging = target.with_name(f"{target.name}.{os.getpid()}.partial")  # one per installer
    shutil.rmtree(staging, ignore_errors=True)
    steps = [[sys.executable, "-m", "venv", str(staging)],
             [str(staging / "bin" / "python"), "-m", "pip", "install", "-q", "--no-compile",
              *requirements]]
    target.parent.mkdir(parents=True, exist_ok=True)
    for argv in steps:
        done = subprocess.run(argv, capture_output=True, text=True, cwd=target.parent)
        if done.returncode != 0:
            shutil.rmtree(staging, ignore_errors=True)
            last = (done.stderr.strip() or done.stdout.strip() or "no output").splitlines()[-1]
            raise PerfpagesError(f"cannot install {' '.join(requirements)}: {last}", key=key,
                                 fix="it is installed from PyPI once, into PERFPAGES_CACHE")
    try:
        staging.rename(target)
    except OSError:  # another process installed it meanwhile
        shutil.rmtree(staging, ignore_errors=True)
    return target
