"""Reading a run's diagnostics/ back: the summary `bench report` prints (never imports psycopg)."""

from __future__ import annotations

import json
from pathlib import Path

from perfpages.archive import files


def summary_lines(run_dir: Path) -> list[str]:
    """One short paragraph per block and label, for `bench report`."""
    out = []
    for name in files.names(run_dir, "diagnostics/*/*/summary.json"):
        block, label = name.split("/")[1:3]
        data = json.loads(files.read_text(run_dir, name))
        db = data.get("database", {})
        ratio = db.get("buffer_hit_ratio")
        parts = [f"buffer hit ratio {ratio:.2%}" if ratio is not None else "no buffer reads",
                 f"temp blocks {int(db.get('temp_files', 0))} files/"
                 f"{int(db.get('temp_bytes', 0)) // 1024} KiB",
                 f"I/O read time {db.get('blk_read_time', 0):.1f} ms"]
        waits = data.get("waits", {}).get("events", {})
        if waits:
            top = ", ".join(f"{k} {v}" for k, v in list(waits.items())[:3])
            parts.append(f"waits (samples) {top}")
        out.append(f"{block} / {label}: " + "; ".join(parts))
        for name, key in (("total", "total_ms"), ("mean", "mean_ms")):
            ranked = data.get("statements", {}).get(f"by_{name}_time", [])[:1]
            for r in ranked:
                out.append(f"  top by {name} time: {r[key]:.3f} ms ({r['calls']} calls) "
                           f"{r['query'][:70]}")
        for plan in data.get("plans", []):
            out.append(f"  plan {plan}: diagnostics/{block}/{label}/explain-{plan}.json")
    return out
