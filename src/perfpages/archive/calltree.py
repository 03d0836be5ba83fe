"""callgrind's profile format, read minimally: each function's own (self) and inclusive
instructions, as `callgrind_annotate` counts them.

A function is named `FILE:FUNCTION` (the file its `fl=`/`fi=`/`fe=` lines give; callgrind
compresses names as `(ID) name` once, `(ID)` after). Its own cost is the sum of its cost lines;
a `calls=` line makes the next cost line the inclusive cost of that call, added to the callee's
inclusive cost (so a recursive function counts its recursion, as callgrind_annotate does) and to
the caller's only when the caller is never called itself (a root: its inclusive cost is its own
plus its calls'). Only the first event (Ir: instructions) is read.
"""

from __future__ import annotations

import gzip
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from perfpages.archive.reader import path_part
from perfpages.errors import ArchiveError

GZ = ".gz"


@dataclass
class Profile:
    """Instructions by function (`FILE:FUNCTION`): `own` and `inclusive`, and the total."""

    own: dict[str, int] = field(default_factory=dict)
    inclusive: dict[str, int] = field(default_factory=dict)
    total: int = 0

    def add(self, other: Profile) -> Profile:
        """Another process's dump of the same window: every count summed."""
        for mine, theirs in ((self.own, other.own), (self.inclusive, other.inclusive)):
            for name, value in theirs.items():
                mine[name] = mine.get(name, 0) + value
        self.total += other.total
        return self


class _Names:
    """callgrind's name compression: `(ID) name` defines, `(ID)` refers."""

    def __init__(self) -> None:
        self.known: dict[str, dict[str, str]] = defaultdict(dict)

    def __call__(self, kind: str, text: str) -> str:
        text = text.strip()
        if text.startswith("("):
            ident, _, name = text.partition(")")
            name = name.strip()
            if name:
                self.known[kind][ident] = name
                return name
            return self.known[kind].get(ident, ident + ")")
        return text


def _cost(line: str, positions: int) -> int:
    """The first event's count of a cost line (`POSITION… COUNT…`; a missing count is 0)."""
    parts = line.split()
    return int(parts[positions]) if len(parts) > positions else 0


def parse(text: str, where: str | Path = "") -> Profile:
    names = _Names()
    own: dict[str, int] = defaultdict(int)
    called: dict[str, int] = defaultdict(int)  # inclusive cost of the calls into a function
    calls_out: dict[str, int] = defaultdict(int)  # inclusive cost of a function's calls
    positions, total, summary = 1, None, None
    file = fn = name = ""
    callee_file = callee = ""
    in_call = False
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        head = line[0]
        if head.isdigit() or head in "+-*" or line.startswith("0x"):
            cost = _cost(line, positions)
            if in_call:
                called[callee] += cost
                calls_out[name] += cost
                in_call = False
            else:
                own[name] += cost
            continue
        key, _, value = line.partition("=")
        if key == "fn":
            fn = names("fn", value)
            name = f"{file}:{fn}"
        elif key == "fl":
            file = names("fl", value)
        elif key in ("fi", "fe"):
            file = names("fl", value)
            name = f"{file}:{fn}"
        elif key in ("cfi", "cfl"):
            callee_file = names("fl", value)
        elif key == "cfn":
            callee = f"{callee_file or file}:{names('fn', value)}"
            callee_file = ""
        elif key == "calls":
            in_call = True
        elif key in ("jfi",):
            names("fl", value)
        elif key in ("jfn",):
            names("fn", value)
        elif line.startswith("positions:"):
            positions = len(line.split()[1:])
        elif line.startswith("totals:"):
            total = int(line.split()[1])
        elif line.startswith("summary:"):
            summary = int(line.split()[1])
    if total is None and summary is None:
        raise ArchiveError("not a callgrind profile (no totals: or summary: line)",
                           where=where, fix="archive a new run")
    inclusive = {n: called[n] if n in called else own.get(n, 0) + calls_out.get(n, 0)
                 for n in set(own) | set(called)}
    return Profile(dict(own), inclusive, summary if summary else total or 0)


def read(path: Path) -> Profile:
    """A profile file as archived: plain, or compressed as NAME.gz."""
    data = gzip.decompress(path.read_bytes()) if path.name.endswith(GZ) else path.read_bytes()
    return parse(data.decode("utf-8", errors="replace"), path)


def short(name: str) -> str:
    """`FILE:FUNCTION` as a reader wants it: the file's last part, or the function alone when
    callgrind knows no file (`???`)."""
    file, _, fn = name.partition(":")
    base = file.rsplit("/", 1)[-1]
    return fn if base in ("", "???") else f"{fn} ({base})"


def window_profile(run_dir: Path, block: str, label: str, params_key: str,
                   part: str = "") -> Profile | None:
    """An instructions block's round-1 window of one case, every process's dump summed (the
    files `perfpages.run.instructions` keeps; `part` "pg": the PostgreSQL server's); None: not
    archived."""
    folder = run_dir / "diagnostics" / block / path_part(label)
    kind = f"{part}.callgrind" if part else "callgrind"
    files = sorted(folder.glob(f"r1-{path_part(params_key)}.{kind}.*"))
    if not files:
        return None
    total = Profile()
    for path in files:
        total.add(read(path))
    return total
