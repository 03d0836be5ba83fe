"""A table published elsewhere, read for `perfpages import`: its layout checked, its values kept
as given (never turned into rounds nor pushed through a histogram), and its source.

The layout (docs/guide/commands.md#perfpages-import): a CSV with a header row, or JSON rows with
the same keys. `label` (required), `block` (default `table`) and `round` name a cell; a column
`NAME (UNIT)` is a metric perfpages knows (`throughput (/s)`, `p99 (ms)`), `NAME median (UNIT)`,
`NAME min (UNIT)` and `NAME max (UNIT)` a summary's median with its given range; any other column
is a parameter (`callers`). With a `round` column each row is one round of its cell (a real
range); without one, each row is a cell's summary: one given value per metric.
"""

from __future__ import annotations

import re
from datetime import UTC, date, datetime
from typing import Any, Literal
from urllib.parse import urlsplit

from perfpages.analysis.decision import Cell
from perfpages.analysis.metric import GIVEN_BOUNDS
from perfpages.analysis.tablefile import Table
from perfpages.analysis.tablerow import MAX_ROUNDS
from perfpages.archive.manifest import Source
from perfpages.archive.window import Window
from perfpages.errors import PerfpagesError

_URL_UNSAFE = re.compile(r"[\s<>()\[\]\"'`]")
# A label's pin note when the source states its build (`perfpages import --build`).
BUILD_NOTE = "as its source states it, not built here: "


def check_source(title: str | None, url: str | None, day: str | None,
                 values: Literal["rounds", "summary"] = "rounds",
                 unpublished: str | None = None) -> Source:
    """The source a transcribed run must name: a title, an http(s) URL without credentials (or,
    unpublished, who gave it), and the date it was published or received (not after today)."""
    fix = ("name the source: --title TEXT --url https://… --date YYYY-MM-DD (unpublished: "
           "--unpublished WHO --date RECEIVED)")
    if unpublished is not None and url:
        raise PerfpagesError("a source is published (--url) or not (--unpublished), not both",
                             key="--unpublished", fix="give one of the two")
    if unpublished is not None and (not unpublished.strip() or not unpublished.isprintable()):
        raise PerfpagesError("an unpublished source names who gave it, on one line",
                             key="--unpublished", fix='e.g. --unpublished "J. Doe, by e-mail"')
    for option, value in (("--title", title), ("--url", url or unpublished), ("--date", day)):
        if not value or not value.strip():
            raise PerfpagesError("a transcribed run needs its source", key=option, fix=fix)
    assert title and day
    if unpublished is None:
        assert url
        parts = urlsplit(url.strip())
        if parts.scheme not in ("http", "https") or not parts.hostname or \
                _URL_UNSAFE.search(url):
            raise PerfpagesError(f"not an http(s) address: {url!r}", key="--url",
                                 fix="give the page the table was published on, https://… "
                                     "(not published: --unpublished WHO)")
        if "@" in parts.netloc:  # a user or token in an address would reach the archive and site
            raise PerfpagesError("the address holds a user or password", key="--url",
                                 fix="give the public address, without user:password@")
    try:
        published = date.fromisoformat(day.strip())
    except ValueError:
        raise PerfpagesError(f"not a date: {day!r}", key="--date",
                             fix="give the day the source was published, YYYY-MM-DD") from None
    if len(day.strip()) != 10 or published > datetime.now(UTC).date():
        raise PerfpagesError(f"not a past day as YYYY-MM-DD: {day!r}", key="--date",
                             fix="give the day the source was published, YYYY-MM-DD")
    return Source(title=" ".join(title.split()), url=(url or "").strip(),
                  date=published.isoformat(), values=values,
                  unpublished=" ".join((unpublished or "").split()))


def check_rule(rounds: Any, rule: Any, values: str, where: str = "--rounds") -> tuple[int | None,
                                                                                     str]:
    """A summary's rounds and its source's rule (`--rounds N --rule ranges`): both or neither,
    on a summary only (a table of rounds has its rounds)."""
    if rounds is None and not rule:
        return None, ""
    fix = "give both, as the source states them: --rounds N --rule ranges"
    if values != "summary":
        raise PerfpagesError("a table of rounds has its own rounds and is judged by perfpages' "
                             "rule", key=where, fix="drop --rounds and --rule, or import the "
                             "summary (median, min, max) the source published")
    if rule != "ranges":
        raise PerfpagesError(f"unknown rule {rule!r}" if rule else "rounds without the rule "
                             "the source decided by", key="--rule", fix=fix)
    try:
        n = int(str(rounds)) if rounds is not None and not isinstance(rounds, bool) else 0
    except ValueError:
        n = 0
    if not 1 <= n <= MAX_ROUNDS or (isinstance(rounds, float) and not rounds.is_integer()):
        raise PerfpagesError(f"not a count of rounds: {rounds!r}", key=where, fix=fix)
    return n, "ranges"


def windows(table: Table, source: Source) -> list[Window]:
    """One window per row: its values as given, in `metrics` (throughput in its own field);
    no request counts and no histogram, which a transcription does not have."""
    start = f"{source.date}T00:00:00Z"
    out = []
    for r in table.rows:
        given: dict[str, float | None] = dict(r.metrics)
        throughput = given.pop("throughput", None)
        out.append(Window(block=r.block, label=r.label, round=r.round, params=dict(r.params),
                          start=start, duration_s=0.0, throughput=throughput, metrics=given))
    return out


def given_cells(source: Source | None, cells: dict[Any, Cell]) -> dict[Any, Cell]:
    """A summary's medians with their given min and max (METRIC.min, METRIC.max): each cell
    carries that range, which every range-reading claim and table reads; with the rounds and
    rule its source states (`--rounds N --rule ranges`), a cell of N rounds that the source's
    rule judges, else of its one value (never a verdict). Cells of any other run as they are."""
    if source is None or source.values != "summary":
        return cells
    rounds = source.rounds or 0 if source.rule_text() else 0
    out = dict(cells)
    for key, cell in cells.items():
        *where, metric = key
        low, high = (cells.get((*where, f"{metric}.{b}")) for b in GIVEN_BOUNDS)
        if low is not None and high is not None:
            out[key] = Cell(cell.values, cell.rounds, (low.values[0], high.values[0], rounds))
    return out


def method_text(source: Source, rounds: int, min_rounds: int) -> str:
    """How a report states the method of a transcribed run: its source's, not perfpages'."""
    if source.values == "summary" and source.rule_text():
        return (f"a summary as its source published it, transcribed, not measured here: each "
                f"cell the median of {source.rounds} rounds with its given min–max range; "
                f"changes decided by {source.rule_text()} (a change is clear when the given "
                "ranges do not overlap), not by a test of perfpages'"
                + (f"; the source's method: {source.method.rstrip('.')}" if source.method else ""))
    if source.values == "summary":
        return ("a summary as its source published it, transcribed, not measured here: one "
                "given value per cell (a median, its given min and max shown as METRIC.min "
                "and METRIC.max; percentiles as given), never rounds, so no change is called "
                "clear (too few rounds), whatever the given ranges")
    return (f"{rounds} rounds per cell as its source published them, transcribed, not "
            "measured here (not interleaved by perfpages); a cell is the median of the rounds "
            "with its min–max range; a change is clear only when the ranges do not overlap, "
            f"with at least {min_rounds} rounds a side")
