"""What the load generator counts in one window, mergeable across windows and processes."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from perfpages.archive.histogram import Latency

# Error kinds a request can end in instead of a response.
ERROR_KINDS = ("timeout", "connect", "other")


@dataclass
class Tally:
    """One window of one run (or the merge of several processes' windows).

    Requests belong to the window of their intended start (closed loop: their actual start), so
    every request sent is counted once; `completed` counts responses by the time they arrived.
    """

    index: int  # -1: the warm-up, else 0, 1, … within the measurement
    duration_s: float
    requests: int = 0  # sent: responses + errors (drops were never sent)
    codes: Counter[str] = field(default_factory=Counter)
    errors: Counter[str] = field(default_factory=Counter)
    drops: int = 0  # open loop: due, but still waiting for a connection past the drop limit
    offered: int = 0  # open loop: requests due in the window
    completed: int = 0  # responses that arrived during the window
    # Bytes of the answered requests (errors, which have no whole response, left out): requests
    # as written, responses (heads, 1xx, framing, bodies) as read off the socket (after TLS).
    sent_bytes: int = 0
    received_bytes: int = 0
    latency: Latency = field(default_factory=Latency)  # open loop: from the intended start
    service: Latency = field(default_factory=Latency)  # open loop: from the actual send
    lag: Latency = field(default_factory=Latency)  # open loop: actual send - intended start
    loop_lag: Latency = field(default_factory=Latency)  # event-loop wake-up overshoot
    cpu_s: float = 0.0  # generator CPU (all processes) spent during the window
    cpu_max_s: float = 0.0  # the busiest process's CPU during the window
    slowest_ms: float = 0.0
    slowest_at_s: float | None = None  # its intended start, seconds from the measurement start

    @property
    def responses(self) -> int:
        return sum(self.codes.values())

    @property
    def error_count(self) -> int:
        return sum(self.errors.values())

    @property
    def non_2xx(self) -> int:
        return sum(n for code, n in self.codes.items() if not code.startswith("2"))

    def note_slowest(self, ms: float, at_s: float) -> None:
        if ms > self.slowest_ms:
            self.slowest_ms, self.slowest_at_s = ms, at_s

    def merge(self, other: Tally) -> None:
        """Add another process's (or window's) counts; durations are the caller's business."""
        self.requests += other.requests
        self.codes.update(other.codes)
        self.errors.update(other.errors)
        self.drops += other.drops
        self.offered += other.offered
        self.completed += other.completed
        self.sent_bytes += other.sent_bytes
        self.received_bytes += other.received_bytes
        for name in ("latency", "service", "lag", "loop_lag"):
            getattr(self, name).merge(getattr(other, name))
        self.cpu_s += other.cpu_s
        self.cpu_max_s = max(self.cpu_max_s, other.cpu_max_s)
        if other.slowest_at_s is not None:
            self.note_slowest(other.slowest_ms, other.slowest_at_s)

    def to_json(self) -> dict[str, Any]:
        """Plain data to cross a process boundary (histograms encoded, lossless)."""
        return {
            "index": self.index, "duration_s": self.duration_s, "requests": self.requests,
            "codes": dict(self.codes), "errors": dict(self.errors), "drops": self.drops,
            "offered": self.offered, "completed": self.completed,
            "sent_bytes": self.sent_bytes, "received_bytes": self.received_bytes,
            "hist": {name: [getattr(self, name).encode(), getattr(self, name).clamped]
                     for name in ("latency", "service", "lag", "loop_lag")},
            "cpu_s": self.cpu_s, "cpu_max_s": self.cpu_max_s,
            "slowest_ms": self.slowest_ms, "slowest_at_s": self.slowest_at_s,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Tally:
        hist = {name: Latency.decode(enc, clamped) for name, (enc, clamped) in data["hist"].items()}
        return cls(index=data["index"], duration_s=data["duration_s"], requests=data["requests"],
                   codes=Counter(data["codes"]), errors=Counter(data["errors"]),
                   drops=data["drops"], offered=data["offered"], completed=data["completed"],
                   # Locust's workers do not count bytes
                   sent_bytes=data.get("sent_bytes", 0),
                   received_bytes=data.get("received_bytes", 0),
                   cpu_s=data["cpu_s"], cpu_max_s=data["cpu_max_s"],
                   slowest_ms=data["slowest_ms"], slowest_at_s=data["slowest_at_s"], **hist)

    def metrics(self, open_loop: bool) -> dict[str, float | None]:
        """Extra per-window figures: rates, drops, service time, bytes per call and the
        generator's own health."""
        d = self.duration_s or float("nan")
        out: dict[str, float | None] = {
            "non_2xx": float(self.non_2xx),
            "timeouts": float(self.errors["timeout"]),
            "connect_errors": float(self.errors["connect"]),
            # CPU of the busiest generator process as a share of one core: near 100 % means the
            # generator, not the subject, may have been the bottleneck.
            "generator_cpu_pct": round(100.0 * self.cpu_max_s / d, 2),
        }
        answered = self.responses
        if answered and self.received_bytes:  # none received: not counted (Locust)
            # Per answered request: a cost per call that the machine's speed does not move.
            out["sent_bytes"] = round(self.sent_bytes / answered, 3)
            out["received_bytes"] = round(self.received_bytes / answered, 3)
        loop = self.loop_lag.summary_ms()
        if loop:
            out["loop_lag_p99_ms"] = round(loop["p99"], 4)
            out["loop_lag_max_ms"] = round(loop["max"], 4)
        if open_loop:
            out["offered_rate"] = round(self.offered / d, 3)
            out["achieved_rate"] = round(self.completed / d, 3)
            out["drops"] = float(self.drops)
            for prefix, hist in (("service", self.service), ("dispatch_lag", self.lag)):
                for name, value in hist.summary_ms().items():
                    if name in ("p50", "p99", "p99.9", "max"):
                        out[f"{prefix}_{name}_ms"] = round(value, 4)
        if self.slowest_at_s is not None:
            out["slowest_ms"] = round(self.slowest_ms, 4)
            out["slowest_at_s"] = round(self.slowest_at_s, 4)
        return out
