"""The suite API's instructions option: what an instructions block becomes, what it refuses,
and its progress estimate counted in calls (no valgrind needed)."""

from __future__ import annotations

import pytest

from perfpages import HttpBlockSpec, HttpCase, Instructions, PerfpagesError
from perfpages.archive.manifest import Method
from perfpages.run import callgrind
from perfpages.run.httpblock import case_seconds


def case(call: str) -> HttpCase:
    return HttpCase({"call": call, "callers": 32}, lambda turn: None)


def test_an_instructions_block_counts_calls() -> None:
    block = HttpBlockSpec("ins", (case("a"), case("b")),
                          instructions=Instructions(calls=200, callers=2, warmup=10, idle_s=0))
    assert block.metrics == ("instructions",)
    # the windows' parameters say what ran, not the cases' own callers
    assert [c.params for c in block.cases] == [
        {"call": "a", "callers": 2, "calls": 200}, {"call": "b", "callers": 2, "calls": 200}]
    method = Method(rounds=8, order="pairs", seed=1, warmup_s=0.5, window_s=2.0)
    seconds = case_seconds(block, method)
    assert seconds == callgrind.estimate_s(block.instructions or Instructions(), 2)
    assert seconds == callgrind.START_ESTIMATE_S + 2 * 210 * callgrind.SECONDS_PER_CALL / 2
    # twice the calls, twice the calls' share of the estimate; the window length is not read
    longer = HttpBlockSpec("ins", (case("a"), case("b")),
                           instructions=Instructions(calls=410, callers=2, warmup=10, idle_s=0))
    assert case_seconds(longer, method) - callgrind.START_ESTIMATE_S == pytest.approx(
        2 * (seconds - callgrind.START_ESTIMATE_S))
    idle = HttpBlockSpec("ins", (case("a"), case("b")),
                         instructions=Instructions(calls=200, callers=2, warmup=10, idle_s=5))
    assert case_seconds(idle, method) == seconds + 2 * 5  # each window's idle rate


@pytest.mark.parametrize("kwargs, words", [
    ({"duet": True, "metrics": ("p50",)}, "cannot take a duet"),
    ({"flamegraph": True}, "cannot take a flame graph"),
    ({"engine": "locust"}, "cannot take the Locust engine"),
])
def test_what_an_instructions_block_refuses(kwargs: dict[str, object], words: str) -> None:
    with pytest.raises(PerfpagesError, match=words):
        HttpBlockSpec("ins", (case("a"),), instructions=Instructions(), **kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize("kwargs", [{"calls": 0}, {"callers": 0}, {"calls": 2, "callers": 3},
                                    {"warmup": -1}, {"idle_s": -1}, {"idle_s": 601}])
def test_bad_instructions_are_refused_in_one_line(kwargs: dict[str, int]) -> None:
    with pytest.raises(PerfpagesError, match="give calls >= callers >= 1"):
        Instructions(**kwargs)
