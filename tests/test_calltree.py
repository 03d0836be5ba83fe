"""The callgrind profile reader (`perfpages.archive.calltree`) counts each function's own and
inclusive instructions as callgrind_annotate does, on a real profile of a Python process."""

from __future__ import annotations

import gzip
import re
import subprocess
import sys
from pathlib import Path

import pytest

from perfpages.archive import calltree

pytestmark = pytest.mark.valgrind
LINE = re.compile(r"^\s*([\d,]+) \([^)]*\)\s+(.*?)(?: \[[^\]]*\])?$")


def annotate(path: Path, inclusive: bool, cwd: Path) -> dict[str, int]:
    out = subprocess.run(["callgrind_annotate", f"--inclusive={'yes' if inclusive else 'no'}",
                          "--threshold=100", str(path)], capture_output=True, text=True,
                         check=True, cwd=cwd).stdout
    table = out.split("file:function", 1)[1]
    found = {}
    for line in table.splitlines():
        m = LINE.match(line)
        if m and "PROGRAM TOTALS" not in line:
            found[m.group(2)] = int(m.group(1).replace(",", ""))
    return found


def test_own_and_inclusive_match_callgrind_annotate(tmp_path: Path) -> None:
    out = tmp_path / "callgrind.out"
    code = "import json\ndef f(n):\n    return n if n < 2 else f(n - 1) + f(n - 2)\n" \
           "print(json.dumps([f(15)]))"
    subprocess.run(["valgrind", "--tool=callgrind", "--trace-children=yes",
                    f"--callgrind-out-file={out}", sys.executable, "-c", code],
                   capture_output=True, check=True, timeout=300)
    profile = calltree.parse(out.read_text(), out)
    work = tmp_path / "elsewhere"  # callgrind_annotate shortens files under its cwd
    work.mkdir()
    own, inclusive = annotate(out, False, work), annotate(out, True, work)
    assert len(own) > 100 and len(inclusive) >= len(own)
    assert {n: profile.own.get(n) for n in own} == own
    assert {n: profile.inclusive.get(n) for n in inclusive} == inclusive
    assert profile.total == sum(profile.own.values())
    # archived compressed, read the same
    packed = tmp_path / "p.callgrind.gz"
    packed.write_bytes(gzip.compress(out.read_bytes()))
    assert calltree.read(packed).own == profile.own
