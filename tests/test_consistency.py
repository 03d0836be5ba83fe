"""Blocks of one run that measured the same configuration, side by side on the run's page: the
same label and parameters grouped only when their work per call agrees too."""

from __future__ import annotations

from pathlib import Path

import pytest

from perfpages.analysis import consistency
from perfpages.analysis.decision import Cell
from perfpages.archive.manifest import Manifest
from perfpages.archive.reader import open_run
from perfpages.site import header, runmachine
from perfpages.site.store import RunStore
from v2runs import write_v2

CASE = "call=lookup, callers=32"
QAG = "2026-12-05-queryapigate"  # archived: calls and profile both ran lookup-plain at 32


@pytest.fixture(scope="module")
def manifest(tmp_path_factory: pytest.TempPathFactory) -> Manifest:
    root = tmp_path_factory.mktemp("results")
    return open_run(root / write_v2(root, blocks=("calls", "threads", "profile"))).manifest


def _cells(work: dict[str, float], throughput: dict[str, float],
           pkey: str = CASE) -> consistency.Cells:
    out: consistency.Cells = {}
    for block, value in throughput.items():
        out[block, pkey, "base", "throughput"] = Cell((value * 0.98, value, value * 1.03))
        if block in work:
            out[block, pkey, "base", "statements"] = Cell((work[block],) * 3)
    return out


def _blocks(cells: consistency.Cells) -> dict[str, tuple[list[str], set[str]]]:
    out: dict[str, tuple[list[str], set[str]]] = {}
    for block, pkey, _, metric in cells:
        params, present = out.setdefault(block, ([], set()))
        params.append(pkey)
        present.add(metric)
    return out


def test_blocks_measuring_one_configuration_are_side_by_side(manifest: Manifest) -> None:
    """441/s, 391/s and 388/s for one configuration: each block's cell, spread −12 %."""
    cells = _cells({"calls": 4.0, "threads": 4.0, "profile": 4.1},
                   {"calls": 441.0, "threads": 391.0, "profile": 388.0})
    rows = consistency.rows(manifest, cells, _blocks(cells))
    assert len(rows) == 1
    row = rows[0]
    assert (row["parameters"], row["label"], row["metric"]) == (CASE, "base", "throughput")
    assert [b["block"] for b in row["blocks"]] == ["calls", "threads", "profile"]
    assert [b["median"] for b in row["blocks"]] == [441.0, 391.0, 388.0]
    assert row["spread_percent"] == pytest.approx((388 / 441 - 1) * 100)
    page = "\n".join(runmachine.section({"consistency": rows}))
    assert "### Consistency across blocks" in page
    assert "calls: 441 (432–454) · threads: 391 (383–403) · profile: 388 (380–400)" in page
    assert "| −12 % |" in page


def test_same_parameters_are_not_enough(manifest: Manifest) -> None:
    """Another workload at the same parameters (its statements per call differ), cells without
    a work counter, and cells without parameters are never grouped."""
    other = _cells({"calls": 4.0, "threads": 9.0}, {"calls": 441.0, "threads": 391.0})
    assert consistency.rows(manifest, other, _blocks(other)) == []
    unknown = _cells({}, {"calls": 441.0, "threads": 391.0})
    assert consistency.rows(manifest, unknown, _blocks(unknown)) == []
    bare = _cells({"calls": 4.0, "threads": 4.0}, {"calls": 441.0, "threads": 391.0}, pkey="")
    assert consistency.rows(manifest, bare, _blocks(bare)) == []
    # two of three agree: those two are the row
    some = _cells({"calls": 4.0, "threads": 9.0, "profile": 4.0},
                  {"calls": 441.0, "threads": 391.0, "profile": 388.0})
    assert [b["block"] for b in consistency.rows(manifest, some, _blocks(some))[0]["blocks"]] \
        == ["calls", "profile"]


def test_a_page_reading_such_blocks_names_it(tmp_path: Path) -> None:
    """A page reading two blocks of the archived QueryAPIGate run that measured the same
    configuration gets a line among the box's first: how far apart they are, at worst."""
    root = Path(__file__).resolve().parent.parent / "results"
    runs = {"qag": RunStore(root, tmp_path / "cache").get(QAG)}
    links = {"qag": "`qag`"}
    assert header.across_blocks(runs, links, {("qag", "calls")}) == []
    [line] = header.across_blocks(runs, links, {("qag", "calls"), ("qag", "profile")})
    assert line.startswith("    - `qag`: blocks calls, profile measured the same configuration "
                           "(15 cells in more than one block), medians up to −24 % apart "
                           "(0.43.0-quiet, p99, call=lookup-plain, callers=32)")
    box = header.box(runs, claims=(), blocks={("qag", "calls"), ("qag", "profile")})
    assert box.split("??? note")[0].count("(15 cells in more than one block)") == 1
