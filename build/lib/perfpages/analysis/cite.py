"""`bench cite`: a Markdown block for a pull request that names the run, its pins and its data."""

from __future__ import annotations

from typing import Any

from perfpages.analysis.report import WARN, _md_table, build
from perfpages.archive.reader import RUN_FILE, Run, sha256_file
from perfpages.errors import ArchiveError


def run_url(site_url: str, run_id: str) -> str:
    """Where the generated page of a run lives on the site."""
    return f"{site_url.rstrip('/')}/runs/{run_id}/"


def cite(run: Run, site_url: str, data: dict[str, Any] | None = None) -> str:
    """The block; `data` is the run's report.build() when the caller already has it. Without
    a site URL there is no link: a made-up address would be a dead link in the pull request."""
    m = run.manifest
    if m.status != "complete":
        raise ArchiveError(f"run is {m.status}, not complete", where=run.path,
                           fix="only complete runs can be cited: resume it with "
                               f"`invoke bench.run --resume {m.id}`")
    data = data or build(run)
    machine = m.machine
    pins = [f"- `{name}`: {label.pin.describe()}" for name, label in m.labels.items()]
    commit = m.harness.get("commit") or "unknown"
    name = f"[`{m.id}`]({run_url(site_url, m.id)})" if site_url else f"`{m.id}`"
    lines = [
        f"**{m.title}** — perfpages run {name}",
        "",
        f"- date: {m.started[:10]} ({m.scope} run, {m.method.rounds} interleaved rounds)",
        f"- machine: {machine.get('cpu')}, {machine.get('cores')} cores, "
        f"{machine.get('memory_gib')} GiB, Linux {machine.get('kernel')}, "
        f"Python {machine.get('python')}, PostgreSQL {machine.get('postgresql') or 'n/a'}",
        f"- harness: perfpages {m.harness.get('version')} @ {commit}",
        "- pins:",
        *[f"  {p}" for p in pins],
        f"- `{RUN_FILE}` sha256: `{sha256_file(run.path / RUN_FILE)}`",
        "",
    ]
    if data.get("warnings"):  # what `bench report` flags travels with the numbers
        lines += [f"{WARN} **Warnings** (`invoke bench.report --run {m.id}` flags them):", "",
                  *[f"- {w}" for w in data["warnings"]], ""]
    if data["tables"]:
        head = data["tables"][0]
        lines += [f"{head['title']}, median (min–max) of the rounds:", "",
                  *_md_table(head["columns"], head["rows"]), ""]
    if data["changes"]["summary"]:
        lines += [f"- {s}" for s in data["changes"]["summary"]] + [""]
    lines.append(f"Verify: `invoke bench.verify --run {m.id}`")
    return "\n".join(lines) + "\n"
