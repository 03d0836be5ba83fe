"""The concurrency knee: where doubling the clients adds little throughput while p95 climbs."""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING, Any

from perfpages.analysis.decision import MIN_GAIN, P95_RISE, saturated

if TYPE_CHECKING:  # pandas loads only when knees() runs
    import pandas as pd


def knees(frame: pd.DataFrame, min_gain: float = MIN_GAIN,
          p95_rise: float = P95_RISE) -> list[dict[str, Any]]:
    """Every step of every client sweep (medians of the rounds), flagged where saturated."""
    import pandas as pd

    data = frame[frame["kind"] == "measure"]
    if "clients" not in data or data.empty:
        return []
    out = []
    for (block, label), rows in data.groupby(["block", "label"], sort=False):
        medians = rows.groupby(["clients", "metric"])["value"].median()
        points = []
        for clients in sorted(c for c in rows["clients"].dropna().unique()):
            tput = medians.get((clients, "throughput"))
            p95 = medians.get((clients, "p95"))
            if tput is not None and p95 is not None and not pd.isna(tput) and not pd.isna(p95):
                points.append((int(clients), float(tput), float(p95)))
        for (c1, t1, l1), (c2, t2, l2) in itertools.pairwise(points):
            if c2 < 2 * c1 or t1 <= 0 or l1 <= 0:
                continue
            gain, rise = t2 / t1 - 1, l2 / l1 - 1
            out.append({"block": block, "label": label, "from": c1, "to": c2,
                        "throughput_change": gain * 100, "p95_change": rise * 100,
                        "flagged": saturated(gain, rise, min_gain=min_gain, rise=p95_rise)})
    return out


def line(k: dict[str, Any]) -> str:
    from perfpages.analysis.method import format_percent

    return (f"{k['block']} / {k['label']}: {k['from']} → {k['to']} clients: throughput "
            f"{format_percent(k['throughput_change'])}, p95 {format_percent(k['p95_change'])}"
            f"{' ⚠ saturated' if k['flagged'] else ''}")
