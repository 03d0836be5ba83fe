"""Latency histograms: HdrHistogram in microseconds, clamped instead of silently dropped."""

from __future__ import annotations

from collections.abc import Iterable
from functools import cache

import numpy as np
from hdrh.histogram import HdrHistogram

LOWEST_US = 1
HIGHEST_US = 3_600_000_000  # one hour: anything slower is clamped and counted
SIGNIFICANT_FIGURES = 3

# Percentiles every window reports beside its encoded histogram, by metric name.
PERCENTILES: dict[str, float] = {"p50": 50.0, "p95": 95.0, "p99": 99.0, "p99.9": 99.9,
                                 "p99.99": 99.99}


@cache
def _bucket_values(lowest: int, highest: int, figures: int) -> tuple[np.ndarray, np.ndarray]:
    """Lowest and highest value of every bucket of a histogram layout (computed once)."""
    layout = HdrHistogram(lowest, highest, figures)
    low = np.array([layout.get_value_from_index(i) for i in range(layout.counts_len)],
                   dtype=np.float64)
    high = np.array([layout.get_highest_equivalent_value(int(v)) for v in low], dtype=np.float64)
    return low, high


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
        return self.summary_ms({"p": p}).get("p", 0.0)

    def summary_ms(self, percentiles: dict[str, float] = PERCENTILES) -> dict[str, float]:
        """Percentiles, mean and max in milliseconds (empty when nothing was recorded).

        Same answers as hdrh's get_value_at_percentile, computed with numpy over the counts:
        hdrh's own iterators walk every bucket in Python and take ~0.1 s per call.
        """
        counts = np.ctypeslib.as_array(self.hdr.counts)[: self.hdr.counts_len]
        cumulative = np.cumsum(counts, dtype=np.uint64)
        total = int(cumulative[-1]) if len(cumulative) else 0
        if total == 0:
            return {}
        low, high = _bucket_values(self.hdr.lowest_trackable_value,
                                   self.hdr.highest_trackable_value,
                                   self.hdr.significant_figures)
        out = {}
        for name, p in percentiles.items():
            target = max(int(min(p, 100.0) * total / 100 + 0.5), 1)
            index = int(np.searchsorted(cumulative, target))
            out[name] = float(high[index]) / 1000.0
        middle = (low + high) / 2.0
        out["mean"] = float(np.dot(counts.astype(np.float64), middle) / total) / 1000.0
        out["max"] = float(high[int(np.flatnonzero(counts)[-1])]) / 1000.0
        return out

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
