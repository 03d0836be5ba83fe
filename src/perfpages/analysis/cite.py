"""`bench cite`: a Markdown block for a pull request that names the run, its pins and its data."""

from __future__ import annotations

from typing import Any

from perfpages.analysis.report import WARN, _md_table, build
from perfpages.analysis.text import prose, span
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
    # Titles, labels, pins and the machine come from the archive: escaped, never markup.
    pins = [f"- {span(name)}: {prose(label.pin.describe())}" + (
        # a transcribed run: the label's settings as its source states them
        "".join(f"; {prose(f'{k}={v}')}" for k, v in {**label.env, **label.pg_settings}.items())
        if m.source is not None else "") for name, label in m.labels.items()]
    commit = prose(m.harness.get("commit") or "unknown")
    name = f"[`{m.id}`]({run_url(site_url, m.id)})" if site_url else f"`{m.id}`"
    lines = [
        f"**{prose(m.title)}** — perfpages run {name}",
        "",
        *([f"- date: {m.started[:10]} ({m.scope} run, {m.method.rounds} interleaved rounds)",
           "- machine: " + prose(f"{machine.get('cpu')}, {machine.get('cores')} cores, "
                                 f"{machine.get('memory_gib')} GiB, Linux "
                                 f"{machine.get('kernel')}, Python {machine.get('python')}, "
                                 f"PostgreSQL {machine.get('postgresql') or 'n/a'}")]
          if m.source is None else  # nothing of it ran on a machine here
          [f"- archived: {m.started[:10]}, " + prose(m.source.note()),
           *([f"- decided by {prose(m.source.rule_text())}"] if m.source.rule_text() else []),
           *([f"- the source's method: {prose(m.source.method)}"] if m.source.method else [])]),
        f"- harness: perfpages {prose(m.harness.get('version'))} @ {commit}",
        "- pins:",
        *[f"  {p}" for p in pins],
        f"- `{RUN_FILE}` sha256: `{sha256_file(run.path / RUN_FILE)}`",
        "",
    ]
    if data.get("warnings"):  # what `bench report` flags travels with the numbers
        lines += [f"{WARN} **Warnings** (`invoke bench.report --run {m.id}` flags them):", "",
                  *[f"- {prose(w)}" for w in data["warnings"]], ""]
    if data["tables"]:
        head = data["tables"][0]
        what = ("median (min–max) of the rounds" if m.source is None or
                m.source.values == "rounds" else "as its source gives them")
        lines += [f"{prose(head['title'])}, {what}:", "",
                  *_md_table(head["columns"], head["rows"]), ""]
    if data["changes"]["summary"]:
        lines += [f"- {prose(s)}" for s in data["changes"]["summary"]] + [""]
    if data.get("certification"):  # method v2: what the A/A pair says of each block
        lines += ["Certification per block (A/A pair, resolution):", "",
                  *[f"- {prose(c['line'])}" for c in data["certification"]], ""]
    lines.append(f"Verify: `invoke bench.verify --run {m.id}`")
    return "\n".join(lines) + "\n"
