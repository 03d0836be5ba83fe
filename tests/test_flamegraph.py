"""py-spy on a real Python process: categories add up, the SVG is escaped and self-contained."""

from __future__ import annotations

import subprocess
import sys

import pytest

from perfpages.errors import PerfpagesError
from perfpages.flamegraph import parse, record, shares, svg

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


def test_shares_use_the_first_matching_rule() -> None:
    stacks = parse("main (a.py:1);log (logging/__init__.py:9) 3\n"
                   "main (a.py:1);query (psycopg2/x.py:2);log (logging/__init__.py:9) 1\n"
                   "main (a.py:1) 6\nnot a line\n")
    result = shares(stacks, [("Data query", r"psycopg2"), ("Logging", r"logging/")])
    assert result == {"Data query": 10.0, "Logging": 30.0, "Everything else": 60.0}


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
