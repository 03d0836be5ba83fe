"""E-divisive means change points, from apache-otava (the maintained implementation of the
Matteson–James method as Hunter refined it), run in its own cached venv.

`change_points(series)` takes several series of numbers and returns, per series, the indices at
which a new segment starts. The first call installs the pinned requirement (PyPI, once; about
45 s and 250 MB); later calls start a Python in that venv, about a second each.
"""

from __future__ import annotations

import functools
import json
import subprocess
from pathlib import Path

from perfpages.errors import PerfpagesError
from perfpages.tools.venvs import tool_venv

REQUIREMENT = "apache-otava==0.8.0"
MAX_PVALUE = 0.001  # otava's default significance
WINDOW = 50  # points per sliding window of the split step (otava's default)
# -I: the caller's working directory must never shadow the standard library (a stray
# secrets.py in /tmp breaks numpy's import otherwise).
SCRIPT = """
import json, sys
from otava.analysis import compute_change_points
data = json.load(sys.stdin)
out = [[int(c.index) for c in compute_change_points(
    s, window_len=data["window"], max_pvalue=data["max_pvalue"])[0]] for s in data["series"]]
json.dump(out, sys.stdout)
"""


def venv() -> Path:
    """The tool's venv, installed on first use (atomically: a venv is whole or absent)."""
    return tool_venv([REQUIREMENT], "e-divisive")


def change_points(series: list[list[float]], max_pvalue: float = MAX_PVALUE) -> list[list[int]]:
    """Per series, the indices at which otava's E-divisive finds a new segment starting. A
    history chart, its claim and a reproduction's renderings ask for the same series: each is
    computed once per process (otava is deterministic)."""
    found = _computed(tuple(tuple(s) for s in series), max_pvalue)
    return [list(s) for s in found]


@functools.cache
def _computed(series: tuple[tuple[float, ...], ...],
              max_pvalue: float) -> tuple[tuple[int, ...], ...]:
    root = venv()
    done = subprocess.run([str(root / "bin" / "python"), "-I", "-c", SCRIPT], cwd=root,
                          input=json.dumps({"series": series, "window": WINDOW,
                                            "max_pvalue": max_pvalue}),
                          capture_output=True, text=True, timeout=300)
    if done.returncode != 0:
        last = (done.stderr.strip() or "no output").splitlines()[-1]
        raise PerfpagesError(f"apache-otava failed: {last}", key="e-divisive",
                             fix=f"remove {root} to reinstall it")
    return tuple(tuple(map(int, s)) for s in json.loads(done.stdout))
