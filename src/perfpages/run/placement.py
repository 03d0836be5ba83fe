"""Where a run's parts run: the CPU sets a suite pins the subject, PostgreSQL and the load to."""

from __future__ import annotations

import os
from dataclasses import dataclass

from perfpages.errors import PerfpagesError

PARTS = ("subject", "postgres", "load")


@dataclass(frozen=True)
class Placement:
    """CPU sets to pin each part of a run to (Linux CPU numbers, as `taskset -c` takes them);
    empty: wherever the kernel schedules it. `subject`: an HTTP suite's service, its whole
    process group; `postgres`: the embedded server and every backend; `load`: the load
    generator's processes and pgbench (the floors' too)."""

    subject: tuple[int, ...] = ()
    postgres: tuple[int, ...] = ()
    load: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        for part in PARTS:
            cpus = getattr(self, part)
            if any(not isinstance(c, int) or isinstance(c, bool) or c < 0 for c in cpus):
                raise PerfpagesError(f"placement.{part}: {cpus!r} is not a set of CPU numbers",
                                     key=f"placement.{part}", fix="give CPU numbers, e.g. (0,)")

    def to_json(self) -> dict[str, list[int]]:
        return {part: sorted(set(getattr(self, part))) for part in PARTS if getattr(self, part)}

    @staticmethod
    def check(placement: dict[str, list[int]]) -> None:
        """Every CPU named is one this process may run on (a container may allow fewer)."""
        allowed = os.sched_getaffinity(0)
        for part, cpus in placement.items():
            missing = sorted(set(cpus) - allowed)
            if missing:
                raise PerfpagesError(
                    f"placement.{part}: CPU {missing[0]} is not available here (this machine "
                    f"allows {', '.join(map(str, sorted(allowed)))})", key=f"placement.{part}",
                    fix="choose among the CPUs allowed, or leave the part out")
