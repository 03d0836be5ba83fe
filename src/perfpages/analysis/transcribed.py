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

import csv
import io
import json
import math
import os
import re
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

from perfpages.analysis.metric import GIVEN_BOUNDS, info, known
from perfpages.archive.manifest import Source
from perfpages.archive.window import Scalar, Window, params_key
from perfpages.errors import PerfpagesError

MAX_BYTES = 16 << 20  # a published table is a few KB
MAX_ROUNDS = 10_000  # a published table gives a few rounds per cell, never millions
DEFAULT_BLOCK = "table"
RESERVED = ("run", "kind", "parameters", "metric", "value", "window")  # names of the frame
_COLUMN = re.compile(r"^(?P<name>[A-Za-z0-9_.]+?)(?:\s+(?P<stat>median|min|max))?\s*"
                     r"\((?P<unit>[^()]*)\)$")
_INTEGER = re.compile(r"^[+-]?[0-9]+$")
_URL_UNSAFE = re.compile(r"[\s<>()\[\]\"'`]")
# What a unit may be given in, as the factor to the unit perfpages stores.
_UNITS = {"ms": {"ms": 1.0, "us": 1e-3, "µs": 1e-3, "s": 1e3}}


@dataclass(frozen=True)
class Column:
    header: str
    role: Literal["block", "label", "round", "param", "metric"]
    name: str = ""  # a metric as stored ("p99", "throughput.min"), or a parameter's name
    factor: float = 1.0


@dataclass(frozen=True)
class Row:
    line: int | None  # CSV: the file's line; JSON: None (the row's index is in `key`)
    key: str  # "" (CSV) or "rows[3]" (JSON)
    block: str
    label: str
    round: int
    params: dict[str, Scalar]
    metrics: dict[str, float]


@dataclass
class Table:
    values: Literal["rounds", "summary"]
    rows: list[Row]
    suite: str = ""
    title: str = ""
    labels: list[str] = field(default_factory=list)
    blocks: dict[str, tuple[list[str], list[str]]] = field(default_factory=dict)  # metrics, params

    @property
    def rounds(self) -> int:
        return max(r.round for r in self.rows)


def check_source(title: str | None, url: str | None, day: str | None,
                 values: Literal["rounds", "summary"] = "rounds") -> Source:
    """The source a transcribed run must name: a title, an http(s) URL without credentials, and
    the date it was published (not after today)."""
    fix = "name the source: --title TEXT --url https://… --date YYYY-MM-DD"
    for option, value in (("--title", title), ("--url", url), ("--date", day)):
        if not value or not value.strip():
            raise PerfpagesError("a transcribed run needs its source", key=option, fix=fix)
    assert title and url and day
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname or _URL_UNSAFE.search(url):
        raise PerfpagesError(f"not an http(s) address: {url!r}", key="--url",
                             fix="give the page the table was published on, https://…")
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
    return Source(title=" ".join(title.split()), url=url.strip(),
                  date=published.isoformat(), values=values)


def read_table(path: Path) -> Table:
    """The table in a .csv or .json file, checked whole: a bad file raises one error naming
    its line or key and what to do, before anything is written."""
    suffix = path.suffix.lower()
    if suffix not in (".csv", ".json"):
        raise PerfpagesError("not a .csv or .json file", where=path,
                             fix="give the table as CSV or JSON (perfpages guide commands)")
    try:
        raw = _read_regular(path)
        text = raw.decode("utf-8-sig")
    except OSError as exc:
        raise PerfpagesError(f"cannot read it ({exc.strerror or exc})", where=path,
                             fix="check the path") from None
    except UnicodeDecodeError:
        raise PerfpagesError("not UTF-8 text", where=path, fix="save the table as UTF-8") from None
    if len(raw) > MAX_BYTES:
        raise PerfpagesError(f"larger than {MAX_BYTES >> 20} MiB", where=path,
                             fix="a published table is small: check the file")
    meta: dict[str, Any] = {}
    records = _csv(text, path) if suffix == ".csv" else _json(text, path, meta)
    table = _table(path, records)
    table.suite = str(meta.get("suite") or "")
    table.title = " ".join(str(meta.get("title") or "").split())  # one line, as --title
    return table


def _read_regular(path: Path) -> bytes:
    """At most MAX_BYTES + 1 bytes of a regular file: a FIFO, a device or a directory is
    refused before anything waits on it (opened without blocking, then checked)."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise PerfpagesError("not a regular file", where=path,
                                 fix="give the table as a .csv or .json file")
        os.set_blocking(fd, True)
        with os.fdopen(fd, "rb", closefd=False) as fh:
            return fh.read(MAX_BYTES + 1)
    finally:
        os.close(fd)


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object whose keys are each given once (json.loads keeps the last silently)."""
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"the key {key!r} is given twice in one object")
        out[key] = value
    return out


def _int(text: str) -> int:
    if len(text.lstrip("-")) > 16:  # past 2**53: no count, rate or parameter is that long
        raise ValueError(f"the number {text[:20]}… has {len(text.lstrip('-'))} digits")
    return int(text)


def _csv(text: str, path: Path) -> Iterator[tuple[int | None, str, Any]]:
    reader = csv.reader(io.StringIO(text, newline=""))
    header: list[str] | None = None
    try:
        for cells in reader:
            if not any(c.strip() for c in cells):
                continue
            if header is None:
                header = [c.strip() for c in cells]
                yield reader.line_num, "", header  # the columns, repeats and all
                continue
            yield reader.line_num, "", dict(zip(header, cells, strict=False)) | (
                {"": "\0"} if len(cells) > len(header) else {})
    except csv.Error as exc:  # a NUL byte, an unclosed quote at the end, a huge field
        raise PerfpagesError(f"not readable as CSV ({exc})", where=path, line=reader.line_num,
                             fix="save the table as plain comma-separated text") from None


def _json(text: str, path: Path, meta: dict[str, Any]) -> list[tuple[int | None, str, Any]]:
    def constant(name: str) -> None:
        raise ValueError(f"{name} is not a number")

    try:
        data = json.loads(text, parse_constant=constant, parse_int=_int,
                          object_pairs_hook=_unique_keys)
    except (ValueError, RecursionError) as exc:
        raise PerfpagesError(f"not valid JSON ({exc})", where=path,
                             fix="give a list of rows, or {\"rows\": [...]}") from None
    if isinstance(data, dict):
        meta.update({k: data[k] for k in ("suite", "title") if isinstance(data.get(k), str)})
        data = data.get("rows")
    if not isinstance(data, list):
        raise PerfpagesError("no list of rows", where=path, key="rows",
                             fix="give a list of rows, or {\"rows\": [...]}")
    if not data:
        return []
    first = data[0]
    if not isinstance(first, dict):
        raise PerfpagesError("a row is not an object", where=path, key="rows[0]",
                             fix="write each row as {\"label\": …, \"p99 (ms)\": …}")
    out: list[tuple[int | None, str, Any]] = [(None, "rows", list(first))]
    out += [(None, f"rows[{i}]", row) for i, row in enumerate(data)]
    return out


def _fail(path: Path, line: int | None, key: str | None, what: str,
          fix: str) -> PerfpagesError:
    return PerfpagesError(what, where=path, line=line, key=key or None, fix=fix)


def parse_column(header: str, path: Path, line: int | None, key: str) -> Column:
    """What a header names: a cell's coordinate, a metric with its unit, or a parameter."""
    where = f"{key}.{header}" if key else header
    if header in ("block", "label", "round"):
        return Column(header, header)  # type: ignore[arg-type]
    if not header:
        raise _fail(path, line, key or "header", "a column without a name",
                    "name every column, or remove the empty one")
    match = _COLUMN.match(header)
    name = match.group("name") if match else header
    if match is None and not known(name):
        if name in RESERVED:
            raise _fail(path, line, where, f"{name!r} is reserved and cannot be a parameter",
                        "rename the column")
        return Column(header, "param", name)
    if not known(name):
        raise _fail(path, line, where, f"unknown metric {name!r}",
                    "use a metric perfpages knows (throughput, tps, p50, p95, p99, p99.9, "
                    "mean, min, max, errors …, listed by perfpages guide commands), or drop "
                    "the unit to make it a parameter")
    expected = info(name).unit
    unit = match.group("unit").strip() if match else ""
    factors = _UNITS.get(expected, {expected: 1.0})
    if unit not in factors:
        what = (f"{name} without its unit" if not unit else
                f"{name} in {unit!r}, not in " + " or ".join(factors) if expected else
                f"{name} has no unit, not {unit!r}")
        raise _fail(path, line, where, what, f"write the column as `{name} ({expected})`"
                    if expected else f"write the column as `{name}`")
    stat = match.group("stat") if match else None
    stored = f"{name}.{stat}" if stat in GIVEN_BOUNDS else name
    return Column(header, "metric", stored, factors[unit])


def _number(value: Any, path: Path, line: int | None, where: str) -> float:
    fix = "give a plain number (1234.5), as the source printed it"
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise _fail(path, line, where, f"not a number: {value!r}", fix)
    try:
        number = float(value.strip()) if isinstance(value, str) else float(value)
    except (ValueError, OverflowError):
        raise _fail(path, line, where, f"not a number: {value!r}", fix) from None
    if not math.isfinite(number) or abs(number) >= 2**53:
        raise _fail(path, line, where, f"not a finite number: {value!r}", fix)
    if number < 0:
        raise _fail(path, line, where, f"a negative value: {value!r}",
                    "rates, counts and latencies are never negative: check the transcription")
    return number


def _param(value: Any, path: Path, line: int | None, where: str) -> Scalar:
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 2**53:
        raise _fail(path, line, where, f"a number too large to keep exactly: {str(value)[:20]}…",
                    "give the parameter as the source printed it, or as text in quotes")
    if isinstance(value, bool | int | float) and not (isinstance(value, float)
                                                       and not math.isfinite(value)):
        return value
    if not isinstance(value, str) or not value.strip():
        raise _fail(path, line, where, "an empty parameter" if value in ("", None) else
                    f"not a parameter value: {value!r}", "give every row its parameter value")
    text = value.strip()
    if not text.isprintable():
        raise _fail(path, line, where, f"a line break or control character in {text!r}",
                    "give the parameter value on one line")
    if _INTEGER.match(text):
        digits = len(text.lstrip("+-"))  # int() of thousands of digits is refused, slowly
        return int(text) if digits <= 16 and abs(int(text)) < 2**53 else text
    try:
        number = float(text)
    except ValueError:
        return text
    return number if math.isfinite(number) else text


def _table(path: Path, records: Iterator[tuple[int | None, str, Any]] | list[Any]) -> Table:
    items = iter(records)
    head = next(items, None)
    if head is None:
        raise PerfpagesError("empty: no header and no rows", where=path,
                             fix="give a header row and one row per cell or round")
    line, key, names = head
    columns = [parse_column(str(h).strip(), path, line, key) for h in names]
    if not any(c.role == "label" for c in columns):
        raise _fail(path, line, key, "missing column 'label'",
                    "add a `label` column naming the build, release or setup of each row")
    metrics = [c for c in columns if c.role == "metric"]
    if not metrics:
        raise _fail(path, line, key, "no metric column",
                    "add at least one metric with its unit, e.g. `throughput (/s)`")
    seen: dict[str, str] = {}
    for c in columns:  # "p99 (ms)" and "p99 (us)", or "label" twice, name one thing
        name = c.name or c.role
        if name in seen:
            raise _fail(path, line, key, f"column {c.header!r} repeats {seen[name]!r}",
                        "keep one column per metric and parameter")
        seen[name] = c.header
    values: Literal["rounds", "summary"] = (
        "rounds" if any(c.role == "round" for c in columns) else "summary")
    _check_stats(path, line, key, metrics, values)
    rows = [_row(path, row_line, row_key, raw, columns)
            for row_line, row_key, raw in items]
    if not rows:
        raise PerfpagesError("no rows under the header", where=path,
                             fix="give one row per cell (a summary) or per round")
    table = Table(values, rows)
    _check_cells(path, table)
    params = [c.name for c in columns if c.role == "param"]
    for r in rows:
        table.labels += [r.label] if r.label not in table.labels else []
        table.blocks.setdefault(r.block, ([c.name for c in metrics], params))
    return table


def _check_stats(path: Path, line: int | None, key: str, metrics: list[Column],
                 values: str) -> None:
    names = {c.name for c in metrics}
    for c in metrics:
        base, _, bound = c.name.rpartition(".")
        stat = _COLUMN.match(c.header)
        if values == "rounds" and stat and stat.group("stat"):
            raise _fail(path, line, key, f"{c.header!r}: a table of rounds takes each round's "
                        "value, not a summary", "drop the `round` column to import a summary "
                        "(median, min, max), or give each round's value")
        if bound in GIVEN_BOUNDS and known(base) and base not in names:
            raise _fail(path, line, key, f"{c.header!r} without the median it bounds",
                        f"add the column `{base} median (…)` beside it")


def _row(path: Path, line: int | None, key: str, raw: Any, columns: list[Column]) -> Row:
    if not isinstance(raw, dict):
        raise _fail(path, line, key, "a row is not an object",
                    "write each row as {\"label\": …, \"p99 (ms)\": …}")
    if "" in raw and raw[""] == "\0":
        raise _fail(path, line, key, "more values than the header has columns",
                    "check the row's separators (quote values holding a comma)")
    extra = [k for k in raw if k not in {c.header for c in columns}]
    if extra:
        raise _fail(path, line, key, f"a key the first row does not have: {extra[0]!r}",
                    "give every row the same keys")
    coords: dict[str, Any] = {"block": DEFAULT_BLOCK, "round": 1}
    params: dict[str, Scalar] = {}
    metrics: dict[str, float] = {}
    for c in columns:
        where = f"{key}.{c.header}" if key else c.header
        if c.header not in raw or raw[c.header] is None:
            raise _fail(path, line, where, f"missing value of {c.header!r}",
                        "give every row a value in every column")
        value = raw[c.header]
        if c.role == "metric":
            metrics[c.name] = _number(value, path, line, where) * c.factor
        elif c.role == "param":
            params[c.name] = _param(value, path, line, where)
        elif c.role == "round":
            number = _number(value, path, line, where)
            if number != int(number) or number < 1:
                raise _fail(path, line, where, f"not a round number: {value!r}",
                            "number each cell's rounds 1, 2, 3 …")
            if number > MAX_ROUNDS:
                raise _fail(path, line, where, f"round {value!r} is past {MAX_ROUNDS}",
                            "number each cell's rounds 1, 2, 3 … as its source did")
            coords["round"] = int(number)
        else:
            if not isinstance(value, str | int | float) or isinstance(value, bool):
                raise _fail(path, line, where, f"not a {c.role} name: {value!r}",
                            f"give every row its {c.role} as text")
            text = str(value).strip()
            if not text:
                raise _fail(path, line, where, f"an empty {c.role}",
                            f"give every row its {c.role}")
            if not text.isprintable():
                raise _fail(path, line, where, f"a line break or control character in the "
                            f"{c.role} {text!r}", f"give the {c.role} on one line")
            coords[c.role] = text
    for name, value in metrics.items():
        base, _, bound = name.rpartition(".")
        median = metrics.get(base)
        if bound in GIVEN_BOUNDS and median is not None and (
                value > median if bound == "min" else value < median):
            raise _fail(path, line, key,
                        f"{base}: the given {bound} {value:g} is on the wrong side of its "
                        f"median {median:g}", "check the transcription: min ≤ median ≤ max")
    return Row(line, key, coords["block"], coords["label"], coords["round"], params, metrics)


def _check_cells(path: Path, table: Table) -> None:
    """No duplicate row; with rounds, every cell has rounds 1 to N, the same N for all."""
    first: dict[tuple[str, str, str, int], Row] = {}
    rounds: dict[tuple[str, str, str], set[int]] = {}
    spelled: dict[tuple[str, str, str], tuple[str, Row]] = {}
    for r in table.rows:
        # 8 and 8.0 are one value: one cell, so a second row of it is a duplicate
        cell = (r.block, r.label, params_key(_same(r.params)))
        written = params_key(r.params)
        if cell in spelled and spelled[cell][0] != written and (*cell, r.round) not in first:
            before = spelled[cell][1]
            raise _fail(path, r.line, r.key, f"{written} is written {spelled[cell][0]} on "
                        f"{f'line {before.line}' if before.line else before.key}",
                        "write each parameter value one way in every row")
        spelled.setdefault(cell, (written, r))
        if (*cell, r.round) in first:
            before = first[(*cell, r.round)]
            shown = f"line {before.line}" if before.line else before.key
            cell_text = ", ".join([f"label {r.label}", *([pkey] if (pkey := params_key(
                r.params)) else []), *([f"round {r.round}"] if table.values == "rounds" else [])])
            raise _fail(path, r.line, r.key, f"duplicate row: {cell_text} is already on {shown}",
                        "keep one row per cell (and round)")
        first[(*cell, r.round)] = r
        rounds.setdefault(cell, set()).add(r.round)
    n = table.rounds
    for (block, label, pkey), got in rounds.items():
        if len(got) != n:  # rounds are 1 … n, each once: n of them is all of them
            missing = next(i for i in range(1, n + 1) if i not in got)
            raise _fail(path, None, "round", f"{label} ({block}{', ' + pkey if pkey else ''}) "
                        f"lacks round {missing} of {n}",
                        "give every cell the same rounds, 1 to N")


def _same(params: dict[str, Scalar]) -> dict[str, Scalar]:
    """Parameters with a whole float as its int (8.0 as 8): how a cell is told from another."""
    return {k: int(v) if isinstance(v, float) and v.is_integer() else v
            for k, v in params.items()}


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


def method_text(source: Source, rounds: int, min_rounds: int) -> str:
    """How a report states the method of a transcribed run: its source's, not perfpages'."""
    if source.values == "summary":
        return ("a summary as its source published it, transcribed, not measured here: one "
                "given value per cell (a median, its given min and max shown as METRIC.min "
                "and METRIC.max; percentiles as given), never rounds, so no change is called "
                "clear (too few rounds), whatever the given ranges")
    return (f"{rounds} rounds per cell as its source published them, transcribed, not "
            "measured here (not interleaved by perfpages); a cell is the median of the rounds "
            "with its min–max range; a change is clear only when the ranges do not overlap, "
            f"with at least {min_rounds} rounds a side")
