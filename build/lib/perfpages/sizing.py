"""Server settings derived from a container's memory limit (the reference page's rule).

- shared_buffers = 1/4 of the memory limit;
- effective_cache_size = 3/4 of it (a planner hint, not an allocation);
- max_parallel_workers >= pool size x max_parallel_workers_per_gather, so every pooled query
  gets the workers its plan assumed;
- max_worker_processes = max_parallel_workers + 8 (launchers, I/O workers, autovacuum).
"""

from __future__ import annotations

import re

from perfpages.errors import PerfpagesError

_UNITS = {"kb": 1 / 1024, "mb": 1, "gb": 1024, "tb": 1024 * 1024,
          "kib": 1 / 1024, "mib": 1, "gib": 1024, "tib": 1024 * 1024}


def parse_memory(text: str | int) -> int:
    """'4GiB', '4GB', '2048MB' or a number of MiB → MiB (binary units, as PostgreSQL reads them)."""
    if isinstance(text, int):
        return text
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([KMGT]i?B)?\s*", text, re.IGNORECASE)
    if not m:
        raise PerfpagesError(f"not a memory size: {text!r}", key="memory_limit",
                             fix="write it like 4GiB, 4GB or 2048MB")
    mib = float(m.group(1)) * _UNITS[(m.group(2) or "mb").lower()]
    return int(mib)


def format_memory(mib: int) -> str:
    """PostgreSQL's spelling: whole gigabytes as 'NGB', anything else as 'NMB'."""
    return f"{mib // 1024}GB" if mib % 1024 == 0 else f"{mib}MB"


def settings_for(memory_limit: str | int, pool_size: int,
                 workers_per_gather: int = 2) -> dict[str, str]:
    """The cluster-wide, restart-only settings for a server limited to `memory_limit`."""
    mib = parse_memory(memory_limit)
    if mib < 64 or pool_size < 1 or workers_per_gather < 0:
        raise PerfpagesError("memory limit under 64MB, or a pool size under 1",
                             key="sizing", fix="give the container's real limit and pool size")
    parallel = pool_size * workers_per_gather
    return {
        "shared_buffers": format_memory(mib // 4),
        "effective_cache_size": format_memory(mib * 3 // 4),
        "max_parallel_workers_per_gather": str(workers_per_gather),
        "max_parallel_workers": str(parallel),
        "max_worker_processes": str(parallel + 8),
    }
