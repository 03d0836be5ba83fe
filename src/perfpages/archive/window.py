"""One measurement window: a line of results.jsonl."""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from perfpages.archive import schema
from perfpages.archive.histogram import HistogramError, Latency
from perfpages.archive.vocabulary import PGBENCH
from perfpages.errors import ArchiveError

Kind = Literal["measure", "warmup", "floor"]
Scalar = str | int | float | bool

_ORDER = ("p50", "p95", "p99", "p99.9", "p99.99", "max")
_SLACK_MS = 1e-3  # the summary is rounded to 4 decimals of a ms; the histogram's unit is 1 µs
_CORRUPT = "the line is corrupt: archive a new run"


def floor_kind(params: dict[str, Any]) -> str:
    """Which floor a floor window measured: "pgbench" straight to PostgreSQL (the machine's
    check), or an HTTP subject's own floor named by its `floor` parameter ("health")."""
    kind = params.get("floor")
    return kind if isinstance(kind, str) and kind else PGBENCH


def params_key(params: dict[str, Scalar]) -> str:
    """Canonical text of a parameter set: 'callers=32, key=plain' (sorted, stable)."""
    return ", ".join(f"{k}={params[k]}" for k in sorted(params))


@dataclass
class Window:
    block: str
    label: str
    round: int
    params: dict[str, Scalar]
    start: str
    duration_s: float
    kind: Kind = "measure"
    window: int = 0
    status: Literal["ok", "failed"] = "ok"
    error: str | None = None
    requests: int | None = None
    codes: dict[str, int] = field(default_factory=dict)
    errors: int = 0
    throughput: float | None = None
    latency: Latency | None = None
    metrics: dict[str, float | None] = field(default_factory=dict)
    # What the whole machine did meanwhile (archive/preflight.py): busy, others, steal, load1.
    machine: dict[str, float] | None = None
    # 2: the case measured again at the end of its block because the machine was busy during
    # its first attempt (method v2); the analysis counts it instead (analysis/rows.counted).
    attempt: int = 1
    # Seconds its subject sat idle (no load of the run) before the window's settle began; None:
    # its first use, a floor, or a run archived before method v2.1 recorded it.
    idle_s: float | None = None

    @property
    def key(self) -> tuple[str, str, int, str, str, int, int]:
        """Identity inside a run: two windows with the same key are duplicates."""
        return (self.kind, self.block, self.round, self.label, params_key(self.params),
                self.window, self.attempt)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "block": self.block, "label": self.label, "round": self.round, "window": self.window,
            "kind": self.kind, "params": dict(self.params), "start": self.start,
            "duration_s": self.duration_s, "status": self.status,
        }
        if self.error is not None:
            out["error"] = self.error
        throughput = _finite(self.throughput)
        if self.requests is not None:
            out["requests"] = self.requests
            out["codes"] = dict(self.codes)
            out["errors"] = self.errors
            if throughput is None and self.duration_s > 0:
                throughput = self.requests / self.duration_s
        elif self.errors:
            out["errors"] = self.errors
        if throughput is not None:
            out["throughput"] = throughput
        if self.latency is not None:
            lat: dict[str, Any] = {"unit": "us", "hdr": self.latency.encode(),
                                   "clamped": self.latency.clamped}
            lat.update({k: round(v, 4) for k, v in self.latency.summary_ms().items()})
            out["latency"] = lat
        if self.metrics:  # a rate over a zero-length window is "not measured", never NaN
            out["metrics"] = {k: _finite(v) for k, v in self.metrics.items()}
        if self.machine is not None:
            out["machine"] = dict(self.machine)
        if self.attempt != 1:  # absent: the first (and, before method v2, the only) attempt
            out["attempt"] = self.attempt
        if self.idle_s is not None:
            out["idle_s"] = round(self.idle_s, 3)
        return out

    @classmethod
    def from_json(cls, data: Any, where: str | Path, line: int) -> Window:
        schema.check(data, "window", where=where, line=line)
        latency = None
        if "latency" in data:
            latency = decode_latency(data["latency"], where, line)
        check_values(data, latency, where, line)
        return cls(block=data["block"], label=data["label"], round=data["round"],
                   params=data["params"], start=data["start"], duration_s=data["duration_s"],
                   kind=data["kind"], window=data.get("window", 0), status=data["status"],
                   error=data.get("error"), requests=data.get("requests"),
                   codes=data.get("codes", {}), errors=data.get("errors", 0),
                   throughput=data.get("throughput"), latency=latency,
                   metrics=data.get("metrics", {}), machine=data.get("machine"),
                   attempt=data.get("attempt", 1), idle_s=data.get("idle_s"))


def _finite(value: float | None) -> float | None:
    return value if value is None or math.isfinite(value) else None


def decode_latency(data: dict[str, Any], where: str | Path, line: int) -> Latency:
    """The window's histogram: Latency.decode refuses any but perfpages' range, before hdrh
    sees it."""
    try:
        return Latency.decode(data["hdr"], data.get("clamped", 0))
    except HistogramError as exc:
        raise ArchiveError(str(exc), where=where, line=line, key="latency.hdr",
                           fix=_CORRUPT) from None


def check_values(data: dict[str, Any], latency: Latency | None, where: str | Path,
                 line: int) -> None:
    """The histogram agrees with the counts and the percentiles beside it (the schema has
    checked each value's type and sign already)."""
    if latency is None:
        return

    def bad(what: str, key: str) -> ArchiveError:
        return ArchiveError(what, where=where, line=line, key=key, fix=_CORRUPT)

    count = latency.count
    if not 0 <= count < schema.MAX_NUMBER:
        raise bad(f"the histogram counts {count} values", "latency.hdr")
    if latency.clamped > count:
        raise bad(f"{latency.clamped} clamped of {count} values", "latency.clamped")
    requests, codes = data.get("requests"), data.get("codes") or {}
    sampling = (data.get("metrics") or {}).get("log_sampling")
    if codes and count != sum(codes.values()):  # HTTP: every response is timed, errors are not
        raise bad(f"the histogram holds {count} values for {sum(codes.values())} responses",
                  "latency.hdr")
    if requests is not None and (count > requests or (
            not codes and count != requests and sampling is None)):
        # pgbench: every transaction is timed, unless only a sample of them was logged
        raise bad(f"the histogram holds {count} values for {requests} requests", "latency.hdr")
    summary = data["latency"]
    shown = [(k, summary[k]) for k in _ORDER if k in summary]
    if count == 0:
        if shown or "mean" in summary:
            raise bad("percentiles of an empty histogram", "latency")
        return
    low, high = latency.min_ms() or 0.0, latency.max_ms() or 0.0
    if "mean" in summary:
        shown.append(("mean", summary["mean"]))
    for key, value in shown:
        if not low - _SLACK_MS <= value <= high + _SLACK_MS:
            raise bad(f"{value} ms is outside the histogram's {low:g}–{high:g} ms",
                      f"latency.{key}")
    ordered = [(k, v) for k, v in shown if k != "mean"]
    for (k1, v1), (k2, v2) in itertools.pairwise(ordered):
        if v1 > v2 + _SLACK_MS:
            raise bad(f"{k1} {v1} ms exceeds {k2} {v2} ms", f"latency.{k1}")
