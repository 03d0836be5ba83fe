"""What the rest of the machine did during a run, as archived: the preflight before each block
(diagnostics/preflight.jsonl), read back and written. The thresholds that call the machine busy
are design defaults (`archive.vocabulary`); the run applies them as it measures
(`run.preflight`), the analysis to the windows it counts (`analysis.machine_load`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from perfpages.archive import schema

PREFLIGHT_FILE = "diagnostics/preflight.jsonl"


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
