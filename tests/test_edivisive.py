"""E-divisive means (analysis/edivisive.py) answers as apache-otava 0.8.0 does: on otava's
answers stored once (tests/fixtures/edivisive_otava.json, written by tests/otava_reference.py),
and, with the network, on fresh series against otava itself."""

from __future__ import annotations

import json

import pytest

from otava_reference import FIXTURE, cases, otava_change_points
from perfpages.analysis.edivisive import change_points


def test_agrees_with_otavas_stored_answers() -> None:
    stored = json.loads(FIXTURE.read_text())
    assert len(stored["series"]) == len(stored["change_points"]) >= 40
    assert sum(map(len, stored["change_points"])) > 30  # steps found, not only "none"
    for values, expected in zip(stored["series"], stored["change_points"], strict=True):
        assert change_points(values, stored["window"], stored["max_pvalue"]) == expected, values


@pytest.mark.parametrize("values", [[], [1.0], [1.0, 5.0], [3.0] * 40, [0.0] * 120])
def test_too_short_or_constant_has_no_change_point(values: list[float]) -> None:
    assert change_points(values) == []


def test_a_clear_step_starts_a_segment_where_it_is() -> None:
    low = [1.0, 1.1, 0.9, 1.05, 0.95] * 6
    high = [v + 1 for v in low]
    assert change_points(low + high) == [30]
    assert change_points([v * 1000 for v in low + high]) == [30]  # scale does not matter
    # 240 points: steps in several of the half-overlapping 50-point windows
    long = low + high + low + high + low + low + high + low
    assert change_points(long) == [30, 60, 90, 120, 180, 210]


@pytest.mark.network
def test_agrees_with_otava_on_fresh_series() -> None:
    series = cases(seed=2014, count=120, longest=400)
    assert [change_points(s) for s in series] == otava_change_points(series)
