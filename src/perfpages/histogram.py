"""Latency histograms: HdrHistogram in microseconds, clamped instead of silently dropped."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
from hdrh.histogram import HdrHistogram

LOWEST_US = 1
HIGHEST_US = 3_600_000_000  # one hour: anything slower is clamped and counted
SIGNIFICANT_FIGURES = 3

# Percentiles every window reports beside its encoded histogram, by metric name.
PERCENTILES: dict[str, float] = {"p50": 50.0, "p95": 95.0, "p99": 99.0, "p99.9": 99.9,
                                 "p99.99": 99.99}


class Latency:
    """A mergeable latency distribution; values are recorded in microseconds."""

    def __init__(self, hdr: HdrHistogram | None = None, clamped: int = 0) -> None:
        self.hdr = hdr or HdrHistogram(LOWEST_US, HIGHEST_US, SIGNIFICANT_FIGURES)
        self.clamped = clamped

    def record_us(self, value: float, count: int = 1) -> None:
        v = round(value)
        if v < LOWEST_US or v > HIGHEST_US:
            # record_value() returns False and drops out-of-range values: clamp and count them.
            self.clamped += count
            v = min(max(v, LOWEST_US), HIGHEST_US)
        self.hdr.record_value(v, count)

    def record_ms(self, value: float, count: int = 1) -> None:
        self.record_us(value * 1000.0, count)

    def merge(self, other: Latency) -> None:
        self.hdr.add(other.hdr)
        self.clamped += other.clamped

    @property
    def count(self) -> int:
        return int(self.hdr.get_total_count())

    def percentile_ms(self, p: float) -> float:
        return self.hdr.get_value_at_percentile(p) / 1000.0

    def summary_ms(self) -> dict[str, float]:
        """The usual percentiles, mean and max in milliseconds (empty when nothing was recorded)."""
        if self.count == 0:
            return {}
        values = self.hdr.get_percentile_to_value_dict(list(PERCENTILES.values()))
        out = {name: values[p] / 1000.0 for name, p in PERCENTILES.items()}
        out["mean"] = self.mean_us() / 1000.0
        out["max"] = self.hdr.get_max_value() / 1000.0
        return out

    def mean_us(self) -> float:
        """hdrh's get_mean_value(), visiting only non-empty buckets (it walks all ~50k in Python,
        which made loading a run take seconds)."""
        hdr = self.hdr
        counts = np.ctypeslib.as_array(hdr.counts)[: hdr.counts_len]
        total = sum(int(counts[i]) * hdr._hdr_median_equiv_value(hdr.get_value_from_index(int(i)))
                    for i in np.flatnonzero(counts))
        return float(total) / hdr.total_count if hdr.total_count else 0.0

    def encode(self) -> str:
        return self.hdr.encode().decode("ascii")

    @classmethod
    def decode(cls, encoded: str, clamped: int = 0) -> Latency:
        return cls(HdrHistogram.decode(encoded.encode("ascii")), clamped)

    @classmethod
    def merged(cls, parts: Iterable[Latency]) -> Latency:
        total = cls()
        for part in parts:
            total.merge(part)
        return total
