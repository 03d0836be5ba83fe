"""Instructions per call under real valgrind (`perfpages.run.callgrind`), on the real tinyhttp
subject: counts, not timings."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from perfpages.loadgen.spec import Load, Request
from perfpages.run import callgrind
from perfpages.run.httpspec import Instructions
from perfpages.run.service import Service, ServiceSpec

ROOT = Path(__file__).resolve().parent.parent
SERVER = ROOT / "benchmarks" / "tinyhttp" / "server.py"
pytestmark = pytest.mark.valgrind


def counted(tmp: Path, env: dict[str, str], windows: int,
            spec: Instructions) -> list[callgrind.Count]:
    plain = Service(ServiceSpec("tiny", (sys.executable, str(SERVER), "{port}"), env=env),
                    tmp / "server.log")
    service = callgrind.traced(plain, tmp / "callgrind")
    with service:
        assert service.process is not None
        load = Load([Request(service.url + "/item?id={id}", fill={"id": (1, 100)})],
                    duration_s=1.0)
        pgid = callgrind.pgid_of(service.process.pid)
        return [callgrind.window(pgid, tmp / "callgrind", load, spec, seed=7)
                for _ in range(windows)]


def test_one_caller_counts_repeat_and_extra_work_shows(tmp_path: Path) -> None:
    callgrind.check()
    spec = Instructions(calls=30, callers=1, warmup=10, idle_s=1)
    first, second = counted(tmp_path / "base", {}, 2, spec)
    assert (first.calls, first.failed, len(first.files)) == (30, 0, 1)
    assert first.instructions > 0 and first.idle_per_s >= 0
    assert first.per_call <= first.instructions / first.calls  # net of the idle rate
    # A count repeats where a time does not: quiet, two windows agree to 0.02 %; what the idle
    # correction leaves on a machine at load 5 passed 0.5 % once (the window's duration
    # follows the load), so the bound is 2 %, still far below the tens of percent a
    # wall-clock measure moves here.
    assert abs(second.per_call / first.per_call - 1) < 0.02
    # 5,000 more iterations of a Python loop per call: tens of instructions each
    (spun,) = counted(tmp_path / "spin", {"TINY_SPIN": "5000"}, 1, spec)
    assert spun.per_call - first.per_call > 5000 * 20
