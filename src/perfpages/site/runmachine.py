"""A run page's sections on its machine: the noise floor of its A/A pairs, the load generator's
CPU, what blocks measuring the same configuration gave (`analysis.consistency`), the
preflights and the rest of the machine during the measured windows, with the windows measured
again (the counts `warnings.busy` states), as `runpages` renders them."""

from __future__ import annotations

from typing import Any

from perfpages.analysis import consistency
from perfpages.analysis.changes import metric_header
from perfpages.analysis.decision import AA_SPREAD, GENERATOR_BUSY_PCT
from perfpages.analysis.format import format_percent
from perfpages.analysis.machine_load import line
from perfpages.site import escape


def section(data: dict[str, Any]) -> list[str]:
    """The noise floor of the run's A/A pairs, its preflights and the load beside its windows
    (nothing for runs that have none of them), from its reading's JSON."""
    out = []
    if data.get("noise_floor"):
        out += ["### Noise floor", "", "Labels that ran the same build (an A/A pair): what they "
                "differ by is the machine's and the method's noise. On a quiet machine no cell is "
                f"clear and every round lies within ±{AA_SPREAD * 100:g} % of the pair's median.",
                "", escape.table(
                    ["block", "metric", "A/A pair", "changes", "clear", "largest spread"],
                    [[escape.md(x["block"]), escape.md(x["metric"]), escape.md(x["pair"]),
                      escape.md(x["changes"]),
                      ("⚠ " if x["clear"] else "") + f"{x['clear']} of {x['cells']}",
                      escape.md(f"±{x['spread_percent']:.1f} %")]
                     for x in data["noise_floor"]]), ""]
    if data.get("generator"):
        out += ["### The load generator", "",
                "Its busiest process's CPU during the measured windows, in % of one core, per "
                f"cell: above {GENERATOR_BUSY_PCT:g} % (⚠) the generator may have set the pace, "
                "not the subject.", "", escape.table(
                    ["block", "parameters", "label", "median", "max"],
                    [[escape.md(x["block"]), escape.md(x["parameters"] or "—"),
                      escape.md(x["label"]), escape.md(f"{x['median']:.0f} %"),
                      ("⚠ " if x["busy"] else "") + escape.md(f"{x['max']:.0f} %")]
                     for x in data["generator"]]), ""]
    if data.get("consistency"):
        out += ["### Consistency across blocks", "", escape.md(consistency.TEXT) + ".", "",
                _consistency_table(data["consistency"]), ""]
    if data.get("preflight") or data.get("machine_load"):
        out += ["### Quiet machine", ""]
        out += [("- ⚠ " if r["busy"] else "- ") + escape.md(line(r))
                for r in data.get("preflight", [])] + [""]
    if data.get("machine_load"):
        out += ["The rest of the machine during the measured windows (CPU in % of one core):",
                "", _load_table(data["machine_load"]), ""]
    return out


def _load_table(rows: list[dict[str, Any]]) -> str:
    """Per block and label: windows of the rounds, busy ones, and (method v2, when any) those
    measured again with how many were busy again — the counts the warnings state."""
    again = any(x.get("again") for x in rows)
    return escape.table(
        ["block", "label", "windows", "busy", *["measured again"] * again, "others (max)",
         "steal (max)"],
        [[escape.md(x["block"]), escape.md(x["label"]), str(x["windows"]),
          ("⚠ " if x["busy"] else "") + str(x["busy"]),
          *[f"{x['again']}" + (f" ({x['busy_again']} busy)" if x["busy_again"] else "")] * again,
          escape.md(f"{x['others_max']:.0f} %"), escape.md(f"{x['steal_max']:.1f} %")]
         for x in rows])


def _consistency_table(rows: list[dict[str, Any]]) -> str:
    """Per configuration measured by several blocks: each block's cell and the spread."""
    return escape.table(
        ["parameters", "label", "metric", "each block: median (range)", "spread"],
        [[escape.md(x["parameters"]), escape.md(x["label"]), escape.md(metric_header(x["metric"])),
          escape.md(" · ".join(f"{b['block']}: {b['cell']}" for b in x["blocks"])),
          escape.md(format_percent(x["spread_percent"]) if x["spread_percent"] is not None
                    else "—")]
         for x in rows])
