"""One measurement window: a line of results.jsonl."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from perfpages.archive import schema
from perfpages.archive.histogram import Latency
from perfpages.errors import ArchiveError

Kind = Literal["measure", "warmup", "floor"]
Scalar = str | int | float | bool


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

    @property
    def key(self) -> tuple[str, str, int, str, str, int]:
        """Identity inside a run: two windows with the same key are duplicates."""
        return (self.kind, self.block, self.round, self.label, params_key(self.params), self.window)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "block": self.block, "label": self.label, "round": self.round, "window": self.window,
            "kind": self.kind, "params": dict(self.params), "start": self.start,
            "duration_s": self.duration_s, "status": self.status,
        }
        if self.error is not None:
            out["error"] = self.error
        throughput = self.throughput
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
        if self.metrics:
            out["metrics"] = dict(self.metrics)
        return out

    @classmethod
    def from_json(cls, data: Any, where: str | Path, line: int) -> Window:
        schema.check(data, "window", where=where, line=line)
        latency = None
        if "latency" in data:
            try:
                latency = Latency.decode(data["latency"]["hdr"], data["latency"].get("clamped", 0))
            except Exception:  # hdrh raises assorted errors on corrupt base64/zlib payloads
                raise ArchiveError("latency.hdr is not a valid encoded HdrHistogram", where=where,
                                   line=line, key="latency.hdr",
                                   fix="the line is corrupt: archive a new run") from None
        return cls(block=data["block"], label=data["label"], round=data["round"],
                   params=data["params"], start=data["start"], duration_s=data["duration_s"],
                   kind=data["kind"], window=data.get("window", 0), status=data["status"],
                   error=data.get("error"), requests=data.get("requests"),
                   codes=data.get("codes", {}), errors=data.get("errors", 0),
                   throughput=data.get("throughput"), latency=latency,
                   metrics=data.get("metrics", {}))
