"""Latency.summary_ms is computed with numpy: it must equal hdrh's own (slow) answers."""

from __future__ import annotations

import random

import pytest

from perfpages.archive.histogram import PERCENTILES, Latency


@pytest.mark.parametrize("seed", range(12))
def test_summary_equals_hdrh(seed: int) -> None:
    rng = random.Random(seed)
    latency = Latency()
    scale = [0.0005, 0.01, 1.0, 100.0, 10_000.0, 5_000_000.0][seed % 6]  # ms, incl. clamped
    for _ in range(rng.choice([1, 3, 200, 2000])):
        latency.record_ms(rng.lognormvariate(0, 1.5) * scale, rng.randint(1, 500))
    hdr = latency.hdr
    expected = {name: hdr.get_value_at_percentile(p) / 1000 for name, p in PERCENTILES.items()}
    expected |= {"mean": hdr.get_mean_value() / 1000, "max": hdr.get_max_value() / 1000}
    assert latency.summary_ms() == expected


def test_empty_histogram_has_no_summary() -> None:
    assert Latency().summary_ms() == {}
