"""A run's per-request samples: `samples/BLOCK/LABEL/rROUND-PARAMS.csv` (stored plain or as
.gz), every measured request of a window that kept them (the cold path), by intended start.

Columns (the load generator's SAMPLES_HEADER): offset_s (seconds from the measurement's start to
the request's intended start), latency_ms (from that start), service_ms, status, process.
"""

from __future__ import annotations

import math
import re
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path

from perfpages.archive import files, schema, seal
from perfpages.archive.files import path_part
from perfpages.errors import ArchiveError

COLUMNS = ("offset_s", "latency_ms")  # the two a reader needs; more may follow
ROUND = re.compile(r"r(\d+)-")


@dataclass(frozen=True)
class Sample:
    offset_s: float
    latency_ms: float


def names(run_dir: Path, block: str, label: str, parameters: str) -> dict[int, str]:
    """The samples files of one cell by round: {1: "samples/cold-path/0.42.0/r1-….csv"}."""
    pattern = f"samples/{block}/{path_part(label)}/r*-{path_part(parameters)}.csv"
    out = {}
    for name in files.names(run_dir, pattern):
        m = ROUND.match(name.rsplit("/", 1)[-1])
        if m:
            out[int(m.group(1))] = name
    return dict(sorted(out.items()))


def read(run_dir: Path, name: str) -> list[Sample]:
    """Every sample of one file; a malformed one is an error naming the run, file and line (a
    page's build prints it after the page's own place)."""
    text = files.read_text(run_dir, name)
    lines = text.splitlines()
    header = lines[0].split(",") if lines else []
    if header[:2] != list(COLUMNS):
        raise ArchiveError(f"{run_dir.name}/{name}:1: not a samples file (its header is not "
                           f"{','.join(COLUMNS)},…)", fix="restore the run from git")
    out = []
    for number, line in enumerate(lines[1:], start=2):
        if not line:
            continue
        try:
            offset, latency = (float(v) for v in line.split(",")[:2])
        except ValueError:
            offset = latency = math.nan
        if not (math.isfinite(offset) and math.isfinite(latency) and latency >= 0
                and offset >= 0):  # an offset is from the measurement's start: never before
            raise ArchiveError(f"{run_dir.name}/{name}:{number}: not a sample: {line[:60]!r}",
                               fix="restore the run from git")
        out.append(Sample(offset, latency))
    return out


def problems(run_dir: Path, skip: Collection[str] = ()) -> list[ArchiveError]:
    """A problem for every samples file under samples/ that `read` refuses (garbage, empty, a
    wrong header, NaN, a .gz that does not inflate): what `bench.verify` and every command
    refuse, so no command passes a file that a page then cannot draw. Files named in `skip`
    (already reported, e.g. changed since sealing) are not read again."""
    out = []
    listed, _ = seal.walk(run_dir)  # never through a link (seal.check reports those)
    for stored in listed:
        name = files.plain_name(stored)
        if not (name.startswith("samples/") and name.endswith(".csv")) or \
                schema.one_line(str(run_dir / stored)) in skip:
            continue
        try:
            read(run_dir, name)
        except ArchiveError as exc:
            out.append(exc)
        except FileNotFoundError:
            continue
    return out
