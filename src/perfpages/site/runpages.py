"""Generated pages: one per archived run (its reading rendered: provenance, tables, files,
citation) and an index. A complete run never changes, so its page is cached on disk
(.cache/perfpages/pages/) as its cells and reading are (`store`): keyed on the sha256 of its
seal.json and run.json and of this code, checksummed, and used only while the run is unchanged
since its full check, so a corrupted archive or an edited cache is never published.

The Reproduction section (a run's replays; on a replay, what reproduced) is never cached: it
depends on runs archived later and on the pages' claims, so it is made on every build, from the
runs' cached cells.
"""

from __future__ import annotations

import html
import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from perfpages.analysis.comparable import machine_name
from perfpages.analysis.warnings import summary
from perfpages.archive import files as stored
from perfpages.archive.manifest import Manifest
from perfpages.archive.reader import (
    RUN_FILE,
    Run,
    find_runs,
    fingerprint,
    intact,
    open_run,
    read_manifest,
    settled,
)
from perfpages.archive.seal import added, added_text
from perfpages.errors import AnalysisError, PerfpagesError
from perfpages.site import escape, header, page, runmachine
from perfpages.site import reproduction as repro
from perfpages.site import store as products
from perfpages.site.store import RunStore, cache_key, code_hash, entry_path, read_entry, write_entry

if TYPE_CHECKING:
    from perfpages.analysis.reading import Reading

PREFIX = "runs"  # pages at runs/<id>/, files at runs/<id>/<path>; cite.run_url agrees
# A compressed file is published as its .gz and, to read in the browser, a text file with its
# first and last EXCERPT_LINES lines (each cut to EXCERPT_WIDTH characters): the 21 MiB server
# log of the queryapigate run becomes ~70 KiB of site, not 21 MiB. An image is read whole.
EXCERPT_LINES = 200
EXCERPT_WIDTH = 400
WHOLE = (".svg",)


@dataclass
class RunEntry:
    id: str
    markdown: str
    files: dict[str, Path] = field(default_factory=dict)  # site path -> archived file
    manifest: Manifest | None = None
    problem: str | None = None  # why the run could not be read
    texts: dict[str, str] = field(default_factory=dict)  # site path -> generated (readable)
    warnings: str = "—"  # a complete run's warnings in short, for the index


_size = stored.size_text


@dataclass
class Readable:
    """A compressed file as the site shows it: its plain size, and a copy a browser reads."""

    plain_bytes: int
    name: str  # the copy's path in the run's folder on the site
    link: str  # what the run page calls it
    text: str


def readable(run: Run) -> dict[str, Readable]:
    """Each .gz of a run (by its path in the run), read once: excerpts of long text, an image
    whole. A copy whose name an archived file already has is left out."""
    taken = {p.relative_to(run.path).as_posix() for p in run.path.rglob("*")}
    out = {}
    for path in sorted(run.path.rglob("*" + stored.GZ)):
        rel = path.relative_to(run.path).as_posix()
        plain = stored.plain_name(rel)
        if path.name.startswith(".") or not path.is_file():
            continue
        if plain.endswith(WHOLE):
            data = stored.read_bytes(run.path, rel)
            shown = Readable(len(data), plain, "view", data.decode("utf-8", errors="replace"))
        else:
            shown = _excerpt(path, plain)
        if shown.name not in taken:
            out[rel] = shown
    return out


def _excerpt(path: Path, plain: str) -> Readable:
    ex = stored.excerpt(path, EXCERPT_LINES, EXCERPT_WIDTH)
    if ex.left_out:
        what = f"the first {len(ex.head):,} and the last {len(ex.tail):,} of its {ex.lines:,} lines"
        body = [*ex.head, f"[… {ex.left_out:,} lines left out …]", *ex.tail]
        link = f"first and last {EXCERPT_LINES} lines"
    else:
        what, body, link = f"all {ex.lines:,} lines", ex.head + ex.tail, "read"
    cut = f", each cut to {EXCERPT_WIDTH} characters" if ex.cut else ""
    head = (f"{plain}: {what}{cut} ({_size(ex.plain_bytes)} uncompressed). The whole file is "
            f"{path.name} ({_size(path.stat().st_size)}) beside this one: "
            f"`zcat {path.name} | less`.")
    return Readable(ex.plain_bytes, plain + ".excerpt.txt", link, "\n".join([head, "", *body, ""]))


def _rows(pairs: list[tuple[str, str]]) -> str:
    return "\n".join(f"- **{escape.md(k)}**: {v}" for k, v in pairs)


def render(run: Run, site_url: str, shown: dict[str, Readable] | None = None,
           seen: Reading | None = None) -> str:
    """The Markdown of one run's page (`shown`: its `readable` files, read when not given;
    `seen`: its reading, made when not given); every value from the archive is escaped."""
    from perfpages.analysis.cite import cite
    from perfpages.analysis.reading import read  # only when a page is not in the cache

    m, command = run.manifest, escape.typed(run.manifest.command)  # as a reader types it
    seen = seen or (read(run) if run.measured else None)
    data = seen.to_json() if seen is not None else None
    # The theme prints a page's title unescaped in <title>: give it one that is already escaped.
    out = ["---", f"title: {json.dumps(html.escape(m.title))}", "---", "",
           f"# {escape.md(m.title)}", ""]
    out += header.not_measured(m)
    if m.status != "complete":
        out += [f'!!! warning "{escape.md(m.status.capitalize())} run"', "",
                f"    This run is {escape.md(m.status)}: pages cannot pin it and it cannot be "
                "cited until it is complete.", ""]
    harness = f"perfpages {m.harness.get('version')} @ {m.harness.get('commit') or 'unknown'}"
    out += [_rows([("run", escape.code(m.id)), ("status", escape.md(m.status)),
                   ("started", escape.md(m.started)), ("ended", escape.md(m.ended or "—")),
                   ("suite", escape.md(f"{m.suite} ({m.scope})")),
                   ("command", escape.code(command)), ("harness", escape.md(harness)),
                   ("format", escape.md(f"perfpages-run v{m.format_version}")),
                   *_sealed_later(run)]), ""]
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
        ("drift threshold", escape.md(f"{meth.drift_threshold:.0%}")),
        *([("CPU placement", escape.md("; ".join(
            f"{part} on CPU {', '.join(map(str, cpus))}"
            for part, cpus in meth.placement.items())))] if meth.placement else [])]), ""]
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
    out += _files(run, readable(run) if shown is None else shown)
    if m.status == "complete":
        out += ["## Cite", "", "Paste into a pull request (`invoke bench.cite` prints the same):",
                "", escape.fence(cite(run, site_url, data), "markdown"), ""]
    out += ["## Replay", "", "The command that made this run, and the check of its archive:", "",
            escape.fence(f"{command}\ninvoke bench.verify --run {m.id}", "bash"), ""]
    if run.notes:
        out += ["## Notes", "", *[f"- {escape.md(n)}" for n in run.notes], ""]
    return "\n".join(out)


def _sealed_later(run: Run) -> list[tuple[str, str]]:
    """The provenance row of a seal added later by `bench.seal` (none for the writer's)."""
    record = added(run.path) if run.manifest.status == "complete" else None
    return [("sealed", escape.md(added_text(record)))] if record else []


def _results(data: dict[str, Any]) -> list[str]:
    from perfpages.analysis import report

    out = ["## Results", "", "Each cell is the median of the rounds with its min–max range.", ""]
    for table in data["tables"]:
        out += [f"### {escape.md(table['title'])}", "",
                escape.table([escape.md(c) for c in table["columns"]],
                             [[escape.md(c) for c in row] for row in table["rows"]]), ""]
        out += [escape.md(n) for n in table["notes"]] + ([""] if table["notes"] else [])
    changes = data["changes"]
    if changes["rows"]:
        out += ["### Changes", "", escape.table(
            [escape.md(c) for c in changes["columns"]],
            [[escape.md(c) for c in row] for row in changes["rows"]]), ""]
        out += [f"- {escape.md(s)}" for s in changes["summary"]] + [""]
    if data.get("certification"):  # method v2 runs: what the A/A pair says of each block
        out += ["### Certification", "", escape.md(report.CERTIFICATION) + ".", "",
                *[f"- {escape.md(c['line'])}" for c in data["certification"]], ""]
    if data.get("pairing"):  # method v2 runs: the windows their comparisons pair
        out += ["### Pairing", "", escape.md(report.PAIRING) + ".", "",
                *[f"- {escape.md(line)}" for f in data["pairing"]
                  for line in f["lines"]], ""]
    if data["drift"]:
        out += ["### Floors", "", *[escape.md(report.drift_line(d))
                                    for d in data["drift"]], ""]
    return out + runmachine.section(data)


def _files(run: Run, shown: dict[str, Readable]) -> list[str]:
    files = sorted(p for p in run.path.rglob("*") if p.is_file() and not p.name.startswith("."))
    sums = run.manifest.files

    def link(rel: str) -> str:  # a compressed file links its readable copy too
        out = f"[{escape.md(rel)}]({quote(run.id)}/{quote(rel)})"
        copy = shown.get(rel)
        return out if copy is None else \
            f"{out} ([{escape.md(copy.link)}]({quote(run.id)}/{quote(copy.name)}))"

    rows = []
    for p in files:
        rel = p.relative_to(run.path).as_posix()
        digest = sums.get(rel) or ("(lists the others)" if rel == RUN_FILE else "—")
        size = _size(p.stat().st_size)
        if rel in shown:
            size += f" ({_size(shown[rel].plain_bytes)} uncompressed)"
        rows.append([link(rel), escape.md(size), escape.code(digest)])
    out = ["## Files", "", escape.table(["file", "size", "sha256"], rows), ""]
    diagnostics = [p for p in files if p.relative_to(run.path).parts[0] == "diagnostics"]
    if diagnostics:
        out = ["## Diagnostics", "", *[f"- {link(p.relative_to(run.path).as_posix())}"
                                       for p in diagnostics], "", *out]
    return out


def _site_files(run_dir: Path) -> dict[str, Path]:
    return {f"{PREFIX}/{run_dir.name}/{p.relative_to(run_dir).as_posix()}": p
            for p in sorted(run_dir.rglob("*")) if p.is_file() and not p.name.startswith(".")}


class RunPages:
    """Every run under results/ as a page; complete runs' pages are cached on disk."""

    def __init__(self, results_dir: Path, cache_dir: Path | None, site_url: str, *,
                 store: RunStore | None = None, docs: repro.Docs | None = None) -> None:
        self.results_dir = Path(results_dir)
        self.cache_dir = cache_dir
        self.site_url = site_url
        self._code = code_hash()
        self.store = store or RunStore(self.results_dir, cache_dir)
        self.docs = docs  # the site's pages, for the claims of a replay (default: mkdocs.yml's)
        self._reproduced: dict[tuple[str, str], dict[str, Any] | str] = {}

    def _cache_path(self, run_dir: Path, key: str) -> Path | None:
        return None if self.cache_dir is None else entry_path(self.cache_dir, "pages", run_dir, key)

    def entry(self, run_dir: Path) -> RunEntry:
        try:
            manifest = read_manifest(run_dir)
            complete = manifest.status == "complete" and self.cache_dir is not None
            # A seal added later (bench.seal) changes the page but not run.json: both are keyed.
            key = cache_key(run_dir, self._code) + self.site_url if complete else ""
            cache = self._cache_path(run_dir, key) if complete else None
            saved = read_entry(cache, key) if cache is not None else None
            if isinstance(saved, dict) and {"markdown", "texts", "warnings"} <= set(saved):
                known = tuple(tuple(f) for f in saved.get("fingerprint") or ())
                recorded = intact(run_dir, known)  # unchanged since its full check, or checked
                text, texts, short = saved["markdown"], saved["texts"], saved["warnings"]
                if recorded != known and cache is not None:
                    write_entry(cache, key, {**saved, "fingerprint": recorded})
            else:  # not cached, or its entry edited: open_run names the problem
                taken, stamp = time.time_ns(), fingerprint(run_dir)
                run = open_run(run_dir)
                shown = readable(run)
                seen: Reading | str = "—"  # a complete run's reading, made once and cached
                try:
                    if manifest.status == "complete":
                        seen = products.reading(self.store.get(run_dir.name, run), run)
                except AnalysisError as exc:  # intact (its page says so), yet not readable
                    seen = f"not decided: {exc}"
                text = render(run, self.site_url, shown, None if isinstance(seen, str) else seen)
                texts = {f"{PREFIX}/{run_dir.name}/{c.name}": c.text for c in shown.values()}
                short = seen if isinstance(seen, str) else summary(seen.items)
                if cache is not None:  # one file, written whole: never half a page
                    write_entry(cache, key, {"fingerprint": settled(stamp, taken), "markdown": text,
                                             "texts": texts, "warnings": short})
        except Exception as exc:  # one odd run never stops every build: a line, not a traceback
            problem = str(exc) if isinstance(exc, PerfpagesError) else (
                f"{run_dir}: its page could not be rendered ({type(exc).__name__}: {exc}) — "
                "a perfpages bug: report it with this run; the other pages are built")
            text = (f"---\ntitle: {json.dumps(html.escape(run_dir.name))}\n---\n\n"
                    f"# Run {escape.md(run_dir.name)}\n\n!!! failure \"Unreadable run\"\n\n"
                    f"    {escape.md(problem)}\n")
            return RunEntry(run_dir.name, text, problem=problem)
        return RunEntry(run_dir.name, text, _site_files(run_dir), manifest, texts=texts,
                        warnings=short)

    def entries(self) -> list[RunEntry]:
        entries = [self.entry(d) for d in find_runs(self.results_dir)]
        replays: dict[str, list[str]] = {}
        for e in entries:
            original = e.manifest.replay_of if e.manifest else None
            if original:
                replays.setdefault(original, []).append(e.id)
        for e in entries:
            if e.manifest is not None:
                e.markdown += self.reproduction(e.manifest, replays.get(e.id, []))
        return entries

    def _reproduce(self, original: str, second: str) -> dict[str, Any] | str:
        """The reproduction of `original` by `second`, or the one line why there is none."""
        if (original, second) not in self._reproduced:
            try:
                docs = self.docs or repro.Docs.find()
                result: dict[str, Any] | str = page.reproduce(self.store, docs, original,
                                                                 second)
            except PerfpagesError as exc:
                result = str(exc)
            self._reproduced[original, second] = result
        return self._reproduced[original, second]

    def reproduction(self, m: Manifest, replays: list[str]) -> str:
        """The Reproduction section of a run's page: its replays, or what its replay of
        another run reproduced; "" for a run that is neither."""
        original = m.replay_of
        if original is None and not replays:
            return ""
        out = ["", "## Reproduction", ""]
        if original is not None:
            link = f"[{escape.md(original)}]({quote(original)}.md)"
            out += [f"This run is a replay of {link}, made by "
                    f"{escape.code(f'invoke bench.replay {original}')}; "
                    f"{escape.code(f'invoke bench.replay {original} --claims-only {m.id}')} "
                    "prints the whole report.", ""]
            data = self._reproduce(original, m.id) if (self.results_dir / original).is_dir() \
                else f"run {original} is not archived in {self.results_dir.name}/"
            out += [escape.md(data), ""] if isinstance(data, str) else [
                repro.markdown(data, level=3)]
        if replays:
            out += ["Replays of this run, with the same suite, pins, settings, method, scope "
                    "and seed:", ""]
        for replay in sorted(replays):
            data = self._reproduce(m.id, replay)
            out += [f"### [{escape.md(replay)}]({quote(replay)}.md)", ""]
            out += [escape.md(data)] if isinstance(data, str) else [
                f"- {escape.md(line)}" for line in data["lines"]]
            out += [""]
        return "\n".join(out)


def index(entries: list[RunEntry]) -> str:
    """The index of all runs, newest first, with each run's machine and warnings in short
    (`perfpages.analysis.warnings.summary` of its reading, cached with its page)."""
    out = ["# Runs", "", "Every archived run under `results/`, newest first. A run's page has its "
           "pins, method, machine, tables, files with checksums, and how to cite and replay it. "
           "Warnings, as its report lists them: the largest floor drift beyond the run's "
           "threshold (runs decided by the v1 ranges rule), blocks with faults, blocks with a "
           "busy machine, blocks not certified.", ""]
    if not entries:
        return "\n".join([*out, "No run is archived yet: `invoke bench.run` makes one.", ""])
    rows = []
    for e in sorted(entries, key=lambda e: e.id, reverse=True):
        link = f"[{escape.md(e.id)}]({quote(e.id)}.md)"
        if e.manifest is None:
            rows.append([link, "—", "—", "unreadable", "—", "—", escape.md(e.problem or "")])
            continue
        rows.append([link, escape.md((m := e.manifest).date), escape.md(f"{m.suite} ({m.scope})"),
                     escape.md(m.status), escape.md(machine_name(m.machine)),
                     escape.md(e.warnings), escape.md(m.title)])
    return "\n".join([*out, escape.table(["run", "date", "suite", "status", "machine",
                                           "warnings", "title"], rows), ""])
