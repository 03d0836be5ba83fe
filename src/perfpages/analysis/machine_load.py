"""The machine's load during a run, as reports state it: the load generator's own CPU per HTTP
cell, the preflight checks, and the measured windows during which other processes or steal
kept the machine busy (`archive.preflight.busy` decides, as the run did)."""

from __future__ import annotations

from typing import Any

from perfpages.analysis import decision
from perfpages.analysis.tidy import Tidy
from perfpages.archive.preflight import busy
from perfpages.archive.reader import Run


def line(record: dict[str, Any]) -> str:
    """One preflight as the report and the pages say it."""
    figures = (f"load {record['load1']:.2f}, CPU busy {record['busy_pct']:.0f} % of a core "
               f"(others {record['others_pct']:.0f} %), steal {record['steal_pct']:.1f} %")
    waited = f"; waited {record['waited_s']:.0f} s" if record.get("waited_s") else ""
    if not record["busy"]:
        return f"{record['block']}: quiet ({figures}){waited}"
    return f"{record['block']}: the machine was busy ({'; '.join(record['reasons'])}){waited}"


def generator_cpu(tidy: Tidy) -> list[dict[str, Any]]:
    """Per HTTP cell, the load generator's busiest process's CPU over the rounds (% of one
    core): median and max, and whether it was busy enough to set the pace (`decision`)."""
    cells = tidy.cells_of("generator_cpu_pct")
    return [{"block": block, "parameters": pkey, "label": label, "median": c.median,
             "max": c.max, "busy": decision.generator_busy(c.max)}
            for (block, pkey, label, _), c in cells.items()]


def windows(run: Run) -> list[dict[str, Any]]:
    """Per block and label, what the rest of the machine did during the measured windows that
    recorded it: the most other processes and steal took; how many windows of the rounds
    (first attempts) ran and were busy; how many were measured again at the block's end
    (method v2: `attempt` 2, counted instead) and were busy again. The one count of busy
    windows: the warnings (`warnings.busy`) and the run page both state these figures."""
    out: dict[tuple[str, str], dict[str, Any]] = {}
    for w in run.windows:
        if w.kind == "measure" and w.machine is not None:
            entry = out.setdefault((w.block, w.label), {
                "block": w.block, "label": w.label, "windows": 0, "busy": 0, "again": 0,
                "busy_again": 0, "others_max": 0.0, "steal_max": 0.0})
            first = w.attempt == 1
            entry["windows" if first else "again"] += 1
            entry["busy" if first else "busy_again"] += busy(w.machine)
            entry["others_max"] = max(entry["others_max"], w.machine.get("others_pct", 0.0))
            entry["steal_max"] = max(entry["steal_max"], w.machine.get("steal_pct", 0.0))
    return list(out.values())
