"""Generated pages: one per archived run (provenance, tables, files, citation) and an index.

A complete run never changes, so its page is cached on disk under the sha256 of its run.json
(which lists the sha256 of every other file) and of this code; the files' checksums are still
verified on every build, so a corrupted archive is never published as intact.
"""

from __future__ import annotations

import hashlib
import html
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

from perfpages.analysis.decision import AA_SPREAD
from perfpages.archive.manifest import Manifest
from perfpages.archive.preflight import line
from perfpages.archive.reader import (
    RUN_FILE,
    Run,
    archived_files,
    find_runs,
    open_run,
    read_manifest,
)
from perfpages.archive.writer import write_text_atomic
from perfpages.errors import PerfpagesError
from perfpages.site import escape
from perfpages.site.store import code_hash

PREFIX = "runs"  # pages at runs/<id>/, files at runs/<id>/<path>; cite.run_url agrees


@dataclass
class RunEntry:
    id: str
    markdown: str
    files: dict[str, Path] = field(default_factory=dict)  # site path -> archived file
    manifest: Manifest | None = None
    problem: str | None = None  # why the run could not be read


def _size(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024  # type: ignore[assignment]
    return str(n)


def _rows(pairs: list[tuple[str, str]]) -> str:
    return "\n".join(f"- **{escape.md(k)}**: {v}" for k, v in pairs)


def render(run: Run, site_url: str) -> str:
    """The Markdown of one run's page; every value from the archive is escaped."""
    from perfpages.analysis import report  # pandas: only when a page is not in the cache
    from perfpages.analysis.cite import cite

    m = run.manifest
    data = report.build(run) if run.measured else None
    # The theme prints a page's title unescaped in <title>: give it one that is already escaped.
    out = ["---", f"title: {json.dumps(html.escape(m.title))}", "---", "",
           f"# {escape.md(m.title)}", ""]
    if m.scope == "synthetic":
        out += ['!!! warning "Synthetic run"', "",
                "    Generated values written by the real archive writer: not a measurement.", ""]
    if m.status != "complete":
        out += [f'!!! warning "{escape.md(m.status.capitalize())} run"', "",
                f"    This run is {escape.md(m.status)}: pages cannot pin it and it cannot be "
                "cited until it is complete.", ""]
    harness = f"perfpages {m.harness.get('version')} @ {m.harness.get('commit') or 'unknown'}"
    out += [_rows([("run", escape.code(m.id)), ("status", escape.md(m.status)),
                   ("started", escape.md(m.started)), ("ended", escape.md(m.ended or "—")),
                   ("suite", escape.md(f"{m.suite} ({m.scope})")),
                   ("command", escape.code(m.command)), ("harness", escape.md(harness)),
                   ("format", escape.md(f"perfpages-run v{m.format_version}"))]), ""]
    out += ["## Pins", "", escape.table(
        ["label", "pin", "environment", "PostgreSQL settings"],
        [[escape.code(name), escape.md(label.pin.describe()),
          escape.md(", ".join(f"{k}={v}" for k, v in label.env.items()) or "—"),
          escape.md(", ".join(f"{k}={v}" for k, v in label.pg_settings.items()) or "—")]
         for name, label in m.labels.items()]), ""]
    meth = m.method
    out += ["## Method", "", _rows([
        ("rounds", escape.md(f"{meth.rounds}, order {meth.order}"
                             + (f", seed {meth.seed}" if meth.seed is not None else ""))),
        ("warm-up, window", escape.md(f"{meth.warmup_s} s, {meth.window_s} s")),
        ("rounds needed for a verdict", escape.md(meth.min_rounds)),
        ("drift threshold", escape.md(f"{meth.drift_threshold:.0%}"))]), ""]
    if data:
        out += [escape.md(data["method"]) + ".", ""]
    if meth.notes:
        out += [escape.md(meth.notes), ""]
    machine = {k: v for k, v in m.machine.items() if k != "pg_settings"}
    out += ["## Machine", "", _rows([(k, escape.md(v)) for k, v in machine.items()]), ""]
    settings = m.machine.get("pg_settings") or {}
    if settings:
        out += ["PostgreSQL settings: " + escape.md(", ".join(f"{k}={v}"
                                                              for k, v in settings.items())), ""]
    if data:
        out += _results(data)
    out += _files(run)
    if m.status == "complete":
        out += ["## Cite", "", "Paste into a pull request (`invoke bench.cite` prints the same):",
                "", escape.fence(cite(run, site_url, data), "markdown"), ""]
    out += ["## Replay", "", "The command that made this run, and the check of its archive:", "",
            escape.fence(f"{m.command}\ninvoke bench.verify --run {m.id}", "bash"), ""]
    if run.notes:
        out += ["## Notes", "", *[f"- {escape.md(n)}" for n in run.notes], ""]
    return "\n".join(out)


def _results(data: dict[str, object]) -> list[str]:
    from perfpages.analysis import report

    out = ["## Results", "", "Each cell is the median of the rounds with its min–max range.", ""]
    for table in data["tables"]:  # type: ignore[attr-defined]
        out += [f"### {escape.md(table['title'])}", "",
                escape.table([escape.md(c) for c in table["columns"]],
                             [[escape.md(c) for c in row] for row in table["rows"]]), ""]
        out += [escape.md(n) for n in table["notes"]] + ([""] if table["notes"] else [])
    changes = data["changes"]  # type: ignore[index]
    if changes["rows"]:
        out += ["### Changes", "", escape.table(
            [escape.md(c) for c in changes["columns"]],
            [[escape.md(c) for c in row] for row in changes["rows"]]), ""]
        out += [f"- {escape.md(s)}" for s in changes["summary"]] + [""]
    if data["drift"]:
        out += ["### Floors", "", *[escape.md(report.drift_line(d))
                                    for d in data["drift"]], ""]  # type: ignore[attr-defined]
    return out + _machine(data)


def _machine(data: dict[str, Any]) -> list[str]:
    """The noise floor of the run's A/A pairs, its preflights and the load beside its windows
    (nothing for runs that have none of them)."""
    out = []
    if data.get("noise_floor"):
        out += ["### Noise floor", "", "Labels that ran the same build (an A/A pair): what they "
                "differ by is the machine's and the method's noise. On a quiet machine no cell is "
                f"clear and every round lies within ±{AA_SPREAD * 100:g} % of the pair's median.",
                "", escape.table(
                    ["block", "metric", "A/A pair", "changes", "clear", "largest spread"],
                    [[escape.md(x["block"]), escape.md(x["metric"]), escape.md(x["pair"]),
                      escape.md(x["changes"]),
                      ("⚠ " if x["clear"] else "") + f"{x['clear']} of {x['cells']}",
                      escape.md(f"±{x['spread_percent']:.1f} %")]
                     for x in data["noise_floor"]]), ""]
    if data.get("preflight") or data.get("machine_load"):
        out += ["### Quiet machine", ""]
        out += [("- ⚠ " if r["busy"] else "- ") + escape.md(line(r))
                for r in data.get("preflight", [])] + [""]
    if data.get("machine_load"):
        out += ["The rest of the machine during the measured windows (CPU in % of one core):",
                "", escape.table(["block", "label", "windows", "busy", "others (max)",
                                  "steal (max)"],
                                 [[escape.md(x["block"]), escape.md(x["label"]),
                                   str(x["windows"]), ("⚠ " if x["busy"] else "") +
                                   str(x["busy"]), escape.md(f"{x['others_max']:.0f} %"),
                                   escape.md(f"{x['steal_max']:.1f} %")]
                                  for x in data["machine_load"]]), ""]
    return out


def _files(run: Run) -> list[str]:
    files = sorted(p for p in run.path.rglob("*") if p.is_file() and not p.name.startswith("."))
    sums = run.manifest.files
    rows = []
    for p in files:
        rel = p.relative_to(run.path).as_posix()
        link = f"[{escape.md(rel)}]({quote(run.id)}/{quote(rel)})"
        digest = sums.get(rel) or ("(lists the others)" if rel == RUN_FILE else "—")
        rows.append([link, escape.md(_size(p.stat().st_size)), escape.code(digest)])
    out = ["## Files", "", escape.table(["file", "size", "sha256"], rows), ""]
    diagnostics = [p for p in files if p.relative_to(run.path).parts[0] == "diagnostics"]
    if diagnostics:
        out = ["## Diagnostics", "", *[
            f"- [{escape.md(p.relative_to(run.path).as_posix())}]"
            f"({quote(run.id)}/{quote(p.relative_to(run.path).as_posix())})"
            for p in diagnostics], "", *out]
    return out


def _site_files(run_dir: Path) -> dict[str, Path]:
    return {f"{PREFIX}/{run_dir.name}/{p.relative_to(run_dir).as_posix()}": p
            for p in sorted(run_dir.rglob("*")) if p.is_file() and not p.name.startswith(".")}


class RunPages:
    """Every run under results/ as a page; complete runs' pages are cached on disk."""

    def __init__(self, results_dir: Path, cache_dir: Path | None, site_url: str) -> None:
        self.results_dir = Path(results_dir)
        self.cache_dir = cache_dir
        self.site_url = site_url
        self._code = code_hash()

    def _cache_path(self, run_dir: Path) -> Path | None:
        if self.cache_dir is None:
            return None
        raw = (run_dir / RUN_FILE).read_bytes()
        key = hashlib.sha256(raw + self._code.encode() + self.site_url.encode()).hexdigest()
        return self.cache_dir / f"{run_dir.name}.{key[:24]}.md"

    def entry(self, run_dir: Path) -> RunEntry:
        try:
            manifest = read_manifest(run_dir)
            cache = self._cache_path(run_dir) if manifest.status == "complete" else None
            if cache is not None and cache.is_file() and \
                    archived_files(run_dir) == manifest.files:
                text = cache.read_text(encoding="utf-8")
            else:  # not cached, or its files changed: open_run names the problem
                text = render(open_run(run_dir), self.site_url)
                if cache is not None:
                    cache.parent.mkdir(parents=True, exist_ok=True)
                    write_text_atomic(cache, text)  # never half a page for the next build
        except PerfpagesError as exc:
            text = (f"---\ntitle: {json.dumps(html.escape(run_dir.name))}\n---\n\n"
                    f"# Run {escape.md(run_dir.name)}\n\n!!! failure \"Unreadable run\"\n\n"
                    f"    {escape.md(exc)}\n")
            return RunEntry(run_dir.name, text, problem=str(exc))
        return RunEntry(run_dir.name, text, _site_files(run_dir), manifest)

    def entries(self) -> list[RunEntry]:
        return [self.entry(d) for d in find_runs(self.results_dir)]


def index(entries: list[RunEntry]) -> str:
    """The index of all runs, newest first."""
    out = ["# Runs", "", "Every archived run under `results/`, newest first. A run's page has its "
           "pins, method, machine, tables, files with checksums, and how to cite and replay it.",
           ""]
    if not entries:
        return "\n".join([*out, "No run is archived yet: `invoke bench.run` makes one.", ""])
    rows = []
    for e in sorted(entries, key=lambda e: e.id, reverse=True):
        link = f"[{escape.md(e.id)}]({quote(e.id)}.md)"
        if e.manifest is None:
            rows.append([link, "—", "—", "unreadable", escape.md(e.problem or "")])
            continue
        m = e.manifest
        rows.append([link, escape.md(m.date), escape.md(f"{m.suite} ({m.scope})"),
                     escape.md(m.status), escape.md(m.title)])
    return "\n".join([*out, escape.table(["run", "date", "suite", "status", "title"], rows), ""])

