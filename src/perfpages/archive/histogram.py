"""Latency histograms: HdrHistogram in microseconds, clamped instead of silently dropped."""

from __future__ import annotations

import base64
import binascii
import functools
import zlib
from collections.abc import Iterable
from typing import Any

from hdrh.codec import (
    V2_COMPRESSION_COOKIE_BASE,
    V2_ENCODING_COOKIE_BASE,
    ExternalHeader,
    PayloadHeader,
    ext_header_size,
    get_cookie_base,
    payload_header_size,
)
from hdrh.histogram import HdrHistogram

LOWEST_US = 1
HIGHEST_US = 3_600_000_000  # one hour: anything slower is clamped and counted
SIGNIFICANT_FIGURES = 3
# A decoded histogram of perfpages' range holds ~24k counters (under 250 KB as varints).
MAX_HDR_BYTES = 1 << 20

# Percentiles every window reports beside its encoded histogram, by metric name.
PERCENTILES: dict[str, float] = {"p50": 50.0, "p95": 95.0, "p99": 99.0, "p99.9": 99.9,
                                 "p99.99": 99.99}


class HistogramError(ValueError):
    """An encoded histogram that is not one of perfpages' range; the message says why."""


@functools.cache
def _shape() -> tuple[int, int, int]:
    """(unit magnitude, sub-bucket half-count magnitude, number of counters) of perfpages'
    histogram: what maps a counter's index to the values it holds."""
    hdr = HdrHistogram(LOWEST_US, HIGHEST_US, SIGNIFICANT_FIGURES)
    return hdr.unit_magnitude, hdr.sub_bucket_half_count_magnitude, hdr.counts_len


def _values(index: Any) -> tuple[Any, Any]:
    """hdrh's get_value_from_index (the lowest value a counter holds) and the width of the
    counter's range, for a counter's index or an int64 array of them."""
    unit, magnitude, _ = _shape()
    bucket = (index >> magnitude) - 1
    bucket = bucket * (bucket > 0)  # the first two half-buckets share a unit width
    return (index - (bucket << magnitude)) << (bucket + unit), 2 ** (bucket + unit)


class Latency:
    """A mergeable latency distribution; values are recorded in microseconds.

    Two forms, one meaning. Recording and encoding use an HdrHistogram. Decoding, merging and
    summarising use the non-empty counters only, as numpy arrays: hdrh allocates and zeroes
    ~24k counters for every decoded or merged histogram, which made a run page cost tens of
    milliseconds. `hdr` builds the HdrHistogram of a decoded or merged histogram when it is
    recorded into or encoded. Every answer equals hdrh's (tests/test_histogram_summary.py)."""

    def __init__(self, hdr: HdrHistogram | None = None, clamped: int = 0) -> None:
        self._hdr: HdrHistogram | None = hdr or HdrHistogram(LOWEST_US, HIGHEST_US,
                                                              SIGNIFICANT_FIGURES)
        self._counts: tuple[Any, Any, int] | None = None  # (indexes, counts, total) when read
        self.clamped = clamped

    @classmethod
    def _read(cls, index: Any, counts: Any, total: int, clamped: int) -> Latency:
        out = cls.__new__(cls)
        out._hdr, out._counts, out.clamped = None, (index, counts, total), clamped
        return out

    @property
    def hdr(self) -> HdrHistogram:
        """The HdrHistogram, built from the counters of a decoded or merged histogram."""
        if self._hdr is None:
            import numpy as np

            assert self._counts is not None
            index, counts, total = self._counts
            hdr = HdrHistogram(LOWEST_US, HIGHEST_US, SIGNIFICANT_FIGURES)
            if len(index):
                np.ctypeslib.as_array(hdr.counts)[index] = counts
                hdr.set_internal_tacking_values(int(index[0]), int(index[-1]), total)
            self._hdr, self._counts = hdr, None
        return self._hdr

    def _nonempty(self) -> tuple[Any, Any]:
        """The indexes of the non-empty counters and their counts (int64 numpy arrays)."""
        if self._counts is not None:
            return self._counts[0], self._counts[1]
        import numpy as np

        hdr = self.hdr
        if not hdr.total_count:
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        # the counters an encoding holds: from the minimum's to the maximum's
        low = hdr.get_counts_array_index(hdr.get_min_value())
        span = np.ctypeslib.as_array(hdr.counts)[low:hdr.get_counts_array_index(hdr.max_value) + 1]
        at = np.flatnonzero(span)
        return at + low, span[at].astype(np.int64)

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
        if self._hdr is None:  # stays in the counts form
            self._counts = Latency.merged([self, other])._counts
        else:
            self._hdr.add(other.hdr)
        self.clamped += other.clamped

    @property
    def count(self) -> int:
        return self._counts[2] if self._counts is not None else int(self.hdr.get_total_count())

    def percentile_ms(self, p: float) -> float:
        return self.percentiles_ms([p])[0] if self.count else 0.0

    def summary_ms(self) -> dict[str, float]:
        """The usual percentiles, mean and max in milliseconds (empty when nothing was
        recorded): hdrh's get_value_at_percentile(), get_mean_value() and get_max_value()."""
        if self.count == 0:
            return {}
        import numpy as np

        index, counts = self._nonempty()
        out = dict(zip(PERCENTILES, self._percentiles(PERCENTILES.values(), index, counts),
                       strict=True))
        lowest, width = _values(index)
        middle = lowest + (width >> 1)  # hdrh's median-equivalent value of each counter
        if int(counts.sum()) * int(middle[-1]) < 1 << 62:  # exact in int64: no overflow
            total = int(np.dot(counts, middle))
        else:  # a hostile count: Python's integers, as hdrh sums them
            total = sum(int(c) * int(m) for c, m in zip(counts, middle, strict=True))
        out["mean"] = total / self.count / 1000.0
        out["max"] = int(lowest[-1] + width[-1] - 1) / 1000.0
        return out

    def min_ms(self) -> float | None:
        """The fastest value recorded (the lowest equivalent of its bucket, as hdrh gives the
        minimum), in milliseconds: a latency floor such as a 40 ms Nagle delay. Computed from
        the histogram, so every archived run has it; None when nothing was recorded."""
        if self.count == 0:
            return None
        index, _ = self._nonempty()
        return float(_values(int(index[0]))[0]) / 1000.0

    def max_ms(self) -> float | None:
        """hdrh's get_max_value() in milliseconds (the highest value of the slowest counter);
        None when nothing was recorded."""
        if self.count == 0:
            return None
        index, _ = self._nonempty()
        lowest, width = _values(int(index[-1]))
        return float(lowest + width - 1) / 1000.0

    def percentiles_ms(self, percentiles: Iterable[float]) -> list[float]:
        """get_value_at_percentile() of each percentile in milliseconds, from one pass over the
        non-empty counters (a spectrum asks for a hundred; hdrh walks every counter for each)."""
        if self.count == 0:
            return []
        return self._percentiles(percentiles, *self._nonempty())

    def _percentiles(self, percentiles: Iterable[float], index: Any, counts: Any) -> list[float]:
        import numpy as np

        wanted = list(percentiles)
        total = self.count  # hdrh's get_target_count_at_percentile:
        targets = [max(int(min(p, 100.0) * total / 100 + 0.5), 1) for p in wanted]
        at = np.minimum(np.searchsorted(np.cumsum(counts), targets), len(index) - 1)
        lowest, width = _values(index[at])
        # a counter's highest value; its lowest at percentile 0, as hdrh
        return [int(low + (w - 1 if p else 0)) / 1000.0
                for p, low, w in zip(wanted, lowest, width, strict=True)]

    def encode(self) -> str:
        encoded: bytes = self.hdr.encode()
        return encoded.decode("ascii")

    @classmethod
    def decode(cls, encoded: str, clamped: int = 0) -> Latency:
        """A histogram as `encode` wrote it, in the counts form. Raises HistogramError unless
        it is a valid V2 encoding of perfpages' range: hdrh would allocate whatever range a
        header asks for and inflate whatever it is given."""
        import numpy as np
        from pyhdrh import decode  # hdrh's own varint decoder

        bad = HistogramError("not a valid encoded HdrHistogram")
        try:
            raw = base64.b64decode(encoded, validate=True)
        except (binascii.Error, ValueError):
            raise bad from None
        if len(raw) < ext_header_size:
            raise bad
        outer = ExternalHeader.from_buffer_copy(raw)
        if (get_cookie_base(outer.cookie) != V2_COMPRESSION_COOKIE_BASE
                or outer.length != len(raw) - ext_header_size):
            raise bad
        inflate = zlib.decompressobj()
        try:
            payload = inflate.decompress(raw[ext_header_size:], MAX_HDR_BYTES)
        except zlib.error:
            raise bad from None
        if inflate.unconsumed_tail:
            raise HistogramError(f"the histogram inflates beyond {MAX_HDR_BYTES >> 20} MiB")
        if len(payload) < payload_header_size:
            raise bad
        head = PayloadHeader.from_buffer_copy(payload)
        if get_cookie_base(head.cookie) != V2_ENCODING_COOKIE_BASE:
            raise bad
        shape = (head.significant_figures, head.lowest_trackable_value,
                 head.highest_trackable_value)
        if shape != (SIGNIFICANT_FIGURES, LOWEST_US, HIGHEST_US):
            raise HistogramError(
                f"a histogram of {shape[1]}–{shape[2]} µs with {shape[0]} figures, not "
                f"perfpages' {LOWEST_US}–{HIGHEST_US} µs with {SIGNIFICANT_FIGURES}")
        length = _shape()[2]
        dense = np.zeros(length, np.uint64)
        try:
            found = decode(payload, payload_header_size, dense.ctypes.data, length, 8)
        except (ValueError, OverflowError, IndexError):  # corrupt varints
            raise bad from None
        if not found["total"]:
            return cls._read(np.zeros(0, np.int64), np.zeros(0, np.int64), 0, clamped)
        low, high = found["min_nonzero_index"], found["max_nonzero_index"] + 1
        at = np.flatnonzero(dense[low:high])
        return cls._read(at + low, dense[low:high][at].astype(np.int64), int(found["total"]),
                         clamped)

    @classmethod
    def merged(cls, parts: Iterable[Latency]) -> Latency:
        """The sum of histograms, in the counts form (no HdrHistogram is allocated)."""
        import numpy as np

        found = [(p._nonempty(), p.count, p.clamped) for p in parts]
        total, clamped = sum(n for _, n, _ in found), sum(c for *_, c in found)
        filled = [nonempty for nonempty, n, _ in found if n]
        if len(filled) <= 1:  # nothing to add: the arrays are never written to
            index, counts = filled[0] if filled else (np.zeros(0, np.int64),) * 2
            return cls._read(index, counts, total, clamped)
        low = min(int(index[0]) for index, _ in filled)
        dense = np.zeros(max(int(index[-1]) for index, _ in filled) + 1 - low, np.int64)
        for index, counts in filled:  # a histogram's indexes are distinct: += adds each once
            dense[index - low] += counts
        at = np.flatnonzero(dense)
        return cls._read(at + low, dense[at], total, clamped)
