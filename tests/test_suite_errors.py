"""A suite's own mistakes are one line naming what to fix, never a traceback or a silent run."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from perfpages import HttpCase, HttpTurn, Load, PerfpagesError, Request, Script
from perfpages.run.httpblock import HttpBlocks

TURN = HttpTurn("http://127.0.0.1:1", window_s=1.0, warmup_s=0.0, seed=1)


@pytest.mark.parametrize(("kwargs", "says"), [
    ({}, "needs a path or a builtin"),
    ({"path": Path("x.sql"), "builtin": "select-only"}, "needs a path or a builtin"),
    ({"builtin": "select-only", "weight": 0}, "weight must be at least 1"),
])
def test_a_script_names_what_is_missing(kwargs: dict, says: str) -> None:
    with pytest.raises(PerfpagesError, match=says):
        Script(**kwargs)


def test_a_load_factory_that_raises_fails_its_case_in_one_line() -> None:
    case = HttpCase({"call": "x"}, lambda turn: turn.no_such_field)
    with pytest.raises(PerfpagesError) as err:
        HttpBlocks._load(case, TURN)
    assert "load factory failed: AttributeError" in str(err.value)
    assert "case call=x" in str(err.value) and "\n" not in str(err.value)


def test_a_load_factory_must_return_a_load() -> None:
    with pytest.raises(PerfpagesError, match=r"returned str, not a perfpages\.Load"):
        HttpBlocks._load(HttpCase({"call": "x"}, lambda turn: "GET /"), TURN)
    kept = HttpBlocks._load(HttpCase({"call": "x"}, lambda turn: Load(
        [Request(turn.base_url + "/")], duration_s=1.0), samples=True), TURN)
    assert kept.samples


def _http_suite(block_labels: tuple[str, ...]):  # type: ignore[no-untyped-def]
    from perfpages import DataSet, HttpBlockSpec, LabelSpec, Service, Suite

    case = HttpCase({"call": "x"}, lambda turn: None)
    return Suite("s", "s", labels=(LabelSpec("a"), LabelSpec("b")),
                 blocks=(HttpBlockSpec("all", (case,)),
                         HttpBlockSpec("only-b", (case,), labels=block_labels)),
                 dataset=DataSet("none", 0, lambda c, r, s: None),
                 service=Service(spec=lambda *a: None))


def test_selecting_labels_leaves_out_blocks_that_run_none_of_them() -> None:
    suite = _http_suite(("b",))
    assert [b.name for b in suite.select(["a"], None).blocks] == ["all"]
    with pytest.raises(PerfpagesError, match="block 'only-b' runs only b, and --labels leaves"):
        suite.select(["a"], ["only-b"])
    with pytest.raises(PerfpagesError, match="names unknown labels: c"):
        _http_suite(("c",)).check_block_labels()


def test_choosing_blocks_keeps_only_the_labels_they_run() -> None:
    """A label no chosen block runs would have no windows and fail the run at its end."""
    suite = _http_suite(("b",))
    assert [x.name for x in suite.select(None, ["only-b"]).labels] == ["b"]
    assert [x.name for x in suite.select(None, ["all", "only-b"]).labels] == ["a", "b"]
    with pytest.raises(PerfpagesError, match="label 'a' runs in none of the chosen blocks") as e:
        suite.select(["a", "b"], ["only-b"])
    assert e.value.key == "--labels"
    unused = replace(suite, blocks=suite.blocks[1:])  # no block runs 'a' at all
    with pytest.raises(PerfpagesError, match="label 'a' runs in none of the suite's blocks"):
        unused.select(None, None)
