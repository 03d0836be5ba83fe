"""One reading of a run: `bench report`, `bench cite`, a page's header and the runs index say the
same list of what a reader must know, and the site's A/A verdicts are the reading's, for every
archived run and the synthetic ones."""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

import pytest

from perfpages.analysis import noise, report
from perfpages.analysis.certification import Found
from perfpages.analysis.cite import cite
from perfpages.analysis.decision import Rule
from perfpages.analysis.reading import Reading, aa_changes, read
from perfpages.analysis.text import prose
from perfpages.analysis.tidy import Tidy
from perfpages.analysis.warnings import KINDS, summary
from perfpages.archive import preflight
from perfpages.archive.reader import Run, find_runs, open_run
from perfpages.site import escape, header, verdicts
from perfpages.site.pins import Pins
from perfpages.site.store import RunStore
from sites import make_results
from v2runs import write_v2

ROOT = Path(__file__).resolve().parent.parent
ARCHIVED = [d for root in (ROOT / "results", ROOT / "tests" / "fixtures" / "results")
            for d in find_runs(root)]
SYNTHETIC = {"2026-12-01-synthetic-noisy": dict(aa_shift=0.08, floors=(1000.0, 400.0), again=3,
                                                blocks=("callers", "pages")),
             "2026-12-01-synthetic-calm": dict(floors=(1000.0, 1010.0)),
             "2026-12-01-synthetic-alone": dict(aa=False),
             "2026-12-01-synthetic-v21": dict(rule={"test": "wilcoxon", "alpha": 0.01,
                                                    "version": "2.1", "certify_alpha": 0.01})}


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    root = make_results(tmp_path_factory.mktemp("results"))  # v1 runs, one corrupt or odd
    for run_id, options in SYNTHETIC.items():
        write_v2(root, run_id, **options)  # type: ignore[arg-type]
    return list(find_runs(root))


def _check(run_dir: Path, cache: Path) -> None:
    """The report's warnings, the citation's, the header's items (made afresh, then read back
    from the cache by another build) and the header's box: one list, in one order."""
    run = open_run(run_dir)
    if run.manifest.status != "complete" or not run.measured:
        return
    data = report.build(run)
    store = RunStore(run_dir.parent, cache)
    items = header.items(store.get(run_dir.name, run), run)
    assert data["warnings"] == [i.text for i in items], run_dir.name
    assert [i["kind"] for i in data["items"]] == [i.kind for i in items]
    assert [i.rank for i in items] == sorted(i.rank for i in items)  # ranked
    cached = RunStore(run_dir.parent, cache).get(run_dir.name)
    again = header.items(cached)  # from the cache
    assert again == items
    _check_aa(run, Pins({"r": cached}), data)
    _check_busy(run_dir, data)
    box = header.box({"r": store.get(run_dir.name)})
    # The box ranks and folds (site.header.box): every item of the one list is in it, word for
    # word, but "not certified" ones, which its certification line or one line per run names.
    for i in items:
        if i.kind == "uncertified":
            assert i.block is None or escape.md(str(i.block)) in box, (run_dir.name, i.text)
        elif i.kind == "scope" and run.manifest.source is not None:
            # a transcribed run's scope is said once, with its source, by the note below the box
            note = header.transcribed({"r": store.get(run_dir.name)})
            assert "Transcribed, not measured here" in note and "<code>r</code>" in note
            assert escape.md(run.manifest.source.title) in note, run_dir.name
        else:
            assert f": {escape.md(i.text)}\n" in box, (run_dir.name, i.text)
    cited = cite(run, "", data)
    assert all(f"- {prose(w)}\n" in cited for w in data["warnings"])
    counted = {"drift", "faults", "busy", "windows", "generator", "uncertified"}
    assert (summary(items) == "—") == (not any(i.kind in counted for i in items))
    m = run.manifest
    if m.method.rule:  # method v2: drift is a fact on the page and in the floors, not a warning
        assert not any(i.kind == "drift" for i in items)
    else:  # v1: every flagged floor of every kind is a warning
        assert sum(i.kind == "drift" for i in items) == sum(d["flagged"] for d in data["drift"])


def _verdicts(found: list[Found]) -> dict[tuple[str, str, str, str], str]:
    return {(b, p, pair, c.metric): repr((c.verdict, c.clear, c.percent, c.p, c.resolution))
            for b, p, pair, c in found}


def _check_aa(run: Run, pins: Pins, data: dict[str, object]) -> None:
    """The site's A/A cells (from the cached reading, by block and metric) are the ones
    `aa_changes` finds in the archive, with the same verdicts; the report's noise floor is
    made of the same cells."""
    mine = _verdicts(aa_changes(run, Tidy.of(run), Rule.of(run.manifest.method)))
    site: dict[tuple[str, str, str, str], str] = {}
    for block, metric in dict.fromkeys((k[0], k[3]) for k in mine):
        site.update(_verdicts(verdicts.aa_found(pins, "r", block, metric)))
    assert site == mine, run.manifest.id
    shown = _verdicts(verdicts.aa_found(pins, "r"))  # a noise floor's default metrics
    assert shown.items() <= mine.items()
    assert bool(mine) == bool(noise.same_builds(run.manifest))
    floor = data["noise_floor"]
    assert isinstance(floor, list)
    for row in floor:
        cells = verdicts.aa_found(pins, "r", row["block"], row["metric"])
        ours = [r for r in noise.rows(cells) if r.pair == row["pair"]]
        assert [(r.clear, len(r.changes)) for r in ours] == [(row["clear"], row["cells"])]


BUSY_LINE = re.compile(r"(?P<block>.+): the machine was busy in (?P<busy>\d+) of (?P<windows>\d+) "
                       r"windows \(.*\)(?:; (?P<again>\d+) measured again(?:, (?P<still>\d+) "
                       r"of them busy again)?)?")


def _check_busy(run_dir: Path, data: dict[str, object]) -> None:
    """The one line per block on busy windows states what results.jsonl holds: of the measured
    windows that recorded the machine, those of the rounds and how many were busy, those
    measured again and how many were busy again; the run page's table sums to the same."""
    path = next(p for p in (run_dir / "results.jsonl", run_dir / "results.jsonl.gz")
                if p.exists())
    text = (gzip.decompress(path.read_bytes()) if path.suffix == ".gz"
            else path.read_bytes()).decode()
    counts: dict[str, list[int]] = {}  # block -> windows, busy, again, busy again
    for line in text.splitlines():
        w = json.loads(line)
        if w.get("kind", "measure") == "measure" and w.get("machine") is not None:
            entry = counts.setdefault(w["block"], [0, 0, 0, 0])
            again = w.get("attempt", 1) > 1
            entry[2 * again] += 1
            entry[2 * again + 1] += preflight.busy(w["machine"])
    stated = {}
    items = data["items"]
    assert isinstance(items, list)
    for item in items:
        if item["kind"] == "windows":
            m = BUSY_LINE.fullmatch(item["text"])
            assert m, item["text"]
            stated[m["block"]] = [int(m["windows"]), int(m["busy"]), int(m["again"] or 0),
                                  int(m["still"] or 0)]
    assert stated == {b: c for b, c in counts.items() if c[1] or c[2]}, run_dir.name
    table: dict[str, list[int]] = {}
    load = data["machine_load"]
    assert isinstance(load, list)
    for x in load:
        entry = table.setdefault(x["block"], [0, 0, 0, 0])
        for i, key in enumerate(("windows", "busy", "again", "busy_again")):
            entry[i] += x[key]
    assert table == counts


@pytest.mark.parametrize("run_dir", ARCHIVED, ids=[d.name for d in ARCHIVED])
def test_archived_runs_say_one_list(run_dir: Path, tmp_path: Path) -> None:
    _check(run_dir, tmp_path / "cache")


def test_synthetic_runs_say_one_list(synthetic: list[Path], tmp_path: Path) -> None:
    checked = 0
    for run_dir in synthetic:
        try:
            open_run(run_dir)
        except Exception:  # the corrupt fixture: no reading at all
            continue
        _check(run_dir, tmp_path / "cache")
        checked += 1
    assert checked >= len(SYNTHETIC) + 1


def test_a_reading_is_plain_data_that_round_trips(synthetic: list[Path]) -> None:
    run_dir = next(d for d in synthetic if d.name == "2026-12-01-synthetic-noisy")
    seen = read(open_run(run_dir))
    assert Reading.from_json(seen.to_cache()) == seen  # a cache entry: with its A/A cells
    assert seen.aa and "aa" not in seen.to_json()  # the report's JSON: without them
    assert seen.drift and seen.drift[0]["flagged"]  # a fact of the floors, kept
    assert {i.kind for i in seen.items} <= set(KINDS)
    assert all(i.severity in ("warning", "caution") for i in seen.items)
