"""Latency reads histograms with numpy: every answer must equal hdrh's own (slow) one."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from hdrh.histogram import HdrHistogram

from perfpages.archive.histogram import (
    HIGHEST_US,
    LOWEST_US,
    PERCENTILES,
    SIGNIFICANT_FIGURES,
    HistogramError,
    Latency,
)


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
    from perfpages.analysis.rows import round_metrics
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


def _recorded(seed: int) -> Latency:
    rng = random.Random(seed)
    latency = Latency()
    scale = [0.0005, 0.01, 1.0, 100.0, 10_000.0, 5_000_000.0][seed % 6]
    for _ in range(rng.choice([1, 3, 200, 2000])):
        latency.record_ms(rng.lognormvariate(0, 1.5) * scale, rng.randint(1, 500))
    return latency


def _answers(hdr: HdrHistogram) -> tuple[object, ...]:
    """What perfpages reads of a histogram, asked of hdrh itself."""
    percentiles = [0.0, 1.0, 50.0, 90.0, 99.0, 99.99, 100.0]
    return (hdr.get_total_count(), [hdr.get_value_at_percentile(p) / 1000 for p in percentiles],
            hdr.get_mean_value() / 1000, hdr.get_max_value() / 1000,
            hdr.get_lowest_equivalent_value(hdr.get_min_value()) / 1000)


def _ours(latency: Latency) -> tuple[object, ...]:
    percentiles = [0.0, 1.0, 50.0, 90.0, 99.0, 99.99, 100.0]
    summary = latency.summary_ms()
    return (latency.count, latency.percentiles_ms(percentiles), summary["mean"],
            summary["max"], latency.min_ms())


@pytest.mark.parametrize("seed", range(12))
def test_decoded_and_merged_histograms_answer_as_hdrh(seed: int) -> None:
    """Decoding and merging keep the counters in numpy, never in an HdrHistogram: each answer
    still equals hdrh's for the same histogram, and encoding gives the bytes hdrh would."""
    parts = [_recorded(seed * 3 + i) for i in range(3)]
    decoded = [Latency.decode(p.encode(), clamped=i) for i, p in enumerate(parts)]
    for part, copy in zip(parts, decoded, strict=True):
        assert _ours(copy) == _answers(HdrHistogram.decode(part.encode().encode()))
        assert copy.max_ms() == part.hdr.get_max_value() / 1000
    reference = HdrHistogram(LOWEST_US, HIGHEST_US, SIGNIFICANT_FIGURES)
    for part in parts:
        reference.add(part.hdr)
    merged = Latency.merged(decoded)
    assert _ours(merged) == _answers(reference) and merged.clamped == 0 + 1 + 2
    assert Latency.merged(parts[:1] + decoded[1:]).encode() == reference.encode().decode()
    # merging into each form: a decoded one stays decoded, a recorded one records on
    into_read, into_hdr = Latency.decode(parts[0].encode()), Latency()
    for part in decoded[1:]:
        into_read.merge(part)
    into_hdr.merge(decoded[0])
    into_hdr.merge(into_read)
    assert _ours(into_read) == _ours(merged)
    assert into_hdr.encode() == Latency.merged([decoded[0], *decoded]).encode()
    into_read.record_us(7)  # the HdrHistogram is built from the counters, then recorded into
    lowest = merged.min_ms()
    assert lowest is not None and into_read.count == merged.count + 1
    assert into_read.min_ms() == min(lowest, 0.007)


def test_an_empty_histogram_decodes_and_merges_empty() -> None:
    empty = Latency.decode(Latency().encode(), clamped=2)
    assert (empty.count, empty.summary_ms(), empty.min_ms(), empty.max_ms()) == (0, {}, None,
                                                                                  None)
    merged = Latency.merged([empty, Latency()])
    assert merged.count == 0 and merged.clamped == 2 and merged.percentiles_ms([50]) == []
    assert merged.percentile_ms(50) == 0.0 == Latency().hdr.get_value_at_percentile(50)
    assert Latency.decode(merged.encode()).count == 0


@pytest.mark.parametrize("text", ["", "AAAA", "not base64!", Latency().encode()[:-8] + "AAAAAAAA"])
def test_a_corrupt_encoding_is_a_histogram_error(text: str) -> None:
    with pytest.raises(HistogramError, match="not a valid encoded HdrHistogram"):
        Latency.decode(text)
