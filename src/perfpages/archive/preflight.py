"""What the rest of the machine did during a run, as archived: the preflight before each block
(diagnostics/preflight.jsonl), read back and written. The thresholds that call the machine busy
are design defaults (`archive.vocabulary`), and whether figures cross them is decided here, once
(`over`, `busy`): the run applies it as it measures (`run.preflight`, `run.schedule`), the
analysis to the windows it counts (`analysis.machine_load`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from perfpages.archive import schema, vocabulary

PREFLIGHT_FILE = "diagnostics/preflight.jsonl"


def over(figures: dict[str, Any]) -> list[tuple[str, float, float]]:
    """The figures of a preflight or a window above their busy thresholds: (key, value,
    threshold) for other processes' CPU (`others_pct`) and steal (`steal_pct`)."""
    out = []
    for key, limit in (("others_pct", vocabulary.BUSY_OTHERS_PCT),
                       ("steal_pct", vocabulary.BUSY_STEAL_PCT)):
        value = figures.get(key)
        if value is not None and value > limit:
            out.append((key, float(value), float(limit)))
    return out


def busy(figures: dict[str, Any] | None) -> bool:
    """Whether a window's machine figures call it busy (None: not recorded, not busy): what
    the run measures again and what the analysis counts as busy."""
    return figures is not None and bool(over(figures))


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


def dumps(record: dict[str, Any]) -> str:
    return json.dumps(record, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
