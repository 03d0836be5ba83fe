"""Site build time: what the perfpages plugin costs, and how it grows with the archive.

Ratios measured side by side in one run, builds interleaved, medians of ROUNDS; each build is a
fresh `mkdocs build` process, as `invoke docs.build` runs it:

1. plugin ÷ plain: the same site (performance pages, run pages, run files) built with the plugin,
   and pre-rendered to plain Markdown built without it (target ≤ 1.3×);
2. 100 runs ÷ 10 runs: the same performance pages over an archive of 100 or of 10 runs (target
   ≤ 1.2×); once with run pages off (exactly the same pages), once with the page per run on.

Archives are synthetic (perfpages.testing, the real writer). The plugin's run-page cache
(.cache/perfpages/) is warm, as in `mkdocs serve` or a CI that keeps .cache/; the first, cold
builds are reported too, and 3. the CPU time of one cold run page (`RunPages.entry` of each
synthetic run with an empty cache, in one process after a first page; target ≤ 25 ms).

    python benchmarks/site_build.py [--rounds 5] [--pages 6]
"""

from __future__ import annotations

import argparse
import compileall
import logging
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

import perfpages
from perfpages.site.page import render_file
from perfpages.site.runpages import PREFIX, RunPages, index
from perfpages.site.store import RunStore
from perfpages.testing import Spec, generate

PINNED = "2026-11-01-synthetic-r000"
PAGE = """---
runs:
  demo: {run}
---
# Synthetic page {n} (generated values, not a measurement)

{{{{ table("throughput", rows="call", columns="label", block="callers", change="v1.0") }}}}

{{{{ table(["p50", "p99"], rows="metric", columns="label", block="one-caller") }}}}

One caller waits {{{{ figure("p50", label="v1.1", block="one-caller") }}}}; v1.1 over v1.0:
{{{{ change("v1.0", "v1.1", block="callers") }}}}.

{{{{ claim("The cache is faster.", faster("v1.0", "v1.1 + cache", block="callers")) }}}}
{{{{ claim("v1.1 gains a few percent.", between(1, 15, "v1.0", "v1.1", block="callers")) }}}}
{{{{ claim("p99 stays low.", below("p99", 100, block="one-caller")) }}}}

{{{{ chart("call", "throughput", block="callers", title="Throughput by call") }}}}
"""


def make_results(root: Path, count: int) -> Path:
    for i in range(count):
        generate(root, Spec(run_id=f"2026-11-01-synthetic-r{i:03d}", seed=i))
    return root


def write_project(project: Path, docs: dict[str, str | Path], plugin: dict[str, object] | None,
                  ) -> Path:
    if project.exists():
        shutil.rmtree(project)
    for name, content in docs.items():
        target = project / "docs" / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, Path):
            shutil.copyfile(content, target)
        else:
            target.write_text(content, encoding="utf-8")
    plugins: list[object] = ["search"] + ([{"perfpages": plugin}] if plugin else [])
    perf = sorted(n for n in docs if n.startswith("perf/"))
    nav = ["index.md", {"Performance": perf}]  # as mkdocs.yml: run pages reached from runs/
    if f"{PREFIX}/index.md" in docs or (plugin and plugin.get("run_pages", True)):
        nav.append({"Runs": f"{PREFIX}/index.md"})
    config = {"site_name": "bench", "site_url": "https://example.org/",
              "theme": {"name": "material", "font": False},
              "markdown_extensions": ["admonition", "tables", "pymdownx.superfences"],
              "plugins": plugins, "nav": nav}
    (project / "mkdocs.yml").write_text(yaml.safe_dump(config), encoding="utf-8")
    return project / "mkdocs.yml"


def prerendered(results: Path, pages: dict[str, str], scratch: Path) -> dict[str, str | Path]:
    """The plugin's output as plain files: rendered pages, run pages, run files."""
    store = RunStore(results)
    out: dict[str, str | Path] = {}
    for name, text in pages.items():
        source = scratch / name
        source.parent.mkdir(parents=True, exist_ok=True)
        source.write_text(text, encoding="utf-8")
        out[name] = render_file(source, path=f"docs/{name}", store=store).markdown
    entries = RunPages(results, None, "https://example.org/").entries()
    for entry in entries:
        out[f"{PREFIX}/{entry.id}.md"] = entry.markdown
        for site_path, file in entry.files.items():
            out[site_path] = file
    out[f"{PREFIX}/index.md"] = index(entries)
    return out


def cold_page_ms(results: Path, scratch: Path) -> list[float]:
    """CPU time of each run's page made with an empty cache (the first page, which imports
    pandas and the rest, is left out)."""
    pages = RunPages(results, scratch / "cold-cache", "https://example.org/")
    runs = sorted(p for p in results.iterdir() if p.is_dir())
    pages.entry(runs[0])
    out = []
    for run in runs[1:]:
        start = time.process_time()
        pages.entry(run)
        out.append((time.process_time() - start) * 1000)
    return out


def timed(yml: Path) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "mkdocs", "build", "-q", "-f", str(yml)], check=True,
                   env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--pages", type=int, default=6)
    args = parser.parse_args()
    logging.getLogger("mkdocs").setLevel(logging.ERROR)
    # Builds import perfpages as an installed wheel has it: compiled to bytecode (pip compiles
    # at install, as it did MkDocs and Material). A checkout under PYTHONDONTWRITEBYTECODE=1
    # would otherwise compile ~60 modules in every build (about 70 ms, a third of the plugin).
    compileall.compile_dir(Path(perfpages.__file__).parent, quiet=1)
    work = Path(tempfile.mkdtemp(prefix="perfpages-bench-"))
    pages = {"index.md": "# Home\n"}
    pages |= {f"perf/v{n}.md": PAGE.format(run=PINNED, n=n) for n in range(1, args.pages + 1)}
    print(f"generating 100 synthetic runs in {work} …", flush=True)
    few = make_results(work / "results-10", 10)
    many = work / "results-100"
    shutil.copytree(few, many)
    for i in range(10, 100):
        generate(many, Spec(run_id=f"2026-11-01-synthetic-r{i:03d}", seed=i))
    (work / "scratch").mkdir()
    projects = {
        "plain, 10 runs": write_project(work / "plain-10",
                                        prerendered(few, pages, work / "scratch"), None),
        "plugin, 10 runs": write_project(work / "plugin-10", pages, {"results": str(few)}),
        "plain, 100 runs": write_project(work / "plain-100",
                                         prerendered(many, pages, work / "scratch"), None),
        "plugin, 100 runs": write_project(work / "plugin-100", pages, {"results": str(many)}),
        "no run pages, 10 runs": write_project(work / "same-10", pages,
                                               {"results": str(few), "run_pages": False}),
        "no run pages, 100 runs": write_project(work / "same-100", pages,
                                                {"results": str(many), "run_pages": False}),
    }
    cold = {name: timed(projects[name]) for name in ("plugin, 10 runs", "plugin, 100 runs")}
    times: dict[str, list[float]] = {name: [] for name in projects}
    for _ in range(args.rounds):
        for name, yml in projects.items():
            times[name].append(timed(yml))
    med = {k: statistics.median(v) for k, v in times.items()}
    low = {k: min(v) for k, v in times.items()}
    for name, values in times.items():
        print(f"{name:>24}: median {med[name]:.2f} s  (min {low[name]:.2f}, "
              f"max {max(values):.2f}, {len(values)} builds)")
    print(f"{'cold page cache':>24}: 10 runs {cold['plugin, 10 runs']:.2f} s, "
          f"100 runs {cold['plugin, 100 runs']:.2f} s")

    def ratio(a: str, b: str) -> str:
        return f"{med[a] / med[b]:.2f}× (of the fastest builds: {low[a] / low[b]:.2f}×)"

    print(f"plugin ÷ plain (10 runs, {args.pages} performance pages): "
          f"{ratio('plugin, 10 runs', 'plain, 10 runs')}, target ≤ 1.3×")
    print("100 runs ÷ 10 runs, same pages (run pages off): "
          f"{ratio('no run pages, 100 runs', 'no run pages, 10 runs')}, target ≤ 1.2×")
    print("100 runs ÷ 10 runs, with a page per run (110 vs 20 pages): "
          f"{ratio('plugin, 100 runs', 'plugin, 10 runs')}; "
          f"the same for plain pages: {ratio('plain, 100 runs', 'plain, 10 runs')}")
    print(f"plugin ÷ plain (100 runs): {ratio('plugin, 100 runs', 'plain, 100 runs')}")
    cold_ms = cold_page_ms(many, work / "scratch")
    print(f"cold run page: median {statistics.median(cold_ms):.0f} ms CPU (min "
          f"{min(cold_ms):.0f}, max {max(cold_ms):.0f}, {len(cold_ms)} pages), target ≤ 25 ms")
    shutil.rmtree(work)


if __name__ == "__main__":
    main()
