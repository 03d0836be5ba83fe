"""The reference page's sizing rule, pinned: values for the shipped limits, and the rule itself."""

from __future__ import annotations

import pytest

from perfpages.errors import PerfpagesError
from perfpages.sizing import parse_memory, settings_for


def test_compose_and_chart_values() -> None:
    # docker-compose: 4 GiB and pools of 8 + 8; the chart: a 2 GiB pod.
    assert settings_for("4GiB", 16) == {
        "shared_buffers": "1GB", "effective_cache_size": "3GB",
        "max_parallel_workers_per_gather": "2", "max_parallel_workers": "32",
        "max_worker_processes": "40"}
    chart = settings_for("2GiB", 8)
    assert (chart["shared_buffers"], chart["effective_cache_size"]) == ("512MB", "1536MB")


@pytest.mark.parametrize("limit", ["1GiB", "2GB", "3072MB", "8GiB", "24GiB", 1536])
@pytest.mark.parametrize(("pool", "per_gather"), [(1, 2), (8, 2), (16, 4), (10, 0)])
def test_rule(limit: str | int, pool: int, per_gather: int) -> None:
    mib = parse_memory(limit)
    s = settings_for(limit, pool, per_gather)
    assert parse_memory(s["shared_buffers"]) == mib // 4
    assert parse_memory(s["effective_cache_size"]) == mib * 3 // 4
    assert int(s["max_parallel_workers"]) >= pool * per_gather
    assert int(s["max_worker_processes"]) == int(s["max_parallel_workers"]) + 8
    assert s["max_parallel_workers_per_gather"] == str(per_gather)


def test_bad_limit_is_one_line() -> None:
    with pytest.raises(PerfpagesError) as err:
        settings_for("four gigs", 16)
    assert "\n" not in str(err.value) and "memory_limit" in str(err.value)
