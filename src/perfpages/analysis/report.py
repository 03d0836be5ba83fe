"""`bench report`: one table per block ("median (min–max)") and a changes table with verdicts."""

from __future__ import annotations

import json
from typing import Any

from perfpages.analysis import certification, crossrun, saturation
from perfpages.analysis.changes import cell_text
from perfpages.analysis.crossrun import Cross
from perfpages.analysis.decision import Cell
from perfpages.analysis.format import format_percent
from perfpages.analysis.metric import format_number
from perfpages.analysis.reading import read
from perfpages.analysis.text import fence, prose
from perfpages.analysis.warnings import WARN, floor_name, of_run
from perfpages.archive.reader import Run

__all__ = ["WARN", "build", "drift_line", "to_json", "to_markdown"]


def build(run: Run, compare: tuple[str, str] | None = None, min_rounds: int | None = None,
          cross: Cross | None = None) -> dict[str, Any]:
    """Everything `bench report` prints, as plain data (the json format is exactly this): the
    run's reading (`perfpages.analysis.reading.read`)."""
    return read(run, compare, min_rounds, cross).to_json()


def _md_table(columns: list[str], rows: list[list[str]]) -> list[str]:
    esc = [[prose(c) for c in row] for row in [columns, *rows]]
    lines = ["| " + " | ".join(esc[0]) + " |", "|" + "|".join("---" for _ in columns) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in esc[1:]]
    return lines


def to_markdown(data: dict[str, Any]) -> str:
    """The report as Markdown; every text from the archive is escaped (text.prose), so a
    title or label reads as typed, never as markup."""
    out = [f"# {prose(data['title'])}", ""]
    if data.get("runs"):
        out += ["Runs:", "", *[f"- {prose(crossrun.run_line(r))}" for r in data["runs"]], ""]
    else:
        out += [f"Run `{data['run']}` ({data['scope']}, {data['status']}), started "
                f"{prose(data['started'])}.", ""]
    out += [f"Method: {prose(data['method'])}.", ""]
    for table in data["tables"]:
        out += [f"## {prose(table['title'])}", "", *_md_table(table["columns"], table["rows"]),
                ""]
        out += [prose(note) for note in table["notes"]] + ([""] if table["notes"] else [])
    if data["changes"]["rows"]:
        out += ["## Changes", "", *_md_table(data["changes"]["columns"], data["changes"]["rows"]),
                ""]
        out += [f"- {prose(line)}" for line in data["changes"]["summary"]] + [""]
    if data.get("certification"):
        out += ["## Certification", "", CERTIFICATION, "",
                *[f"- {prose(c['line'])}" for c in data["certification"]], ""]
    pairs = [line for f in data.get("pairing", []) for line in f["lines"]]
    if pairs:
        out += ["## Pairing", "", PAIRING, "", *[f"- {prose(line)}" for line in pairs], ""]
    if data["drift"]:
        out += ["## Floors", ""]
        out += [f"- {prose(drift_line(d)[2:])}" for d in data["drift"]] + [""]
    if data.get("saturation"):
        out += ["## Saturation", ""]
        out += [f"- {prose(saturation.line(k))}" for k in data["saturation"]] + [""]
    if data.get("diagnostics"):
        out += ["## Diagnostics", "", fence("\n".join(data["diagnostics"])), ""]
    warned = data.get("warnings", [])
    if warned:
        out += [f"## {WARN} Warnings", "", *[f"- {prose(w)}" for w in warned], ""]
    out += [f"Note: {prose(note)}" for note in data["notes"]
            if note not in warned and note not in pairs]
    return "\n".join(out).rstrip() + "\n"


PAIRING = ("The windows a comparison pairs by round: how far apart they sat (middle to middle), "
           "the correlation of the two labels' rounds that pairing removes (Pearson, of the "
           "logs, the median over the block's cells)")
CERTIFICATION = ("A block is certified when its A/A pair (the same build under two labels) has "
                 "no clear cell; it resolves what its worst comparison resolves")


def drift_line(d: dict[str, Any]) -> str:
    """A block's floors, each the median of its seconds with their range (the drift decision
    reads both): `- mix: tps floor 12,882/s (12,310–13,046) before, …`."""
    flag = f" {WARN} drift beyond the threshold" if d["flagged"] else ""
    return (f"- {of_run(d)}{d['block']}: {floor_name(d)} floor "
            f"{_rate(d, 'before')} before, {_rate(d, 'after')} after "
            f"({format_percent(d['drift_percent'])}){flag}")


def _rate(d: dict[str, Any], side: str) -> str:
    seconds = d.get(f"{side}_seconds")  # a report's JSON from before they were kept: none
    text = cell_text(Cell(tuple(seconds))) if seconds else format_number(d[side])
    median, _, spread = text.partition(" ")
    return f"{median}/s" + (f" {spread}" if spread else "")


def to_json(data: dict[str, Any]) -> str:
    """Strict JSON: a number with no finite value (a change from 0) is null, never NaN."""
    return json.dumps(_finite(data), indent=2, ensure_ascii=False, allow_nan=False) + "\n"


def _finite(value: Any) -> Any:
    if isinstance(value, float):
        return certification.finite(value)
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value
