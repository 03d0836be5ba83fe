"""One row of a published table (`analysis.tablefile` reads the file): its columns named by their
headers, its values checked and converted, each problem one line naming the file, the line or key
and what to do."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from perfpages.analysis.metric import GIVEN_BOUNDS, info, known
from perfpages.archive.window import Scalar
from perfpages.errors import PerfpagesError

MAX_ROUNDS = 10_000  # a published table gives a few rounds per cell, never millions
DEFAULT_BLOCK = "table"
RESERVED = ("run", "kind", "parameters", "metric", "value", "window")  # names of the frame
_COLUMN = re.compile(r"^(?P<name>[A-Za-z0-9_.]+?)(?:\s+(?P<stat>median|min|max))?\s*"
                     r"\((?P<unit>[^()]*)\)$")
_NOTE = re.compile(r"^([A-Za-z0-9_.]+) note$")  # `p99.99 note`: what the source adds to a cell
_THOUSANDS = re.compile(r"^[0-9]{1,3}(,[0-9]{3})+(\.[0-9]+)?$")  # 1,012 as the source printed it
_INTEGER = re.compile(r"^[+-]?[0-9]+$")
# What a unit may be given in, as the factor to the unit perfpages stores.
_UNITS = {"ms": {"ms": 1.0, "us": 1e-3, "µs": 1e-3, "s": 1e3}}


@dataclass(frozen=True)
class Column:
    header: str
    role: Literal["block", "label", "round", "param", "metric", "note"]
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
    notes: dict[str, str] = field(default_factory=dict)


def fail(path: Path, line: int | None, key: str | None, what: str,
          fix: str) -> PerfpagesError:
    return PerfpagesError(what, where=path, line=line, key=key or None, fix=fix)


def parse_column(header: str, path: Path, line: int | None, key: str) -> Column:
    """What a header names: a cell's coordinate, a metric with its unit, or a parameter."""
    where = f"{key}.{header}" if key else header
    if header in ("block", "label", "round"):
        return Column(header, header)  # type: ignore[arg-type]
    if not header:
        raise fail(path, line, key or "header", "a column without a name",
                    "name every column, or remove the empty one")
    note = _NOTE.match(header)
    if note and known(note.group(1)):
        return Column(header, "note", note.group(1))
    match = _COLUMN.match(header)
    name = match.group("name") if match else header
    if match is None and not known(name):
        if name in RESERVED:
            raise fail(path, line, where, f"{name!r} is reserved and cannot be a parameter",
                        "rename the column")
        return Column(header, "param", name)
    if not known(name):
        raise fail(path, line, where, f"unknown metric {name!r}",
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
        raise fail(path, line, where, what, f"write the column as `{name} ({expected})`"
                    if expected else f"write the column as `{name}`")
    stat = match.group("stat") if match else None
    stored = f"{name}.{stat}" if stat in GIVEN_BOUNDS else name
    return Column(header, "metric", stored, factors[unit])


def _number(value: Any, path: Path, line: int | None, where: str) -> float:
    fix = "give a plain number (1234.5), as the source printed it"
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise fail(path, line, where, f"not a number: {value!r}", fix)
    if isinstance(value, str) and _THOUSANDS.match(value.strip()):
        value = value.strip().replace(",", "")
    try:
        number = float(value.strip()) if isinstance(value, str) else float(value)
    except (ValueError, OverflowError):
        raise fail(path, line, where, f"not a number: {value!r}", fix) from None
    if not math.isfinite(number) or abs(number) >= 2**53:
        raise fail(path, line, where, f"not a finite number: {value!r}", fix)
    if number < 0:
        raise fail(path, line, where, f"a negative value: {value!r}",
                    "rates, counts and latencies are never negative: check the transcription")
    return number


def _param(value: Any, path: Path, line: int | None, where: str) -> Scalar:
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 2**53:
        raise fail(path, line, where, f"a number too large to keep exactly: {str(value)[:20]}…",
                    "give the parameter as the source printed it, or as text in quotes")
    if isinstance(value, bool | int | float) and not (isinstance(value, float)
                                                       and not math.isfinite(value)):
        return value
    if not isinstance(value, str) or not value.strip():
        raise fail(path, line, where, "an empty parameter" if value in ("", None) else
                    f"not a parameter value: {value!r}", "give every row its parameter value")
    text = value.strip()
    if not text.isprintable():
        raise fail(path, line, where, f"a line break or control character in {text!r}",
                    "give the parameter value on one line")
    if _INTEGER.match(text):
        digits = len(text.lstrip("+-"))  # int() of thousands of digits is refused, slowly
        return int(text) if digits <= 16 and abs(int(text)) < 2**53 else text
    try:
        number = float(text)
    except ValueError:
        return text
    return number if math.isfinite(number) else text


def check_stats(path: Path, line: int | None, key: str, metrics: list[Column],
                 values: str) -> None:
    names = {c.name for c in metrics}
    for c in metrics:
        base, _, bound = c.name.rpartition(".")
        stat = _COLUMN.match(c.header)
        if values == "rounds" and stat and stat.group("stat"):
            raise fail(path, line, key, f"{c.header!r}: a table of rounds takes each round's "
                        "value, not a summary", "drop the `round` column to import a summary "
                        "(median, min, max), or give each round's value")
        if bound in GIVEN_BOUNDS and known(base) and base not in names:
            raise fail(path, line, key, f"{c.header!r} without the median it bounds",
                        f"add the column `{base} median (…)` beside it")


def read_row(path: Path, line: int | None, key: str, raw: Any, columns: list[Column],
         values: str = "rounds") -> Row:
    if not isinstance(raw, dict):
        raise fail(path, line, key, "a row is not an object",
                    "write each row as {\"label\": …, \"p99 (ms)\": …}")
    if "" in raw and raw[""] == "\0":
        raise fail(path, line, key, "more values than the header has columns",
                    "check the row's separators (quote values holding a comma)")
    extra = [k for k in raw if k not in {c.header for c in columns}]
    if extra:
        raise fail(path, line, key, f"a key the first row does not have: {extra[0]!r}",
                    "give every row the same keys")
    coords: dict[str, Any] = {"block": DEFAULT_BLOCK, "round": 1}
    params: dict[str, Scalar] = {}
    metrics: dict[str, float] = {}
    notes: dict[str, str] = {}
    for c in columns:
        where = f"{key}.{c.header}" if key else c.header
        empty = c.header in raw and (raw[c.header] is None or (  # a key left out is a slip
            isinstance(raw[c.header], str) and not raw[c.header].strip()))
        if empty and (c.role == "note" or (c.role == "metric" and values == "summary")):
            continue  # a summary's row gives the metrics the source printed in it
        if c.header not in raw or raw[c.header] is None:
            raise fail(path, line, where, f"missing value of {c.header!r}",
                        "give every row a value in every column")
        value = raw[c.header]
        if c.role == "note":
            text = " ".join(str(value).split())
            if not isinstance(value, str) or not text.isprintable():
                raise fail(path, line, where, f"not a note: {value!r}",
                            "give the note as text on one line, as the source prints it")
            notes[c.name] = text
        elif c.role == "metric":
            metrics[c.name] = _number(value, path, line, where) * c.factor
        elif c.role == "param":
            params[c.name] = _param(value, path, line, where)
        elif c.role == "round":
            number = _number(value, path, line, where)
            if number != int(number) or number < 1:
                raise fail(path, line, where, f"not a round number: {value!r}",
                            "number each cell's rounds 1, 2, 3 …")
            if number > MAX_ROUNDS:
                raise fail(path, line, where, f"round {value!r} is past {MAX_ROUNDS}",
                            "number each cell's rounds 1, 2, 3 … as its source did")
            coords["round"] = int(number)
        else:
            if not isinstance(value, str | int | float) or isinstance(value, bool):
                raise fail(path, line, where, f"not a {c.role} name: {value!r}",
                            f"give every row its {c.role} as text")
            text = str(value).strip()
            if not text:
                raise fail(path, line, where, f"an empty {c.role}",
                            f"give every row its {c.role}")
            if not text.isprintable():
                raise fail(path, line, where, f"a line break or control character in the "
                            f"{c.role} {text!r}", f"give the {c.role} on one line")
            coords[c.role] = text
    if not metrics:
        raise fail(path, line, key, "a row without any metric value",
                    "give each row at least one figure, or drop the row")
    for name in notes:
        if name not in metrics:
            raise fail(path, line, key, f"a note on {name}, which the row does not give",
                        f"give the row its {name}, or drop the note")
    for name, value in metrics.items():
        base, _, bound = name.rpartition(".")
        if bound in GIVEN_BOUNDS and known(base) and base not in metrics:
            raise fail(path, line, key, f"the given {bound} of {base} without its median",
                        f"give the row its {base} median, or drop the {bound}")
        median = metrics.get(base)
        if bound in GIVEN_BOUNDS and median is not None and (
                value > median if bound == "min" else value < median):
            raise fail(path, line, key,
                        f"{base}: the given {bound} {value:g} is on the wrong side of its "
                        f"median {median:g}", "check the transcription: min ≤ median ≤ max")
    return Row(line, key, coords["block"], coords["label"], coords["round"], params, metrics,
               notes)
