"""A published table's file read for `perfpages import` (`analysis.transcribed` archives it): a
CSV with a header row, or JSON rows with the same keys; its layout checked cell by cell, each
problem one line naming the file, the line or key and what to do (docs/guide/commands.md)."""

from __future__ import annotations

import csv
import io
import json
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from perfpages.analysis.tablerow import Row, check_stats, fail, parse_column, read_row
from perfpages.archive.window import Scalar, params_key
from perfpages.errors import PerfpagesError

MAX_BYTES = 16 << 20  # a published table is a few KB
# A JSON file's keys beside `rows`: the command line's options (an option given wins).
META_KEYS = ("suite", "title", "run_title", "url", "unpublished", "date", "rounds", "rule",
             "method", "labels")
@dataclass
class Table:
    values: Literal["rounds", "summary"]
    rows: list[Row]
    suite: str = ""
    title: str = ""
    labels: list[str] = field(default_factory=list)
    blocks: dict[str, tuple[list[str], list[str]]] = field(default_factory=dict)  # metrics, params
    meta: dict[str, Any] = field(default_factory=dict)  # a JSON file's source keys, as given
    notes: dict[str, str] = field(default_factory=dict)  # a cell's note, as printed

    @property
    def rounds(self) -> int:
        return max(r.round for r in self.rows)


def read_table(path: Path) -> Table:
    """The table in a .csv or .json file, checked whole: a bad file raises one error naming
    its line or key and what to do, before anything is written."""
    suffix = path.suffix.lower()
    if suffix not in (".csv", ".json"):
        raise PerfpagesError("not a .csv or .json file", where=path,
                             fix="give the table as CSV or JSON (perfpages guide commands)")
    try:
        raw = read_regular(path)
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
    table.title = " ".join(str(meta.get("run_title") or "").split())  # one line, as --title
    table.meta = meta
    return table


def read_regular(path: Path) -> bytes:
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
        unknown = [k for k in data if k not in ("rows", *META_KEYS)]
        if unknown:
            raise PerfpagesError(f"unknown key {unknown[0]!r}", where=path, key=unknown[0],
                                 fix="use rows and the source's keys: " + ", ".join(META_KEYS))
        meta.update({k: data[k] for k in META_KEYS if k in data})
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


def _table(path: Path, records: Iterator[tuple[int | None, str, Any]] | list[Any]) -> Table:
    items = iter(records)
    head = next(items, None)
    if head is None:
        raise PerfpagesError("empty: no header and no rows", where=path,
                             fix="give a header row and one row per cell or round")
    line, key, names = head
    columns = [parse_column(str(h).strip(), path, line, key) for h in names]
    if not any(c.role == "label" for c in columns):
        raise fail(path, line, key, "missing column 'label'",
                    "add a `label` column naming the build, release or setup of each row")
    metrics = [c for c in columns if c.role == "metric"]
    if not metrics:
        raise fail(path, line, key, "no metric column",
                    "add at least one metric with its unit, e.g. `throughput (/s)`")
    seen: dict[str, str] = {}
    for c in columns:  # "p99 (ms)" and "p99 (us)", or "label" twice, name one thing
        name = f"{c.name} note" if c.role == "note" else c.name or c.role
        if name in seen:
            raise fail(path, line, key, f"column {c.header!r} repeats {seen[name]!r}",
                        "keep one column per metric and parameter")
        seen[name] = c.header
    values: Literal["rounds", "summary"] = (
        "rounds" if any(c.role == "round" for c in columns) else "summary")
    check_stats(path, line, key, metrics, values)
    for c in columns:
        if c.role == "note" and c.name not in {m.name for m in metrics}:
            raise fail(path, line, key, f"{c.header!r} without the metric it notes",
                        f"add the column `{c.name} (…)` beside it, or drop the note")
    rows = [read_row(path, row_line, row_key, raw, columns, values)
            for row_line, row_key, raw in items]
    if not rows:
        raise PerfpagesError("no rows under the header", where=path,
                             fix="give one row per cell (a summary) or per round")
    table = Table(values, rows)
    _check_cells(path, table)
    params = [c.name for c in columns if c.role == "param"]
    for r in rows:
        table.labels += [r.label] if r.label not in table.labels else []
        present, _ = table.blocks.setdefault(r.block, ([], params))
        present += [m for m in r.metrics if m not in present]
        for metric, text in r.notes.items():
            table.notes[note_key(r.block, r.label, params_key(r.params), metric)] = text
    for present, _ in table.blocks.values():  # in the columns' order
        present.sort(key=[c.name for c in metrics].index)
    return table


def note_key(block: str, label: str, parameters: str, metric: str) -> str:
    """Where a cell's note is kept in `source.notes`."""
    return "/".join((block, label, parameters, metric))


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
            raise fail(path, r.line, r.key, f"{written} is written {spelled[cell][0]} on "
                        f"{f'line {before.line}' if before.line else before.key}",
                        "write each parameter value one way in every row")
        spelled.setdefault(cell, (written, r))
        if (*cell, r.round) in first:
            before = first[(*cell, r.round)]
            shown = f"line {before.line}" if before.line else before.key
            cell_text = ", ".join([f"label {r.label}", *([pkey] if (pkey := params_key(
                r.params)) else []), *([f"round {r.round}"] if table.values == "rounds" else [])])
            raise fail(path, r.line, r.key, f"duplicate row: {cell_text} is already on {shown}",
                        "keep one row per cell (and round)")
        first[(*cell, r.round)] = r
        rounds.setdefault(cell, set()).add(r.round)
    n = table.rounds
    for (block, label, pkey), got in rounds.items():
        if len(got) != n:  # rounds are 1 … n, each once: n of them is all of them
            missing = next(i for i in range(1, n + 1) if i not in got)
            raise fail(path, None, "round", f"{label} ({block}{', ' + pkey if pkey else ''}) "
                        f"lacks round {missing} of {n}",
                        "give every cell the same rounds, 1 to N")


def _same(params: dict[str, Scalar]) -> dict[str, Scalar]:
    """Parameters with a whole float as its int (8.0 as 8): how a cell is told from another."""
    return {k: int(v) if isinstance(v, float) and v.is_integer() else v
            for k, v in params.items()}
