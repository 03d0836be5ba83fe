"""py-spy on a real Python process: categories add up, the SVG is escaped and self-contained."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from perfpages.archive.stacks import by_function, fold, parse
from perfpages.errors import PerfpagesError
from perfpages.run.profile import Recorder, shares, svg
from perfpages.site.flamediff import LESS, MORE, diff_svg

BUSY = """
import json, time
def encode():
    return json.dumps({"k": list(range(200))})
def spin():
    s = 0
    for i in range(20000):
        s += i
    return s
end = time.time() + 30
while time.time() < end:
    encode(); spin()
"""


def record(pid: int, seconds: float) -> str:
    recorder = Recorder(pid)
    time.sleep(seconds)
    return recorder.stop()


def test_shares_go_to_the_innermost_matching_frame() -> None:
    stacks = parse("main (a.py:1);query (psycopg2/x.py:2);log (logging/__init__.py:9) 3\n"
                   "main (a.py:1);query (psycopg2/x.py:2);fetch (psycopg2/y.py:5) 1\n"
                   "main (a.py:1);helper (a.py:3) 6\nnot a line\n")
    rules = [("Data query", r"psycopg2"), ("Logging", r"logging/"), ("App", r"a\.py|psycopg2")]
    result = shares(stacks, rules)
    # The logging call inside the query counts as logging; a frame both 'Data query' and 'App'
    # match takes the first rule; frames nothing matches fall to their caller.
    assert result == {"Data query": 10.0, "Logging": 30.0, "App": 60.0, "Everything else": 0.0}


def test_svg_escapes_frames_and_is_self_contained() -> None:
    image = svg(parse("<script>x</script> (a.py:1);b (b.py:2) 5\n"), "t<&>")
    assert "<script>" not in image and "&lt;script&gt;" in image
    assert image.startswith("<svg") and "data-search-exclude" in image and "http" in image[:60]
    assert "t&lt;&amp;&gt;" in image


def test_record_samples_a_real_process() -> None:
    proc = subprocess.Popen([sys.executable, "-c", BUSY])
    try:
        stacks = parse(record(proc.pid, 1))
    finally:
        proc.kill()
        proc.wait()
    assert sum(stacks.values()) > 0
    assert any(frame.startswith("spin (") for stack in stacks for frame in stack)
    result = shares(stacks, [("JSON", r"^(encode|dumps)"), ("Loop", r"^spin")])
    assert result["Loop"] > 0 and sum(result.values()) == pytest.approx(100.0)


def test_record_of_a_missing_process_is_one_line() -> None:
    with pytest.raises(PerfpagesError, match="py-spy could not sample pid 999999"):
        record(999999, 1)


def test_real_stacks_fold_by_function_and_diff_with_themselves(tmp_path: Path) -> None:
    script = tmp_path / "busy.py"  # a file, not `-c`: py-spy's process frame holds the cmdline
    script.write_text(BUSY)
    proc = subprocess.Popen([sys.executable, str(script)])
    try:
        stacks = parse(record(proc.pid, 1))
    finally:
        proc.kill()
        proc.wait()
    assert parse(fold(stacks)) == stacks
    assert all(stack[0].startswith(f"process {proc.pid}:") for stack in stacks)
    merged = by_function(stacks)
    assert sum(merged.values()) == sum(stacks.values())
    frames = {frame for stack in merged for frame in stack}
    assert "spin (busy.py)" in frames and "process" in frames
    assert not any(frame.endswith(":7)") for frame in frames)  # no line numbers left
    image = diff_svg(stacks, stacks, "A/A")
    # red and blue in the legend only: a profile against itself changes nowhere
    assert image.count(MORE) == image.count(LESS) == 1 and "<title>spin (busy.py)&#10;" in image
