"""Latency.summary_ms is computed with numpy: it must equal hdrh's own (slow) answers."""

from __future__ import annotations

import random
from pathlib import Path

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


def test_min_is_a_latency_metric_from_the_histogram(tmp_path: Path) -> None:
    """`min`, the fastest request of a round (a latency floor), from the merged histogram of
    its windows, in every run however old: a table row and a claim like `max`."""
    from perfpages.analysis.metric import info, metrics_title
    from perfpages.archive.frame import round_metrics
    from perfpages.archive.window import Window
    from perfpages.site.claims import Conditions
    from perfpages.site.pins import Pins
    from perfpages.site.store import RunStore
    from perfpages.testing import generate

    windows = []
    for floor in (44.0, 41.5):  # a Nagle delay under every request
        latency = Latency()
        for extra in range(50):
            latency.record_ms(floor + extra * 0.1)
        windows.append(Window("b", "l", 1, {}, "", 1.0, requests=50, codes={"200": 50},
                              latency=latency))
    metrics = round_metrics(windows)
    assert metrics["min"] == pytest.approx(41.5, abs=0.05) and metrics["min"] <= metrics["p50"]
    assert Latency().min_ms() is None and "min" not in round_metrics(windows[:0])
    assert info("min").unit == "ms" and info("min").higher_is_better is False
    assert metrics_title(["min", "max"]) == "min and max latency"
    assert "min" not in windows[0].to_json()["latency"]  # never archived: computed when read

    generate(tmp_path)
    pins = Pins({"d": RunStore(tmp_path).get("2026-11-01-synthetic-demo")})
    cells = pins.select(metric="min", block="one-caller", label="v1.1")
    assert cells and all(0 < f.cell.median <= 1.3 for f in cells)
    claim = Conditions(pins).below("min", 2, unit="ms", block="one-caller", label="v1.1")
    assert claim.holds and claim.expected == "min below 2.00 ms in every cell"
