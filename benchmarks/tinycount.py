"""A tiny suite for the tests of exact counts: the tiny database subject running exactly BEGIN,
one SELECT and COMMIT per call at 8 callers, with a connection per call ("churn") or a shared
pool ("pooled"). Statements per call must read 3 in both, connections per call 1 and 0."""

from __future__ import annotations

import sys
from pathlib import Path

from perfpages import (
    DataSet,
    HttpBlockSpec,
    HttpCase,
    HttpTurn,
    LabelSpec,
    Load,
    Request,
    Service,
    ServiceSpec,
    Suite,
)

SERVER = Path(__file__).parent / "tinydb" / "server.py"
CALLERS = 8


def no_data(conn: object, rows: int, seed: int) -> None:
    """The subject's statements read no table."""


def spec(b, target, work: Path, env: dict[str, str]) -> ServiceSpec:  # type: ignore[no-untyped-def]
    return ServiceSpec(name=f"tinycount {b.label.name}",
                       command=(sys.executable, str(SERVER), "{port}"),
                       env={**target.env(), "TINYDB_DSN": target.public(), **b.env, **env},
                       startup_timeout_s=10)


def call(turn: HttpTurn) -> Load:
    return Load([Request(f"{turn.base_url}/q/1")], duration_s=turn.window_s,
                warmup_s=turn.warmup_s, callers=CALLERS, seed=turn.seed)


def suite(quick: bool) -> Suite:
    return Suite(
        name="tinycount",
        title="Tiny counting suite (test run: BEGIN, one statement, COMMIT per call)",
        labels=(LabelSpec("churn", description="a connection per call",
                          env={"TINYDB_CONNECT": "request", "TINYDB_TX": "1"}),
                LabelSpec("pooled", description="a shared pool of connections",
                          env={"TINYDB_CONNECT": "pool", "TINYDB_TX": "1"})),
        blocks=(HttpBlockSpec("calls", (HttpCase({"call": "one statement",
                                                  "callers": CALLERS}, call),),
                              title="One statement in a transaction, 8 callers",
                              metrics=("throughput", "statements", "connections")),),
        dataset=DataSet("none", rows=0, load=no_data),
        service=Service(spec=spec),
        rounds=2, warmup_s=0.5, window_s=1.0, floor_s=1.0, min_rounds=2, scope="test",
    )
