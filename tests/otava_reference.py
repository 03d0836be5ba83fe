"""apache-otava 0.8.0, the implementation perfpages' E-divisive (analysis/edivisive.py) is checked
against: installed from PyPI once into a cached tool venv and called over JSON.

`python tests/otava_reference.py` writes tests/fixtures/edivisive_otava.json: `cases()` and
otava's answers on them, so a run without the network still checks agreement.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import numpy as np

from perfpages.tools.venvs import tool_venv

REQUIREMENT = "apache-otava==0.8.0"
FIXTURE = Path(__file__).parent / "fixtures" / "edivisive_otava.json"
# -I: the caller's working directory must never shadow the standard library.
SCRIPT = """
import json, sys
from otava.analysis import compute_change_points
data = json.load(sys.stdin)
out = [[int(c.index) for c in compute_change_points(
    s, window_len=data["window"], max_pvalue=data["max_pvalue"])[0]] for s in data["series"]]
json.dump(out, sys.stdout)
"""


def otava_change_points(series: list[list[float]], window: int = 50,
                        max_pvalue: float = 0.001) -> list[list[int]]:
    """Per series, the indices otava's compute_change_points returns."""
    root = tool_venv([REQUIREMENT], "e-divisive")
    done = subprocess.run([str(root / "bin" / "python"), "-I", "-c", SCRIPT], cwd=root,
                          input=json.dumps({"series": series, "window": window,
                                            "max_pvalue": max_pvalue}),
                          capture_output=True, text=True, timeout=600, check=True)
    return [list(s) for s in json.loads(done.stdout)]


def cases(seed: int, count: int, longest: int = 160) -> list[list[float]]:
    """Series of every kind that matters: steps up and down, none, noisy, heavy-tailed, drifts,
    short (0–3 points), constant, integer values full of ties, and small steps in small noise.
    Values are rounded to 4 significant digits, as JSON keeps them exactly."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(count):
        n = int(rng.integers(4, longest)) if i % 10 != 9 else i // 10 % 4
        kind = i % 9
        if kind == 0:  # no step
            s = rng.normal(100, 5, n)
        elif kind == 1:  # several steps, noise that varies
            s = (np.repeat(rng.normal(100, 20, 6), n // 6 + 1)[:n]
                 + rng.normal(0, rng.uniform(1, 10), n))
        elif kind == 2:  # integers: ties everywhere
            s = np.round(rng.normal(10, 2, n))
        elif kind == 3:  # constant
            s = np.full(n, 7.0)
        elif kind == 4:  # three values
            s = rng.integers(0, 3, n).astype(float)
        elif kind == 5:  # integer steps without noise
            s = np.repeat(rng.integers(0, 5, 10), n // 10 + 1)[:n].astype(float)
        elif kind == 6:  # a 2 % step in 1 % noise
            s = np.concatenate([rng.normal(1, 0.01, n // 2), rng.normal(1.02, 0.01, n - n // 2)])
        elif kind == 7:  # heavy tails, doubling after a third
            s = rng.lognormal(0, 1, n) * (1 + (np.arange(n) > n // 3))
        else:  # a drift
            s = np.linspace(1, 1.5, n) + rng.normal(0, 0.05, n)
        out.append([float(f"{v:.4g}") for v in s])
    return out


if __name__ == "__main__":
    series = cases(seed=23, count=45)
    FIXTURE.write_text(json.dumps({"otava": REQUIREMENT, "window": 50, "max_pvalue": 0.001,
                                   "series": series, "change_points": otava_change_points(series)},
                                  separators=(",", ":")) + "\n")
