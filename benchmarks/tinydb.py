"""A tiny database suite for the tests: a subject making exactly 1, 2 and 3 round trips to
PostgreSQL per call, measured across a delay between it and the server (seconds to run)."""

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
DELAYS_MS = (0, 2, 4)  # three points make a slope; the tests stay short


def no_data(conn: object, rows: int, seed: int) -> None:
    """The subject's statements read no table."""


def spec(b, target, work: Path, env: dict[str, str]) -> ServiceSpec:  # type: ignore[no-untyped-def]
    return ServiceSpec(name=f"tinydb {b.label.name}",
                       command=(sys.executable, str(SERVER), "{port}"),
                       env={**target.env(), "TINYDB_DSN": target.public(), **b.env, **env},
                       startup_timeout_s=10)


def statements(n: int, delay_ms: float) -> HttpCase:
    def load(turn: HttpTurn) -> Load:
        return Load([Request(f"{turn.base_url}/q/{n}")], duration_s=turn.window_s,
                    warmup_s=turn.warmup_s, callers=1, seed=turn.seed)

    return HttpCase({"call": f"{n} statements", "callers": 1}, load, delay_ms=delay_ms)


def suite(quick: bool) -> Suite:
    return Suite(
        name="tinydb",
        title="Tiny database suite (test run: 1, 2 and 3 round trips per call, across a delay)",
        labels=(LabelSpec("tiny", description="the standard-library subject"),),
        blocks=(HttpBlockSpec("network", tuple(statements(n, d) for n in (1, 2, 3)
                                               for d in DELAYS_MS),
                              title="Latency against the delay to PostgreSQL, one caller",
                              metrics=("mean", "p50", "round_trips", "statements")),),
        dataset=DataSet("none", rows=0, load=no_data),
        service=Service(spec=spec),
        rounds=2, warmup_s=0.5, window_s=1.0, floor_s=1.0, min_rounds=2, scope="test",
    )
