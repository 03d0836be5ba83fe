"""A tiny HTTP suite for the tests: a standard-library server as the subject, seconds to run."""

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

SERVER = Path(__file__).parent / "tinyhttp" / "server.py"


def no_data(conn: object, rows: int, seed: int) -> None:
    """The subject reads no database; the floors still run pgbench against PostgreSQL."""


def spec(b, target, work: Path, env: dict[str, str]) -> ServiceSpec:  # type: ignore[no-untyped-def]
    return ServiceSpec(name=f"tiny {b.label.name}",
                       command=(sys.executable, str(SERVER), "{port}"),
                       env={**b.env, **env}, startup_timeout_s=10)


def item(calls: int = 2, path: str = "/item?id={id}") -> HttpCase:
    def load(turn: HttpTurn) -> Load:
        return Load([Request(turn.base_url + path, fill={"id": (1, 100)} if "{id}" in path
                             else {})],
                    duration_s=turn.window_s, warmup_s=turn.warmup_s, callers=calls,
                    seed=turn.seed)

    return HttpCase({"call": "item" if "item" in path else "fail", "callers": calls}, load)


def suite(quick: bool) -> Suite:
    def open_loop(turn: HttpTurn) -> Load:
        return Load([Request(turn.base_url + "/health")], duration_s=turn.window_s,
                    callers=4, share=0.5, capacity=turn.capacity or 1.0, seed=turn.seed)

    def cold(turn: HttpTurn) -> Load:
        return Load([Request(turn.base_url + "/health")], duration_s=turn.window_s,
                    window_s=turn.window_s, callers=2, seed=turn.seed)

    capacity = item(2, "/health")
    # CPU-bound, so py-spy (which skips threads waiting on sockets) has samples to show.
    spin = HttpCase({"call": "spin", "callers": 2},
                    lambda turn: Load([Request(turn.base_url + "/spin")], duration_s=turn.window_s,
                                      warmup_s=turn.warmup_s, callers=2, seed=turn.seed))
    return Suite(
        name="tinyhttp",
        title="Tiny HTTP suite (test run: a standard-library server, one-second windows)",
        labels=(LabelSpec("fast", description="no delay"),
                LabelSpec("slow", env={"TINY_DELAY_MS": "2"}, description="2 ms per item")),
        blocks=(
            HttpBlockSpec("calls", (item(), item(1, "/fail")), title="Items and failures"),
            HttpBlockSpec("load", (
                HttpCase({"mode": "capacity"}, capacity.load, capacity=True),
                HttpCase({"mode": "open", "share_pct": 50}, open_loop)),
                title="Open loop at half the capacity", labels=("fast",)),
            HttpBlockSpec("cold", (HttpCase({"call": "health"}, cold, samples=True,
                                            env={"TINY_DELAY_MS": "1"}),),
                          title="Every request kept", rounds=1, labels=("slow",)),
            # a second environment: a second start of the subject, never profiled
            HttpBlockSpec("profile", (spin, HttpCase({"call": "health"}, cold,
                                                     env={"TINY_DELAY_MS": "0"})),
                          title="py-spy attached", rounds=1, window_s=2.0,
                          labels=("fast",), flamegraph=True,
                          flame_rules=(("Work", r"^spin "),
                                       ("HTTP server", r"http/server\.py|socketserver\.py"))),
        ),
        dataset=DataSet("none", rows=0, load=no_data),
        service=Service(spec=spec),
        rounds=2, warmup_s=0.5, window_s=1.0, floor_s=1.0, min_rounds=2, scope="test",
    )
