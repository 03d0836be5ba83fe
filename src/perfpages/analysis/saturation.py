"""The concurrency knee: where doubling the clients adds little throughput while p95 climbs."""

from __future__ import annotations

import itertools
from typing import Any

from perfpages.analysis.decision import MIN_GAIN, P95_RISE, saturated
from perfpages.analysis.tidy import Tidy, median


def knees(tidy: Tidy, min_gain: float = MIN_GAIN,
          p95_rise: float = P95_RISE) -> list[dict[str, Any]]:
    """Every step of every client sweep (medians of the rounds of every parameter set with
    those clients), flagged where saturated."""
    sweeps: dict[tuple[str, str], dict[tuple[Any, str], list[float]]] = {}
    for r in tidy.measured:
        values = sweeps.setdefault((r["block"], r["label"]), {})
        if r.get("clients") is not None and r["metric"] in ("throughput", "p95"):
            values.setdefault((r["clients"], r["metric"]), []).append(float(r["value"]))
    out = []
    for (block, label), values in sweeps.items():
        points = []
        for clients in sorted({c for c, _ in values}):
            tput = median(values.get((clients, "throughput"), []))
            p95 = median(values.get((clients, "p95"), []))
            if tput is not None and p95 is not None:
                points.append((int(clients), tput, p95))
        for (c1, t1, l1), (c2, t2, l2) in itertools.pairwise(points):
            if c2 < 2 * c1 or t1 <= 0 or l1 <= 0:
                continue
            gain, rise = t2 / t1 - 1, l2 / l1 - 1
            out.append({"block": block, "label": label, "from": c1, "to": c2,
                        "throughput_change": gain * 100, "p95_change": rise * 100,
                        "flagged": saturated(gain, rise, min_gain=min_gain, rise=p95_rise)})
    return out


def line(k: dict[str, Any]) -> str:
    from perfpages.analysis.format import format_percent

    return (f"{k['block']} / {k['label']}: {k['from']} → {k['to']} clients: throughput "
            f"{format_percent(k['throughput_change'])}, p95 {format_percent(k['p95_change'])}"
            f"{' ⚠ saturated' if k['flagged'] else ''}")
