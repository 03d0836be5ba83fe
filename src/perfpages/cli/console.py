"""The commands behind `invoke bench.*`: print with rich, turn user errors into exit codes."""

from __future__ import annotations

import math
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rich.cells import cell_len
from rich.console import Console
from rich.measure import Measurement
from rich.table import Column
from rich.table import Table as RichTable
from rich.text import Text

from perfpages.analysis import crossrun, report, saturation
from perfpages.analysis.cite import cite
from perfpages.analysis.format import format_percent
from perfpages.archive.files import Size
from perfpages.archive.reader import (
    Run,
    failure,
    open_run,
    read_manifest,
    resolve,
    runs_in,
    status_text,
    verify,
)
from perfpages.archive.seal import LEGACY_NOTE, added_text
from perfpages.cli.names import program_name, whole_number
from perfpages.errors import ArchiveError, Interrupted, PerfpagesError

# A command named in a message ("`invoke bench.run --resume …`"), as the core words it.
_INVOKE = re.compile(r"\binvoke (?=(?:bench|docs|loadgen)\.|init\b)")


def as_called(text: str) -> str:
    """The commands a message names as the user called this one: `perfpages bench.verify` under
    `perfpages`, `invoke bench.verify` under invoke (the core's wording)."""
    return _INVOKE.sub("perfpages ", text) if program_name() == "perfpages" else text


def run_command(action: Callable[[Console], int], console: Console | None = None) -> int:
    """Call a command; a PerfpagesError becomes one line on stderr and exit code 1 (130 when
    interrupted)."""
    console = console or Console(soft_wrap=True)
    try:
        return action(console)
    except PerfpagesError as exc:
        print(as_called(f"error: {exc}"), file=sys.stderr)
        return 130 if isinstance(exc, Interrupted) else 1


def run_suite(opts: Any, console: Console) -> int:
    """`bench run`: replay a suite (or resume a run), then print where it was archived."""
    from perfpages.run import runner
    from perfpages.run.postgres import conninfo

    if opts.dsn:  # checked before anything reads it (the redactor, the servers)
        conninfo(opts.dsn)
    run_dir = runner.run(opts, console)
    status = read_manifest(run_dir).status
    console.print(f"{status}: {run_dir}", highlight=False, markup=False, emoji=False)
    console.print(as_called(f"report: invoke bench.report --run {run_dir.name} --results "
                            f"{run_dir.parent}"),
                  highlight=False, markup=False, emoji=False)
    if status == "failed":  # archived, but nothing to cite: the command fails
        print(as_called(f"error: run {run_dir.name} failed: "
                        f"{failure(open_run(run_dir).windows)}"), file=sys.stderr)
        return 1
    return 0


def list_runs(results_dir: Path, console: Console) -> int:
    runs = runs_in(results_dir)
    if not runs:
        console.print(f"no archived runs in {results_dir}", markup=False, emoji=False)
        return 0
    columns = ["id", "date", "suite", "scope", "status", "labels"]
    rows: list[list[str]] = []
    table = RichTable(*columns, box=None)
    bad = 0
    for path in runs:
        try:
            m = read_manifest(path)
        except ArchiveError as exc:
            rows.append([path.name, "", "", "", "unreadable", str(exc)])
            table.add_row(*[_escape(c) for c in rows[-1][:4]], "[red]unreadable[/red]",
                          _escape(str(exc)))
            bad += 1
            continue
        # A replay says which run it replays, under its id (the id column keeps its width).
        shown = f"{m.id}\nreplay of {m.replay_of}" if m.replay_of else m.id
        rows.append([shown, m.started[:10], m.suite, m.scope, status_text(path, m),
                     ", ".join(m.labels)])
        table.add_row(*[_escape(c) for c in rows[-1]])
    # A width given (a terminal's, COLUMNS, Console(width=…)) is kept; none: the table's own
    if console.is_terminal or getattr(console, "_width", None) is not None:
        fit(table, columns, rows, {0, 5}, console)
        console.print(table)
    else:  # piped (grep, awk, a file): a run a line, whole words, at the table's own width
        width = console.width
        console.width = Measurement.get(console, console.options.update_width(1 << 20),
                                        table).maximum
        try:
            console.print(table)
        finally:
            console.width = width
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


FAIL_ON = ("loss",)


def min_effect_of(text: str | float | None, fail_on: str | None) -> float:
    """--min-effect PCT: the smallest clear loss, in percent, that fails `--fail-on loss`."""
    if text is None:
        return 0.0
    if fail_on != "loss":
        raise PerfpagesError("--min-effect sets how large a clear loss must be to fail",
                             key="--min-effect", fix="add --fail-on loss, or drop --min-effect")
    try:
        value = float(str(text).strip().removesuffix("%"))
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and 0 <= value <= 1000):
        raise PerfpagesError(f"--min-effect {text} is not a percentage from 0 to 1000",
                             key="--min-effect", fix="give a percentage, e.g. --min-effect 5")
    return value


def print_report(results_dir: Path, ref: str | None, compare: str | None, fmt: str,
                 min_rounds: int | str | None, console: Console,
                 allow_mixed: bool = False, fail_on: str | None = None,
                 min_effect: str | float | None = None) -> int:
    """Print the report; with `fail_on="loss"`, exit 1 after it when any change is a clear
    loss of at least `min_effect` percent (its median shift), a line each on stderr (for CI);
    a clear loss smaller than that is a `note:` line and does not fail."""
    if fail_on is not None and fail_on not in FAIL_ON:
        raise PerfpagesError(f"unknown condition {fail_on!r}", key="--fail-on",
                             fix="use --fail-on loss (exit 1 when any change is a clear loss)")
    least = min_effect_of(min_effect, fail_on)
    rounds = whole_number(min_rounds, "--min-rounds", minimum=1, noun="round count")
    if fmt not in ("term", "md", "json"):
        raise PerfpagesError(f"unknown format {fmt!r}", key="--format",
                             fix="use term, md or json")
    pair: tuple[str, str] | None = None
    if compare:
        parts = [p.strip() for p in compare.split(",")]
        if len(parts) != 2 or not all(parts) or parts[0] == parts[1]:  # a,a: compares nothing
            raise PerfpagesError(f"--compare takes two labels, got {compare!r}", key="--compare",
                                 fix="write it as BASE,OTHER, e.g. --compare 0.42.0,0.43.0")
        pair = (parts[0], parts[1])
    sides = [_run_side(results_dir, side) for side in pair] if pair else []
    if any(side is not None for side in sides):
        main = open_run(resolve(results_dir, ref))
        chosen = [side or (main, label) for side, label in zip(sides, pair or (), strict=True)]
        run = chosen[0][0]
        data = report.build(run, None, rounds, cross=crossrun.cross_run(chosen, allow_mixed))
    else:
        run = open_run(resolve(results_dir, ref))
        data = report.build(run, pair, rounds)
    if fmt == "json":
        sys.stdout.write(report.to_json(data))
    elif fmt == "md":
        sys.stdout.write(as_called(report.to_markdown(data)))
    else:
        print_terminal(data, console)
    if fail_on != "loss" or not data["losses"]:
        return 0
    sys.stdout.flush()  # the report first, then why the command fails
    failing = [x for x in data["losses"] if abs(x["percent"]) >= least]
    for lost in data["losses"]:
        small = lost not in failing
        print(f"{'note' if small else 'fail'}: clear loss: {lost['block']} "
              f"{lost['parameters']} {lost['metric']} {lost['base']}→{lost['other']} "
              f"{lost.get('change') or format_percent(lost['percent'])} "
              f"({lost['base_cell']} → {lost['other_cell']})"
              + (f", below --min-effect {least:g} %: not failing" if small else ""),
              file=sys.stderr)
    return 1 if failing else 0


def _rich(title: str, columns: list[str], rows: list[list[str]], ids: int,
          console: Console) -> RichTable:
    """A table whose first `ids` columns identify a row (block, parameters, metric, labels).
    When they cannot keep their words side by side (the changes table in 80 columns), they
    share one column, a line each, rather than fold "call=lookup-plain" into pieces."""
    table = _new(title, columns, rows)
    room, longest, words, heads = _measure(table, columns, rows, console)
    floors = _value_floors(words, heads)[ids:]
    if ids > 1 and sum(longest) > room and sum(words[:ids]) + sum(floors) > room:
        columns = ["\n".join(columns[:ids]), *columns[ids:]]
        rows = [["\n".join(row[:ids]), *row[ids:]] for row in rows]
        table, ids = _new(title, columns, rows, show_lines=True), 1
    fit(table, columns, rows, set(range(ids)), console)
    return table


def _new(title: str, columns: list[str], rows: list[list[str]],
         show_lines: bool = False) -> RichTable:
    table = RichTable(*[Column(header=_escape(c)) for c in columns], title=_escape(title),
                      title_justify="left", title_style="bold", show_lines=show_lines)
    for row in rows:
        table.add_row(*[_highlight(c) for c in row])
    return table


VALUE_FLOOR = 4  # a value column folds its ranges before an identifying one folds a word …
KEY_FLOOR = 8  # … and an identifying column folds only down to this, then both go further


def fit(table: RichTable, columns: list[str], rows: list[list[str]], ids: set[int],
        console: Console) -> None:
    """Column widths for a table wider than the terminal, without losing a character.

    Rich would cut the widest cells with "…": "call=lookup-plain" and "call=lookup-governed"
    would both read "call=lookup-…". Instead every column folds, and width is taken from the
    value columns first: identifying columns (`ids`) and the headers (label names) keep their
    longest word whenever the values can give way, so they wrap between words."""
    for column in table.columns:
        column.overflow = "fold"
    room, longest, words, heads = _measure(table, columns, rows, console)
    if sum(longest) <= room:
        return  # it fits: rich lays it out as always
    if table.box is None and sum(words) > room:
        table.padding, table.pad_edge = (0, 1, 0, 0), False  # one space between columns
        room, longest, words, heads = _measure(table, columns, rows, console)
    widths = list(longest)
    values = [i for i in range(len(columns)) if i not in ids]
    keys = sorted(ids)
    for group, floors in ((values, words), (keys, words),
                          (values, _value_floors(words, heads)),
                          (keys, [min(w, KEY_FLOOR) for w in words]),
                          (values, [1] * len(words)), (keys, [1] * len(words))):
        _shrink(widths, group, floors, sum(widths) - room)
    for column, width in zip(table.columns, widths, strict=True):
        column.width = width


def _value_floors(words: list[int], heads: list[int]) -> list[int]:
    """How far a value column may narrow before it folds its header (a label's name)."""
    return [max(min(w, VALUE_FLOOR), h) for w, h in zip(words, heads, strict=True)]


def _measure(table: RichTable, columns: list[str], rows: list[list[str]],
             console: Console) -> tuple[int, list[int], list[int], list[int]]:
    """The width left for the cells once borders and padding are drawn, and per column the
    longest line, the longest word and the longest word of the header."""
    texts = [[header, *(row[i] for row in rows)] for i, header in enumerate(columns)]
    longest = [max(cell_len(line) for text in col for line in text.splitlines() or [""])
               for col in texts]
    words = [max(cell_len(word) for text in col for word in text.split() or [""])
             for col in texts]
    heads = [max((cell_len(word) for word in header.split()), default=0) for header in columns]
    natural = Measurement.get(console, console.options.update_width(1 << 20), table).maximum
    return console.width - (natural - sum(longest)), longest, words, heads


def _shrink(widths: list[int], group: list[int], floors: list[int], excess: int) -> None:
    """Take `excess` columns of width from `group`, the widest column first, none below its
    floor."""
    while excess > 0:
        able = [i for i in group if widths[i] > floors[i]]
        if not able:
            return
        widest = max(able, key=lambda i: widths[i])
        widths[widest] -= 1
        excess -= 1


def _escape(text: str) -> Text:
    """Text from an archive as rich prints it: as is, never read as markup (`[/bold]` would
    raise, `Sky [quick]` lose a word) or as an emoji code."""
    return Text(text)


def _highlight(text: str) -> Text:
    styles = {"clear gain": "green", "clear loss": "red"}
    shown = Text(text, style=styles.get(text, ""))
    shown.highlight_words([report.WARN], "yellow")
    return shown


def print_terminal(data: dict[str, Any], console: Console) -> None:
    if data.get("runs"):  # labels of several runs: each run, its machine
        console.print(Text(data["title"], "bold"))
        for entry in data["runs"]:
            console.print(_escape(f"- {crossrun.run_line(entry)}"))
    else:
        console.print(Text.assemble((data["title"], "bold"), f"  ({data['run']}, "
                                    f"{data['scope']}, {data['status']})"))
    console.print(_escape(f"Method: {data['method']}."))
    for table in data["tables"]:
        console.print(_rich(table["title"], table["columns"], table["rows"], 2, console))
        for note in table["notes"]:
            console.print(_escape(note))
    changes = data["changes"]
    if changes["rows"]:
        console.print(_rich("Changes", changes["columns"], changes["rows"], 4, console))
        for line in changes["summary"]:
            console.print(_escape(f"- {line}"))
    if data.get("certification"):
        console.print(_escape(f"Certification: {report.CERTIFICATION}."))
        for c in data["certification"]:
            console.print(_escape(f"- {c['line']}"))
    for d in data["drift"]:
        console.print(_escape(report.drift_line(d)))
    knees = data.get("saturation", [])
    if knees:
        console.print("[bold]Saturation[/bold] (doubling the clients: throughput vs p95)")
        for k in knees:
            console.print(_highlight(f"- {saturation.line(k)}"))
    if data.get("diagnostics"):
        console.print("[bold]Diagnostics[/bold] (files under diagnostics/)")
        for text in data["diagnostics"]:
            console.print(_escape(text))
    warned = data.get("warnings", [])
    for note in data["notes"]:
        if note not in warned:
            console.print(_escape(f"note: {note}"))
    if warned:
        console.print(f"[bold yellow]{report.WARN} Warnings[/bold yellow] (bench cite "
                      "includes them)", highlight=False)
        for text in warned:
            console.print(_escape(f"- {text}"))


def verify_runs(results_dir: Path, ref: str | None, console: Console) -> int:
    """Verify one run, or every run when none is named; one line per problem, and the notes of
    an intact run (archived before sealing, a declared block that never ran); each intact run's
    size, and all runs' when there are several."""
    runs = runs_in(results_dir)  # a missing directory first, whether a run is named or not
    runs = [resolve(results_dir, ref)] if ref else runs
    if not runs:
        console.print(f"no archived runs in {results_dir}", markup=False, emoji=False)
        return 0
    failures, total, unsealed = 0, Size(), []
    for path in runs:
        problems = verify(path)
        total += problems.size or Size()
        if LEGACY_NOTE in problems.notes:
            unsealed.append(path.name)
        if problems:
            failures += 1
            for problem in problems:
                print(f"error: {problem}", file=sys.stderr)
        else:
            status = read_manifest(path).status
            size = f" · {problems.size.text()}" if problems.size else ""
            console.print(_escape(f"ok: {path.name} ({status}){size}"))
            for note in problems.notes:
                console.print(_escape(f"note: {path.name}: {note}"))
    if len(runs) > 1:
        console.print(_escape(f"total: {len(runs)} runs · {total.text()}"))
    if not ref:  # every run: how many are still unsealed, and which
        count = f"{len(runs)} run{'s' if len(runs) != 1 else ''} verified"
        count += f", {failures} with problems" if failures else ""
        count += f", {len(unsealed)} unsealed" + (f": {', '.join(unsealed)}" if unsealed else "")
        console.print(_escape(count))
    return 1 if failures else 0


def seal_run(results_dir: Path, ref: str, console: Console) -> int:
    """`bench seal`: seal a run archived before sealing, naming this perfpages' commit."""
    from perfpages.archive.unsealed import seal_later
    from perfpages.run import machine

    path = resolve(results_dir, ref)
    record = seal_later(path, machine.harness())
    console.print(_escape(f"sealed: {path.name} ({added_text(record)})"))
    console.print(_escape(f"check it: perfpages bench.verify --run {path.name} --results "
                          f"{path.parent}"))
    return 0


def print_cite(results_dir: Path, ref: str, site_url: str) -> int:
    """The cite block; `site_url` is "" when none is configured, and the block has no link."""
    run = open_run(resolve(results_dir, ref))
    sys.stdout.write(as_called(cite(run, site_url)))
    return 0
