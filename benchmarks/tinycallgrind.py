"""A tiny instructions suite for the tests: tinyhttp's subject under valgrind's callgrind, its
/item counted over windows of a few tens of calls; "spin" does known extra work per call. Each
/item reads a row from PostgreSQL, which runs under callgrind too (`postgres=True`)."""

from __future__ import annotations

import sys
from pathlib import Path

from perfpages import (
    DataSet,
    HttpBlockSpec,
    HttpCase,
    HttpTurn,
    Instructions,
    LabelSpec,
    Load,
    Request,
    Service,
    ServiceSpec,
    Suite,
)

SERVER = Path(__file__).parent / "tinyhttp" / "server.py"


def no_data(conn: object, rows: int, seed: int) -> None:
    """The subject reads the catalog (pg_class): no data set to load."""


def spec(b, target, work: Path, env: dict[str, str]) -> ServiceSpec:  # type: ignore[no-untyped-def]
    return ServiceSpec(name=f"tiny {b.label.name}",
                       command=(sys.executable, str(SERVER), "{port}"),
                       env={**b.env, **env, "TINY_DSN": target.public()})


def item(turn: HttpTurn) -> Load:
    return Load([Request(turn.base_url + "/item?id={id}", fill={"id": (1, 100)})],
                duration_s=turn.window_s, seed=turn.seed)


def suite(quick: bool) -> Suite:
    return Suite(
        name="tinycallgrind",
        title="Tiny instructions suite (test run: tinyhttp under callgrind, tens of calls)",
        labels=(LabelSpec("fast", description="no extra work"),
                LabelSpec("spin", env={"TINY_SPIN": "5000"},
                          description="5,000 more loop iterations per call")),
        blocks=(HttpBlockSpec("instructions", (HttpCase({"call": "item"}, item),),
                              title="Instructions per call",
                              instructions=Instructions(calls=20, callers=1, warmup=5,
                                                        idle_s=1, postgres=True)),),
        dataset=DataSet("none", rows=0, load=no_data),
        service=Service(spec=spec),
        rounds=2, warmup_s=0.5, window_s=1.0, floor_s=1.0, min_rounds=2, scope="test",
    )
