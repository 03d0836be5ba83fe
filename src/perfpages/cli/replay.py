"""`bench replay`: replay a run, or take a second run of its suite, and print the reproduction
report (`perfpages.site.page.reproduce`) in the terminal, as Markdown or as JSON."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.text import Text

from perfpages.analysis import reproduction as analysis
from perfpages.analysis.report import WARN
from perfpages.analysis.text import prose
from perfpages.archive.reader import failure, incomplete, open_run, read_manifest, resolve
from perfpages.cli.console import _escape, _rich
from perfpages.errors import PerfpagesError
from perfpages.site import config as site_config
from perfpages.site import page
from perfpages.site import reproduction as repro
from perfpages.site.store import RunStore

FAIL_ON = ("claims",)
BROKEN = "the page cannot be rendered on the original run"  # site.reproduction.pair_claims


def print_reproduction(results_dir: Path, ref: str, other: str | None, fmt: str,
                       console: Console, *, mkdocs: Path, suites: Path,
                       fail_on: str | None = None, command: str = "") -> int:
    """`bench replay`: replay run `ref` (or take the existing run `other`), then print the
    reproduction report; with `fail_on="claims"`, exit 1 after it when a claim of a page pinning
    `ref` does not hold on the second run, a line each on stderr (for CI)."""
    if fail_on is not None and fail_on not in FAIL_ON:
        raise PerfpagesError(f"unknown condition {fail_on!r}", key="--fail-on",
                             fix="use --fail-on claims (exit 1 when a claim does not reproduce)")
    if fmt not in ("term", "md", "json"):
        raise PerfpagesError(f"unknown format {fmt!r}", key="--format",
                             fix="use term, md or json")
    if mkdocs.exists():  # its pages' claims are compared: a site MkDocs refuses is said now
        site_config.read(mkdocs)
    elif other is not None:  # --claims-only compares the claims: with no site, none at all
        raise PerfpagesError("no such file: the claims compared are its pages'", where=mkdocs,
                             key="--claims-only", fix="run it in the site's repository, or "
                             "set [tool.perfpages] mkdocs")
    original = resolve(results_dir, ref)
    manifest = read_manifest(original)  # refused before anything runs or loads
    if other is not None:
        second = resolve(results_dir, other)
        # What bench.replay refuses to replay is no original here either, nor a second run.
        for run_dir, key in ((original, "bench.replay"), (second, "--claims-only")):
            why = incomplete(run_dir, read_manifest(run_dir))
            if why is not None:
                raise PerfpagesError(f"run {run_dir.name} {why[0]}", key=key, fix=why[1])
        analysis.check_pair(manifest, read_manifest(second))
        if not repro.Docs.from_mkdocs(mkdocs).root.is_dir():
            raise PerfpagesError("no such directory: no page, no claim to compare",
                                 where=repro.Docs.from_mkdocs(mkdocs).root, key="--claims-only",
                                 fix="point mkdocs.yml's docs_dir at the pages")
    else:
        from perfpages.run import runner
        from perfpages.run.replay import replay_options

        opts = replay_options(original.parent, original.name, suites, command)
        # The run's progress goes to stderr when stdout carries Markdown or JSON.
        second = runner.run(opts, console if fmt == "term" else Console(stderr=True))
    if second.parent.resolve() != original.parent.resolve():
        raise PerfpagesError(f"runs {original.name} and {second.name} are in two results "
                             "directories", key="--claims-only",
                             fix="name two runs of one results directory (--results)")
    data = page.reproduce(RunStore(original.parent), repro.Docs.from_mkdocs(mkdocs),
                          original.name, second.name)
    if fmt == "json":
        sys.stdout.write(json.dumps(data, indent=2, ensure_ascii=False) + "\n")
    elif fmt == "md":
        sys.stdout.write(f"# Reproduction of {prose(original.name)} by {prose(second.name)}\n\n"
                         + repro.markdown(data, full=True, esc=prose, lines=True))
    else:
        print_terminal(data, console)
    sys.stdout.flush()  # the report first, then why the command fails
    status = data["second"]["status"]
    if other is None and status == "failed":  # archived, as bench.run: the command fails
        print(f"error: run {second.name} failed: {failure(open_run(second).windows)}",
              file=sys.stderr)
        return 1
    # A page broken on the original run is the site's error, not a finding of the replay
    broken = [f"{item['page']}: {item['reason']}" for item in data["claims"]["items"]
              if not item["sentence"] and str(item["reason"]).startswith(BROKEN)]
    for line in broken:
        print(f"error: {line}", file=sys.stderr)
    if broken:
        return 1
    wrong = repro.failures(data)
    if fail_on != "claims" or not wrong:
        return 0
    for line in wrong:
        print(f"fail: claim does not reproduce: {line}", file=sys.stderr)
    return 1


def print_terminal(data: dict[str, Any], console: Console) -> None:
    original, second = data["original"], data["second"]
    console.print(Text.assemble((f"Reproduction of {original['id']}", "bold"),
                                f" by {second['id']}"
                                + (" (its replay)" if data["replay"] else "")
                                + f"  ({original['title']})"))
    for note in analysis.notes(data):
        console.print(_escape(f"note: {note}"))
    if data["cells"]:
        console.print(_rich("Cells", analysis.columns(data, "cells"),
                            analysis.cell_rows(data["cells"]), 4, console))
    if data["changes"]:
        console.print(_rich("Changes", analysis.columns(data, "changes"),
                            analysis.change_rows(data["changes"]), 4, console))
    if data["claims"]["items"]:
        console.print(_rich("Claims", ["claim", "sentence", "original",
                                       analysis.second_column(data)],
                            repro.claim_rows(data), 1, console))
    console.print("[bold]Summary[/bold]", highlight=False)
    for line in data["lines"]:
        console.print(_escape(f"- {line}"))
    wrong = repro.failures(data)
    if wrong:
        console.print(f"[bold yellow]{WARN} Not reproduced[/bold yellow]",
                      highlight=False)
        for line in wrong:
            console.print(_escape(f"- {line}"))
