"""The saturation knee: doubling the clients adds little throughput while p95 climbs."""

from __future__ import annotations

from perfpages.analysis.saturation import knees, line
from perfpages.analysis.tidy import Tidy


def frame(points: dict[int, tuple[float, float]]) -> Tidy:
    rows = []
    for clients, (tput, p95) in points.items():
        for rnd in (1, 2, 3):
            for metric, value in (("throughput", tput * (1 + rnd / 1000)), ("p95", p95)):
                rows.append({"run": "r", "kind": "measure", "block": "mix", "label": "pg18",
                             "round": rnd, "parameters": f"clients={clients}",
                             "metric": metric, "value": value, "clients": clients})
    return Tidy(rows)


def test_the_knee_is_flagged_where_throughput_stalls_and_p95_climbs() -> None:
    found = knees(frame({1: (1000, 1.0), 8: (6000, 1.5), 16: (6300, 3.0), 32: (6400, 6.5)}))
    assert [(k["from"], k["to"], k["flagged"]) for k in found] == [
        (1, 8, False), (8, 16, True), (16, 32, True)]
    assert "⚠ saturated" in line(found[1]) and "⚠" not in line(found[0])


def test_no_flag_while_throughput_still_grows_or_p95_holds() -> None:
    scaling = knees(frame({8: (6000, 1.5), 16: (11000, 3.0)}))  # +83 % throughput
    flat = knees(frame({8: (6000, 1.5), 16: (6100, 1.6)}))  # plateau, p95 steady
    assert not scaling[0]["flagged"] and not flat[0]["flagged"]


def test_steps_that_do_not_double_are_not_judged() -> None:
    assert knees(frame({8: (6000, 1.5), 12: (6000, 3.0)})) == []
