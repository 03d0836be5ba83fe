"""What the rest of the machine did during a run: the preflight before each block
(diagnostics/preflight.jsonl) and a window's `machine` figures, with the thresholds that call
the machine busy.

CPU figures are in percent of one core (100 = one core busy all the time; a 2-core machine tops
out at 200), so a process's share and the thresholds read alike; steal is in percent of the
machine's CPU time, as `top` shows it. The run decides "busy" with `reasons` before each block
(and waits); reports and pages read the recorded decision, and judge windows with `reasons` too.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from perfpages.archive import schema

PREFLIGHT_FILE = "diagnostics/preflight.jsonl"

# Other processes' CPU above a tenth of a core: a neighbour that size moves a 1-2 % noise floor.
OTHERS_PCT = 10.0
# Steal above 2 % of the machine: the hypervisor gives the cores to other guests, unseen here.
STEAL_PCT = 2.0
# Any other PostgreSQL server, pgbench, perfpages run or test suite counts however idle it looks
# now: it wakes up (autovacuum, checkpoints, its next test) in the middle of a window.
COMPETING = ("PostgreSQL", "pgbench", "perfpages", "pytest", "invoke")


def reasons(figures: dict[str, Any], processes: list[dict[str, Any]] | None = None) -> list[str]:
    """Why the machine was busy (nothing: it was quiet), from a preflight's or a window's
    figures and the competing processes a preflight found."""
    out = []
    others = figures.get("others_pct")
    if others is not None and others > OTHERS_PCT:
        out.append(f"other processes used {others:.0f} % of a core, above {OTHERS_PCT:g} %")
    steal = figures.get("steal_pct")
    if steal is not None and steal > STEAL_PCT:
        out.append(f"CPU steal {steal:.1f} %, above {STEAL_PCT:g} %")
    rivals = [p for p in processes or [] if p.get("why") in COMPETING]
    if rivals:
        names = ", ".join(f"{p['name']} {p['pid']}" for p in rivals[:6])
        more = f" and {len(rivals) - 6} more" if len(rivals) > 6 else ""
        word = "process" if len(rivals) == 1 else "processes"
        out.append(f"{len(rivals)} competing {word} ({names}{more})")
    return out


def busy(figures: dict[str, Any] | None) -> bool:
    """Whether a window's machine figures call it busy (None: not recorded, not busy)."""
    return figures is not None and bool(reasons(figures))


def read(run_dir: Path) -> list[dict[str, Any]]:
    """The run's preflights, in order ([] for runs that predate them). A line the schema
    refuses is an error naming the file and line, as for results.jsonl."""
    path = Path(run_dir) / PREFLIGHT_FILE
    if not path.is_file():
        return []
    out = []
    for number, raw in enumerate(path.read_bytes().splitlines(), 1):
        if raw.strip():
            data = schema.loads(raw, where=path, line=number)
            schema.check(data, "preflight", where=path, line=number)
            out.append(data)
    return out


def line(record: dict[str, Any]) -> str:
    """One preflight as the report and the pages say it."""
    figures = (f"load {record['load1']:.2f}, CPU busy {record['busy_pct']:.0f} % of a core "
               f"(others {record['others_pct']:.0f} %), steal {record['steal_pct']:.1f} %")
    waited = f"; waited {record['waited_s']:.0f} s" if record.get("waited_s") else ""
    if not record["busy"]:
        return f"{record['block']}: quiet ({figures}){waited}"
    return f"{record['block']}: the machine was busy ({'; '.join(record['reasons'])}){waited}"


def dumps(record: dict[str, Any]) -> str:
    return json.dumps(record, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
