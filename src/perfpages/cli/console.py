"""The commands behind `invoke bench.*`: print with rich, turn user errors into exit codes."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml
from rich.console import Console
from rich.table import Table as RichTable

from perfpages.analysis import report, saturation
from perfpages.analysis.cite import cite
from perfpages.archive.reader import Run, find_runs, open_run, read_manifest, resolve, verify
from perfpages.errors import ArchiveError, Interrupted, PerfpagesError

DEFAULT_SITE_URL = "https://perfpages.example.org/"


def run_command(action: Callable[[Console], int], console: Console | None = None) -> int:
    """Call a command; a PerfpagesError becomes one line on stderr and exit code 1 (130 when
    interrupted)."""
    console = console or Console(soft_wrap=True)
    try:
        return action(console)
    except PerfpagesError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 130 if isinstance(exc, Interrupted) else 1


def run_suite(opts: Any, console: Console) -> int:
    """`bench run`: replay a suite (or resume a run), then print where it was archived."""
    from perfpages.run import runner

    run_dir = runner.run(opts, console)
    status = read_manifest(run_dir).status
    console.print(f"{status}: {run_dir}", highlight=False)
    console.print(f"report: invoke bench.report --run {run_dir.name} --results {run_dir.parent}",
                  highlight=False)
    return 0


def list_runs(results_dir: Path, console: Console) -> int:
    runs = find_runs(results_dir)
    if not runs:
        console.print(f"no archived runs in {results_dir}")
        return 0
    table = RichTable(box=None)
    for name in ("id", "date", "suite", "scope", "status"):
        table.add_column(name, no_wrap=True)
    table.add_column("labels")
    bad = 0
    for path in runs:
        try:
            m = read_manifest(path)
        except ArchiveError as exc:
            table.add_row(path.name, "", "", "", "[red]unreadable[/red]", str(exc))
            bad += 1
            continue
        table.add_row(m.id, m.started[:10], m.suite, m.scope, m.status, ", ".join(m.labels))
    console.print(table)
    return 1 if bad else 0


def _run_side(results_dir: Path, side: str) -> tuple[Run, str] | None:
    """`RUN:LABEL` names a label of another run; a plain label (or no such run) returns None."""
    if ":" not in side:
        return None
    ref, label = side.rsplit(":", 1)
    try:
        path = resolve(results_dir, ref)
    except ArchiveError:
        return None
    return open_run(path), label


def print_report(results_dir: Path, ref: str | None, compare: str | None, fmt: str,
                 min_rounds: int | str | None, console: Console,
                 allow_mixed: bool = False) -> int:
    rounds = None
    if min_rounds is not None:
        try:
            rounds = int(min_rounds)
            if rounds < 1:
                raise ValueError
        except ValueError:
            raise PerfpagesError(f"not a round count: {min_rounds!r}", key="--min-rounds",
                                 fix="give a whole number of at least 1") from None
    if fmt not in ("term", "md", "json"):
        raise PerfpagesError(f"unknown format {fmt!r}", key="--format",
                             fix="use term, md or json")
    pair: tuple[str, str] | None = None
    if compare:
        parts = [p.strip() for p in compare.split(",")]
        if len(parts) != 2 or not all(parts):
            raise PerfpagesError(f"--compare takes two labels, got {compare!r}", key="--compare",
                                 fix="write it as BASE,OTHER, e.g. --compare 0.42.0,0.43.0")
        pair = (parts[0], parts[1])
    sides = [_run_side(results_dir, side) for side in pair] if pair else []
    if any(side is not None for side in sides):
        main = open_run(resolve(results_dir, ref))
        chosen = [side or (main, label) for side, label in zip(sides, pair or (), strict=True)]
        run = chosen[0][0]
        data = report.build(run, None, rounds, cross=report.cross_run(chosen, allow_mixed))
    else:
        run = open_run(resolve(results_dir, ref))
        data = report.build(run, pair, rounds)
    if fmt == "json":
        sys.stdout.write(report.to_json(data))
    elif fmt == "md":
        sys.stdout.write(report.to_markdown(data))
    else:
        print_terminal(data, console)
    return 0


def _rich(title: str, columns: list[str], rows: list[list[str]]) -> RichTable:
    table = RichTable(*columns, title=title, title_justify="left", title_style="bold")
    for row in rows:
        table.add_row(*[_highlight(c) for c in row])
    return table


def _highlight(text: str) -> str:
    text = text.replace("[", "\\[")
    if text == "clear gain":
        return "[green]clear gain[/green]"
    if text == "clear loss":
        return "[red]clear loss[/red]"
    return text.replace(report.WARN, f"[yellow]{report.WARN}[/yellow]")


def print_terminal(data: dict[str, Any], console: Console) -> None:
    console.print(f"[bold]{data['title']}[/bold]  ({data['run']}, {data['scope']}, "
                  f"{data['status']})", highlight=False)
    console.print(f"Method: {data['method']}.", highlight=False)
    for table in data["tables"]:
        console.print(_rich(table["title"], table["columns"], table["rows"]))
        for note in table["notes"]:
            console.print(note, highlight=False)
    changes = data["changes"]
    if changes["rows"]:
        console.print(_rich("Changes", changes["columns"], changes["rows"]))
        for line in changes["summary"]:
            console.print(f"- {line}", highlight=False)
    for d in data["drift"]:
        console.print(report.drift_line(d), highlight=False)
    knees = data.get("saturation", [])
    if knees:
        console.print("[bold]Saturation[/bold] (doubling the clients: throughput vs p95)")
        for k in knees:
            console.print(_highlight(f"- {saturation.line(k)}"), highlight=False)
    if data.get("diagnostics"):
        console.print("[bold]Diagnostics[/bold] (files under diagnostics/)")
        for text in data["diagnostics"]:
            console.print(text, highlight=False, markup=False)
    for note in data["notes"]:
        console.print(f"note: {note}", highlight=False)


def verify_runs(results_dir: Path, ref: str | None, console: Console) -> int:
    """Verify one run, or every run when none is named; one line per problem, and the notes of
    an intact run (archived before sealing, a declared block that never ran)."""
    if not Path(results_dir).is_dir():
        raise ArchiveError("no such results directory", where=results_dir,
                           fix="pass the directory that holds the runs with --results")
    runs = [resolve(results_dir, ref)] if ref else find_runs(results_dir)
    if not runs:
        console.print(f"no archived runs in {results_dir}")
        return 0
    failures = 0
    for path in runs:
        problems = verify(path)
        if problems:
            failures += 1
            for problem in problems:
                print(f"error: {problem}", file=sys.stderr)
        else:
            status = read_manifest(path).status
            console.print(f"ok: {path.name} ({status})", highlight=False, markup=False)
            for note in problems.notes:
                console.print(f"note: {path.name}: {note}", highlight=False, markup=False)
    return 1 if failures else 0


def site_url(mkdocs_yml: Path) -> str:
    """The published site's address, from mkdocs.yml (its site_url key)."""
    try:
        config = yaml.load(mkdocs_yml.read_text(), Loader=_IgnoreTags) or {}
    except (OSError, yaml.YAMLError):
        return DEFAULT_SITE_URL
    url = config.get("site_url") if isinstance(config, dict) else None
    return str(url) if url else DEFAULT_SITE_URL


class _IgnoreTags(yaml.SafeLoader):
    """mkdocs.yml may use !ENV and !!python tags; reading site_url needs none of them."""


_IgnoreTags.add_multi_constructor("", lambda loader, suffix, node: None)


def print_cite(results_dir: Path, ref: str, mkdocs_yml: Path) -> int:
    run = open_run(resolve(results_dir, ref))
    sys.stdout.write(cite(run, site_url(mkdocs_yml)))
    return 0
