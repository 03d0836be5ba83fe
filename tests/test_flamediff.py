"""Differential flame graphs from archived stacks: colours follow the change, widths the head,
what the head no longer runs still shows, and the SVG is well-formed and escaped."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections import Counter
from dataclasses import replace
from pathlib import Path

import pytest

from perfpages.archive.stacks import Stack, by_function, fold, parse, read_stacks, stacks_path
from perfpages.archive.writer import ArchiveWriter
from perfpages.errors import AnalysisError
from perfpages.site.flamediff import LESS, MORE, WIDTH, diff_svg, frame_changes
from perfpages.testing import Spec, generate

SVG = "{http://www.w3.org/2000/svg}"
BASE = parse("""\
process 11:"python app.py";main (app.py:1);handle (app.py:10);query (db.py:5) 500
process 11:"python app.py";main (app.py:1);handle (app.py:10);log (logging/x.py:9) 200
process 11:"python app.py";main (app.py:1);handle (app.py:11);render (app.py:30) 100
process 11:"python app.py";main (app.py:1);idle (sel.py:4) 200
""")
# The head (another pid, other line numbers): query halves, render doubles, log is gone,
# idle stays, and a cache appears.
HEAD = parse("""\
process 99:"python app.py";main (app.py:2);handle (app.py:12);query (db.py:6) 250
process 99:"python app.py";main (app.py:2);handle (app.py:13);render (app.py:31) 200
process 99:"python app.py";main (app.py:2);handle (app.py:13);cache (c.py:3) 50
process 99:"python app.py";main (app.py:2);idle (sel.py:4) 200
""")


def frames(image: str) -> dict[str, list[dict[str, str]]]:
    """Each drawn frame by its tooltip's first line: its rect's attributes and tooltip."""
    svg = ET.fromstring(image[image.index("<svg"):image.index("</svg>") + 6])
    out: dict[str, list[dict[str, str]]] = {}
    for g in svg.iter(f"{SVG}g"):
        title, rect = g.find(f"{SVG}title"), g.find(f"{SVG}rect")
        if title is not None and rect is not None:
            name = (title.text or "").split("\n")[0]
            out.setdefault(name, []).append({**rect.attrib, "tip": title.text or ""})
    return out


def test_stacks_fold_and_merge_by_function() -> None:
    assert parse(fold(BASE)) == BASE
    assert fold(BASE).splitlines() == sorted(fold(BASE).splitlines())
    merged = by_function(BASE)
    assert merged[("process", "main (app.py)", "handle (app.py)", "query (db.py)")] == 500
    assert sum(merged.values()) == sum(BASE.values()) == 1000


def test_changes_are_red_and_blue_and_widths_are_the_heads() -> None:
    image = diff_svg(BASE, HEAD, "base → head")
    drawn = frames(image)
    head = {name: boxes[0] for name, boxes in drawn.items()}  # the head's graph comes first
    assert head["render (app.py)"]["fill"] == MORE  # 10 % → 28.6 % of the samples
    assert head["query (db.py)"]["fill"] == LESS  # 50 % → 35.7 %
    assert head["cache (c.py)"]["fill"] == MORE and "new in head" in head["cache (c.py)"]["tip"]
    assert head["all"]["fill"] == "currentColor"  # 100 % of both: no change
    assert "base: 20 % · head: 28.6 %" in head["idle (sel.py)"]["tip"]
    # Widths are the head's shares; a frame's callees fill it exactly.
    width = float(head["all"]["width"])
    assert width == pytest.approx(WIDTH)
    assert float(head["query (db.py)"]["width"]) == pytest.approx(width * 250 / 700, abs=0.01)
    kids = ("query (db.py)", "render (app.py)", "cache (c.py)")
    assert sum(float(head[k]["width"]) for k in kids) == pytest.approx(
        float(head["handle (app.py)"]["width"]), abs=0.02)
    # Logging is gone from the head: the base's shape is drawn too, it shows there in blue.
    assert "log (logging/x.py)" in drawn and drawn["log (logging/x.py)"][0]["fill"] == LESS
    assert "gone in head" in drawn["log (logging/x.py)"][0]["tip"]
    assert len(drawn["render (app.py)"]) == 2


def test_per_call_scales_both_graphs_alike() -> None:
    # 1000 samples at 100 Hz over 1,000 calls: 10 ms a call; the head 7 ms.
    image = diff_svg(BASE, HEAD, "t", base_calls=1000, head_calls=1000)
    drawn = frames(image)
    head_all, base_all = drawn["all"]
    assert float(base_all["width"]) == pytest.approx(WIDTH)
    assert float(head_all["width"]) == pytest.approx(0.7 * WIDTH)  # 7 of 10 ms
    assert head_all["fill"] == LESS and "base: 10 ms · head: 7.00 ms" in head_all["tip"]
    assert "−30 %" in head_all["tip"]
    # Per call, the idle frame holds its 2 ms: neutral, though its share grew.
    assert drawn["idle (sel.py)"][0]["fill"] == "currentColor"
    assert "7.00 ms per call (base 10 ms, −30 %)" in image


def test_nothing_gone_draws_one_graph_unless_asked() -> None:
    same = Counter({stack: 2 * n for stack, n in BASE.items()})
    drawn = frames(diff_svg(BASE, same, "A/A"))
    assert all(len(boxes) == 1 and boxes[0]["fill"] == "currentColor"
               for boxes in drawn.values())
    assert all(len(b) == 2 for b in frames(diff_svg(BASE, same, "A/A", base_view=True)).values())


def test_frame_names_and_title_are_escaped() -> None:
    odd = Counter({("<script>x</script> (a&b.py:1)", 'q"uote (b.py:2)'): 5})
    image = diff_svg(odd, odd, 't<&>"\nsecond line')
    assert "<script>" not in image and "&lt;script&gt;" in image and "\n" not in image
    drawn = frames(image)  # parses as XML
    assert "<script>x</script> (a&b.py)" in drawn and 'q"uote (b.py)' in drawn
    assert ET.fromstring(image[image.index("<svg"):image.index("</svg>") + 6]).find(
        f"{SVG}title").text == 't<&>" second line'
    assert re.search(r'<svg class="perfpages-flame" xmlns="http://www.w3.org/2000/svg" '
                     r'viewBox="0 0 720 \d+"', image)


def test_frame_changes_rank_gains_and_losses() -> None:
    changes = frame_changes(BASE, HEAD, top=None)
    by_name = {c.frame: c for c in changes}
    assert changes[0].frame == "log (logging/x.py)" and changes[0].head == 0
    assert by_name["render (app.py)"].change > 0 and by_name["query (db.py)"].change < 0
    assert by_name["cache (c.py)"].ratio is None and by_name["query (db.py)"].ratio == (
        pytest.approx(250 / 700 / 0.5 - 1))
    assert by_name["log (logging/x.py)"].text() == ("20 %", "0 %", "−20 points", "gone in head")
    assert "main (app.py)" not in by_name  # self time: none in either
    inclusive = frame_changes(BASE, HEAD, base_calls=100, head_calls=100, by="inclusive", top=3)
    # −30 ms a call each (a tie goes by name), ahead of query's −25 ms
    assert [c.frame for c in inclusive] == ["handle (app.py)", "main (app.py)", "process"]
    assert inclusive[0].text() == ("80 ms", "50 ms", "−30 ms", "−37.5 %")


def test_bad_input_is_one_line() -> None:
    with pytest.raises(AnalysisError, match="calls given for one profile only"):
        diff_svg(BASE, HEAD, "t", base_calls=10)
    with pytest.raises(AnalysisError, match="head_calls is 0"):
        frame_changes(BASE, HEAD, base_calls=10, head_calls=0)
    with pytest.raises(AnalysisError, match="the head profile has no py-spy samples"):
        diff_svg(BASE, Counter(), "t")


def test_stacks_are_read_back_plain_or_compressed(tmp_path: Path) -> None:
    source = generate(tmp_path / "source", Spec(rounds=1, windows=1, distinct=2))
    writer = ArchiveWriter.create(tmp_path / "results", replace(source.manifest, files={}))
    big: Counter[Stack] = Counter({("main (a.py:1)", f"f{i} (b.py:{i})"): i + 1
                                   for i in range(10_000)})  # past COMPRESS_ABOVE: a .gz
    writer.write_file(stacks_path("profile", "v1.0"), fold(BASE))
    writer.write_file(stacks_path("profile", "v 2"), fold(big))
    run = writer.run_dir
    assert (run / "diagnostics/profile/v-2/stacks.folded.gz").is_file()
    assert read_stacks(run, "profile", "v1.0") == BASE
    assert read_stacks(run, "profile", "v 2") == big
    assert read_stacks(run, "profile", "v3") is None and read_stacks(run, "calls", "v1.0") is None
    writer.abandon()
