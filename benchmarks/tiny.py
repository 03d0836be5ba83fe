"""A tiny suite for the tests: a thousand rows, an indexed lookup, two labels, seconds to run."""

from __future__ import annotations

from pathlib import Path

import psycopg

from perfpages import BlockSpec, DataSet, LabelSpec, Script, Suite

HERE = Path(__file__).parent / "tiny"


def load_items(conn: psycopg.Connection, rows: int, seed: int) -> None:
    """Deterministic: values come from the row number and the seed, not from random()."""
    conn.execute("DROP TABLE IF EXISTS items")
    conn.execute("CREATE TABLE items (id integer PRIMARY KEY, v integer NOT NULL)")
    conn.execute("INSERT INTO items SELECT i, (i * 7919 + %s) %% 1000 FROM "
                 "generate_series(1, %s) AS i", (seed, rows))


def suite(quick: bool) -> Suite:
    return Suite(
        name="tiny",
        title="Tiny suite (test run: a thousand rows, one-second windows)",
        labels=(LabelSpec("a", description="stock settings"),
                LabelSpec("b", pg_settings={"work_mem": "8MB"}, description="work_mem 8MB")),
        blocks=(BlockSpec("lookup", scripts=(Script(HERE / "lookup.sql"),), clients=(1,),
                          title="Indexed lookup", defines={"rows": "1000"},
                          explain={"lookup": "SELECT v FROM items WHERE id = 42"}),),
        dataset=DataSet("items", rows=1000, load=load_items, seed=7),
        rounds=2, warmup_s=1, window_s=1, floor_s=1, min_rounds=2, scope="test",
    )
