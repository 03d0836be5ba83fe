"""Latency histograms: HdrHistogram in microseconds, clamped instead of silently dropped."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

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
        """The usual percentiles, mean and max in milliseconds (empty when nothing was recorded).

        Equal to hdrh's get_value_at_percentile() and get_mean_value(), computed with numpy over
        the non-empty buckets: hdrh walks all ~50k buckets in Python, which made loading a run
        take seconds."""
        if self.count == 0:
            return {}
        import numpy as np  # here, not at import: reading a manifest needs no numpy

        hdr = self.hdr
        index, counts = self._buckets()
        out = dict(zip(PERCENTILES, self.percentiles_ms(PERCENTILES.values()), strict=True))
        # hdrh's get_value_from_index and median-equivalent value, vectorised.
        bucket = (index >> hdr.sub_bucket_half_count_magnitude) - 1
        sub = (index & (hdr.sub_bucket_half_count - 1)) + hdr.sub_bucket_half_count
        first = bucket < 0
        sub = np.where(first, sub - hdr.sub_bucket_half_count, sub)
        bucket = np.where(first, 0, bucket)
        lowest = sub.astype(np.int64) << (bucket + hdr.unit_magnitude)
        middle = lowest + ((np.int64(1) << (bucket + hdr.unit_magnitude)) >> 1)
        if int(counts.sum()) * int(middle[-1]) < 1 << 62:  # exact in int64: no overflow
            total = int(np.dot(counts, middle))
        else:  # a hostile count: Python's integers, as hdrh sums them
            total = sum(int(c) * int(m) for c, m in zip(counts, middle, strict=True))
        out["mean"] = total / hdr.total_count / 1000.0
        out["max"] = hdr.get_max_value() / 1000.0
        return out

    def min_ms(self) -> float | None:
        """The fastest value recorded (the lowest equivalent of its bucket, as hdrh gives the
        minimum), in milliseconds: a latency floor such as a 40 ms Nagle delay. Computed from
        the histogram, so every archived run has it; None when nothing was recorded."""
        if self.count == 0:
            return None
        return self.hdr.get_min_value() / 1000.0

    def _buckets(self) -> tuple[Any, Any]:
        """The indexes of the non-empty buckets and their counts (numpy arrays)."""
        import numpy as np

        counts = np.ctypeslib.as_array(self.hdr.counts)[: self.hdr.counts_len]
        index = np.flatnonzero(counts)
        return index, counts[index].astype(np.int64)

    def percentiles_ms(self, percentiles: Iterable[float]) -> list[float]:
        """get_value_at_percentile() of each percentile in milliseconds, from one pass over the
        non-empty buckets (a spectrum asks for a hundred; hdrh walks every bucket for each)."""
        if self.count == 0:
            return []
        import numpy as np

        hdr = self.hdr
        index, counts = self._buckets()
        cumulative = np.cumsum(counts)
        out = []
        for p in percentiles:
            target = hdr.get_target_count_at_percentile(p)
            at = min(int(np.searchsorted(cumulative, target, side="left")), len(index) - 1)
            value = hdr.get_highest_equivalent_value(hdr.get_value_from_index(int(index[at])))
            out.append(value / 1000.0)
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
