"""Benchmark: this repository's site built the two ways pages.md describes — `mkdocs build` with
the perfpages plugin, and `perfpages render` followed by `zensical build` of the rendered pages —
in one run, builds interleaved, medians of ROUNDS. Each build is a fresh process, as CI runs it;
the plugin's cache (.cache/perfpages/) is warm for both after a first, unreported build.

Zensical (pinned as tests/test_zensical.py pins it) is installed once into perfpages' tool cache
from PyPI; everything is built in a temporary copy of docs/, results/ and mkdocs.yml.

    python benchmarks/render_zensical.py [--rounds 3]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from perfpages.tools.venvs import tool_venv  # noqa: E402

ZENSICAL = "zensical==0.0.73"
ENV = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}


def timed(argv: list[str], cwd: Path) -> float:
    started = time.perf_counter()
    subprocess.run(argv, cwd=cwd, env=ENV, check=True, capture_output=True)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    rounds = parser.parse_args().rounds
    python = tool_venv([ZENSICAL], "zensical") / "bin" / "python"
    with tempfile.TemporaryDirectory(prefix="perfpages-bench-") as tmp:
        site = Path(tmp)
        for name in ("docs", "results", "tests"):
            shutil.copytree(ROOT / name, site / name, symlinks=True)
        for name in ("mkdocs.yml", "pyproject.toml"):
            shutil.copy2(ROOT / name, site / name)
        mkdocs = [sys.executable, "-m", "mkdocs", "build", "--strict", "-q"]
        render = [sys.executable, "-m", "perfpages", "render"]
        build = [str(python), "-m", "zensical", "build", "-f", "rendered/mkdocs.yml"]
        timed(mkdocs, site)  # warm the cache both ways use
        times: dict[str, list[float]] = {"mkdocs": [], "render": [], "zensical": []}
        for i in range(rounds):
            order = ["mkdocs", "other"] if i % 2 == 0 else ["other", "mkdocs"]
            for way in order:
                if way == "mkdocs":
                    times["mkdocs"].append(timed(mkdocs, site))
                else:
                    times["render"].append(timed(render, site))
                    times["zensical"].append(timed(build, site))
    med = {k: statistics.median(v) for k, v in times.items()}
    both = med["render"] + med["zensical"]
    print(f"{rounds} rounds, medians: mkdocs build --strict {med['mkdocs']:.1f} s; "
          f"perfpages render {med['render']:.1f} s + zensical build {med['zensical']:.1f} s "
          f"= {both:.1f} s; ratio {both / med['mkdocs']:.2f}×")


if __name__ == "__main__":
    main()
