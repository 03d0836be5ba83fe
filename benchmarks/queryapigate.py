"""QueryAPIGate 0.42.0 vs 0.43.0 on PostgreSQL: saved queries over HTTP, one gunicorn worker.

The case of QueryAPIGate's own performance pages (v3/v4): pgbench's tables, saved queries for a
lookup by primary key, a 100-row page and a single-row write, a plain key and a governed key
(a table allow-list and a masking rule). QueryAPIGate's store is a separate database on the same
server, one per label. Each label is the PyPI release, installed from its exact artifact.

The subject runs as the Docker image runs it: gunicorn, one gthread worker, 8 threads (0.42.0
needs --threads; 0.43.0 reads QUERYAPIGATE_THREADS), --no-control-socket so that instances never
share gunicorn's control socket. Its stdout and stderr go to the run's
diagnostics/BLOCK/LABEL/server.log, a plain file: every log line is one write to it.

What each label logs per call (the releases' code: app.py's after_request, engine.py, and
gunicorn_conf.py; the label's env sets 0.43.0's two switches explicitly, so the shell's
environment can never flip them):

- 0.42.0: a request line ("GET /q/account_by_aid -> 200 in 1.2ms") and a query line
  ("Executing on bench (postgres) ...: SELECT ...") at INFO on stderr, hard-wired: 0.42.0 has no
  switch. Its gunicorn_conf sets no access log.
- 0.43.0 (and its A/A twin 0.43.0-again): the release's defaults, QUERYAPIGATE_LOG_REQUESTS=on
  and QUERYAPIGATE_ACCESS_LOG=on: the same two lines, plus gunicorn's access line on stdout.
  What a deployment gets, and what a wrk measurement of the two releases as shipped compares.
- 0.43.0-noaccess: request and query lines, no access log: exactly 0.42.0's lines, so 0.43.0's
  code against 0.42.0's at equal logging.
- 0.43.0-quiet: both switches off, no line per call (what the v1 run called 0.43.0).
- 0.43.0+cache: 0.43.0-quiet with the metadata cache (QUERYAPIGATE_METADATA_CACHE_TTL=5).

So 0.43.0 vs 0.42.0 is the release as shipped (one more line per call), 0.43.0-noaccess vs
0.42.0 the code at equal logging, 0.43.0-quiet vs 0.43.0 what the logging costs, and
0.43.0-again vs 0.43.0 the run's noise floor (`bench report` finds the pair: same build).

Method v2.1 (`rule="wilcoxon"`): 20 rounds of 2 s per call, each round call by call with every
label's window of a call back to back in a balanced order (`order="pairs"`), each window after a
0.5 s settle of its own load, each label's subject started once per block and kept up, busy
calls measured again for every label after their block, changes decided by the Wilcoxon
signed-rank test paired by round at 1 %. Blocks whose cells need more requests per window
keep fewer, longer ones (load: 10 rounds of 4 s; network: 10 rounds of 3 s; threads: 10
rounds); the cold path keeps its one 80 s round and the profile one round of 8 s. Quick sizes:
2 rounds of 2 s, a smoke test.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
from dataclasses import replace
from pathlib import Path
from string import Template

import psycopg

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
from perfpages.errors import PerfpagesError

HERE = Path(__file__).parent / "queryapigate"
# 0.43.0's two logging switches (0.42.0 has neither): request and query lines (INFO, stderr),
# gunicorn's access line (stdout). Set explicitly on every 0.43.0 label, on or off.
SHIPPED = {"QUERYAPIGATE_LOG_REQUESTS": "on", "QUERYAPIGATE_ACCESS_LOG": "on"}
NO_ACCESS = {"QUERYAPIGATE_LOG_REQUESTS": "on", "QUERYAPIGATE_ACCESS_LOG": "off"}
QUIET = {"QUERYAPIGATE_LOG_REQUESTS": "off", "QUERYAPIGATE_ACCESS_LOG": "off"}
NOTES = ("subject: gunicorn, 1 gthread worker, 8 threads; its stdout and stderr go to "
         "diagnostics/BLOCK/LABEL/server.log (a file). Lines logged per call: 0.42.0 a request "
         "line and a query line (INFO, no switch; no access log); 0.43.0 and 0.43.0-again "
         "(the A/A pair) the release's defaults, QUERYAPIGATE_LOG_REQUESTS=on and "
         "QUERYAPIGATE_ACCESS_LOG=on: the same two lines plus gunicorn's access line; "
         "0.43.0-noaccess the request and query lines only (0.42.0's logging); 0.43.0-quiet and "
         "0.43.0+cache none (both switches off; +cache: QUERYAPIGATE_METADATA_CACHE_TTL=5).")
EXTRAS = "queryapigate[server,postgres,flow]"
# Method v2 keeps every label's subject up for its whole block: six subjects, each holding up to
# its pool's 8 data connections and its store's, plus the harness's, pass PostgreSQL's default
# of 100 (the first attempt at this suite's v2 run: 21,926 connections refused, 40 % of one
# label's calls answered 500). The same setting on every label, so subjects still stay warm.
SERVER = {"max_connections": "200"}
DELAYS_MS = (0, 0.5, 1, 2, 5)  # each way between the subject and PostgreSQL (the reference's)
# Benchmark keys: the configuration holds only their sha256; they never reach an archive.
KEYS = {"plain": "qag-bench-plain-0123456789abcdef", "governed": "qag-bench-governed-0123456789ab"}
# gunicorn formats its access line in glogging.py: that is Logging, not gunicorn's HTTP work.
FLAME_RULES = (
    ("Logging", r"logging/|gunicorn/glogging\.py|queryapigate/(accesslog|logging_setup)\.py"),
    ("Data query: psycopg2 and the pool", r"psycopg2|queryapigate/(pool|db|engine|runners)\.py"),
    ("Store layer: the key, the query and the connection",
     r"queryapigate/(store|apikeys|metacache|databases|definitions|configcode)\.py"),
    ("QueryAPIGate's request handling", r"queryapigate/"),
    ("Flask and Werkzeug", r"flask/|werkzeug/"),
    ("gunicorn, sockets, HTTP", r"gunicorn/|socket\.py|selectors\.py|http/"),
)


def load_pgbench_tables(conn: psycopg.Connection, rows: int, seed: int) -> None:
    """pgbench's four tables as `pgbench -i` makes them (deterministic: no random values)."""
    scale = max(1, rows // 100_000)
    conn.execute("DROP TABLE IF EXISTS pgbench_history, pgbench_tellers, pgbench_accounts, "
                 "pgbench_branches")
    conn.execute("CREATE TABLE pgbench_branches (bid int PRIMARY KEY, bbalance int, "
                 "filler char(88))")
    conn.execute("CREATE TABLE pgbench_tellers (tid int PRIMARY KEY, bid int, tbalance int, "
                 "filler char(84))")
    conn.execute("CREATE TABLE pgbench_accounts (aid int PRIMARY KEY, bid int, abalance int, "
                 "filler char(84))")
    conn.execute("CREATE TABLE pgbench_history (tid int, bid int, aid int, delta int, "
                 "mtime timestamp, filler char(22))")
    conn.execute("INSERT INTO pgbench_branches SELECT b, 0, '' FROM generate_series(1, %s) b",
                 (scale,))
    conn.execute("INSERT INTO pgbench_tellers SELECT t, (t - 1) / 10 + 1, 0, '' "
                 "FROM generate_series(1, %s) t", (scale * 10,))
    conn.execute("INSERT INTO pgbench_accounts SELECT a, (a - 1) / 100000 + 1, 0, '' "
                 "FROM generate_series(1, %s) a", (scale * 100_000,))


def _sha(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def _release(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split(".")[:2])


def _store_db(label: str) -> str:
    return "qagstore_" + "".join(c if c.isalnum() else "_" for c in label)


def _env(b, target, work: Path) -> dict[str, str]:  # type: ignore[no-untyped-def]
    """The subject's settings; the label's env (its logging switches, the cache) last."""
    return {
        **target.env(),  # PGPASSWORD for an external server: libpq reads it for both databases
        "QUERYAPIGATE_DATABASE_URL": target.public(_store_db(b.label.name)),
        "QUERYAPIGATE_HOME": str(work / "home"),
        "QUERYAPIGATE_ALLOW_WRITES": "true",
        **b.env,
    }


def prepare(b, target, work: Path) -> None:  # type: ignore[no-untyped-def]
    """A fresh store for the label, configured from bench-config.yaml with its CLI."""
    store = _store_db(b.label.name)
    with target.connect("postgres") as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{store}"')
        conn.execute(f'CREATE DATABASE "{store}"')
    config = Template((HERE / "bench-config.yaml").read_text()).substitute(
        host=target.host, port=target.port, user=target.user, database=target.dbname,
        plain_sha256=_sha(KEYS["plain"]), governed_sha256=_sha(KEYS["governed"]))
    (work / "home").mkdir(parents=True, exist_ok=True)
    path = work / "bench-config.yaml"
    path.write_text(config)
    done = subprocess.run([str(b.venv / "bin" / "queryapigate"), "config", "apply", str(path)],
                          env={**os.environ, **_env(b, target, work)}, capture_output=True,
                          text=True)
    if done.returncode != 0:
        last = (done.stderr.strip() or done.stdout.strip() or "no output").splitlines()[-1]
        raise PerfpagesError(f"queryapigate config apply failed: {last}",
                             key=f"labels.{b.label.name}", fix="check the label's release")


def spec(b, target, work: Path, env: dict[str, str]) -> ServiceSpec:  # type: ignore[no-untyped-def]
    argv = [str(b.venv / "bin" / "gunicorn"), "-c", "python:queryapigate.gunicorn_conf",
            "--bind", "{host}:{port}", "--workers", "1", "--worker-class", "gthread",
            "--no-control-socket", "--timeout", "120", "--graceful-timeout", "30"]
    if _release(b.label.pin.version) < (0, 43):
        # Before 0.43, gunicorn_conf sets no thread count: without this, gunicorn runs one thread.
        argv += ["--threads", env.get("QUERYAPIGATE_THREADS", "8")]
    argv.append("queryapigate.app:create_app()")
    return ServiceSpec(name=f"queryapigate {b.label.name}", command=tuple(argv),
                       env={**_env(b, target, work), **env}, startup_timeout_s=60)


def _requests(base: str, call: str, rows: int) -> list[Request]:
    key = KEYS["governed" if call.endswith("governed") else "plain"]
    headers = {"X-API-Key": key}
    if call.startswith("lookup"):
        return [Request(base + "/q/account_by_aid?aid={aid}", headers=headers,
                        fill={"aid": (1, rows)})]
    if call == "page":
        return [Request(base + "/q/accounts_page?from_aid={aid}&page_size=100",
                        headers=headers, fill={"aid": (1, rows - 100)})]
    return [Request(base + "/q/history_insert_returning", method="POST", headers=headers,
                    json={"params": {"tid": "{tid}", "bid": 1, "aid": "{aid}", "delta": 5}},
                    fill={"tid": (1, 10), "aid": (1, rows)})]


def closed(call: str, callers: int, rows: int, **params: str | int) -> HttpCase:
    def load(turn: HttpTurn) -> Load:
        return Load(_requests(turn.base_url, call, rows), duration_s=turn.window_s,
                    warmup_s=turn.warmup_s, callers=callers, seed=turn.seed)

    return HttpCase({"call": call, "callers": callers, **params}, load)


def labels() -> tuple[LabelSpec, ...]:
    """0.42.0 (the base) and 0.43.0 under each logging, its defaults twice (the A/A pair)."""
    def release(version: str, name: str, env: dict[str, str], text: str) -> LabelSpec:
        return LabelSpec(name, package=f"{EXTRAS}=={version}", env=env, description=text,
                         pg_settings=SERVER)

    shipped = release("0.43.0", "0.43.0", SHIPPED,
                      "0.43.0 as shipped: request, query and access lines")
    return (
        release("0.42.0", "0.42.0", {}, "0.42.0: a request and a query line per call (no switch)"),
        shipped,
        shipped.again("0.43.0-again",
                      "A/A: 0.43.0 again, the same build and settings (the noise floor)"),
        release("0.43.0", "0.43.0-noaccess", NO_ACCESS,
                "0.43.0 logging as 0.42.0: request and query lines, no access log"),
        release("0.43.0", "0.43.0-quiet", QUIET, "0.43.0 with no line per call"),
        release("0.43.0", "0.43.0+cache", {**QUIET, "QUERYAPIGATE_METADATA_CACHE_TTL": "5"},
                "0.43.0-quiet with the metadata cache (5 s)"),
    )


def suite(quick: bool) -> Suite:
    rows = 100_000 if quick else 1_000_000
    # The reference's once-a-minute spike (0.42.0's governed key, at t = 61 s) needs > 61 s.
    cold_s = 5.0 if quick else 80.0
    calls = ("lookup-plain", "lookup-governed", "page", "write")

    def shares(turn: HttpTurn, share: float) -> Load:
        return Load(_requests(turn.base_url, "lookup-plain", rows), duration_s=turn.window_s,
                    warmup_s=turn.warmup_s, callers=64, share=share,
                    capacity=turn.capacity or 1.0, seed=turn.seed)

    def cold(call: str) -> HttpCase:
        def load(turn: HttpTurn) -> Load:  # no warm-up: the very first call is the point
            return Load(_requests(turn.base_url, call, rows), duration_s=turn.window_s,
                        window_s=turn.window_s, callers=8, seed=turn.seed)

        return HttpCase({"call": call, "callers": 8}, load, samples=True)

    def open_case(pct: int) -> HttpCase:
        return HttpCase({"mode": "open", "share_pct": pct},
                        lambda turn: shares(turn, pct / 100))

    def delayed(callers: int, delay_ms: float) -> HttpCase:
        return replace(closed("lookup-plain", callers, rows), delay_ms=delay_ms)

    capacity = closed("lookup-plain", 32, rows)
    # Each block runs the labels its question needs (all six only in the headline block): a
    # full run stays under an hour (the arithmetic: docs/guide/suites.md).
    blocks = (
        HttpBlockSpec("calls", tuple(closed(c, 32, rows) for c in calls),
                      title="One worker, 32 callers",
                      description="closed loop, 32 callers, each call for one window",
                      metrics=("throughput", "p50", "p99")),
        HttpBlockSpec("one-caller", tuple(closed(c, 1, rows) for c in calls[:2]),
                      title="One caller at a time", metrics=("p50", "p99", "throughput"),
                      labels=("0.42.0", "0.43.0", "0.43.0-quiet", "0.43.0+cache")),
        HttpBlockSpec("load", (
            HttpCase({"mode": "capacity", "callers": 32}, capacity.load, capacity=True),
            *(open_case(p) for p in (25, 50, 75, 90, 100))),
            title="Latency against offered load: what the log lines cost in the tail",
            description="open loop at a share of the capacity measured in the same turn "
                        "(32 callers, plain lookup); latency from the intended start",
            metrics=("p50", "p99", "p99.9", "achieved_rate"), labels=("0.43.0", "0.43.0-quiet"),
            # tails (p99.9) need requests: fewer, longer windows
            rounds=None if quick else 10, window_s=None if quick else 4.0),
        HttpBlockSpec("threads", tuple(
            HttpCase({"threads": n, "callers": 32}, closed("lookup-plain", 32, rows).load,
                     env={"QUERYAPIGATE_THREADS": str(n)}) for n in (1, 2, 4, 8)),
            title="Threads per worker (0.43.0 as shipped, plain lookup, 32 callers)",
            metrics=("throughput", "p99"), labels=("0.43.0",), rounds=None if quick else 10),
        HttpBlockSpec("cold-path", (cold("lookup-governed"), cold("lookup-plain")),
                      title=f"The cold path ({cold_s:g} s at 8 callers, every request kept)",
                      description="one window per key from the subject's start: the first "
                                  "call, and 0.42.0's governed key re-reading the schema after "
                                  "60 s",
                      metrics=("p50", "p99", "p99.9", "p99.99", "max"),
                      labels=("0.42.0", "0.43.0"), rounds=1, window_s=cold_s),
        HttpBlockSpec("network", (*(delayed(1, d) for d in DELAYS_MS), delayed(32, 0.5)),
                      title="A database across a network: a delay each way to PostgreSQL",
                      description="plain lookup; one caller at each delay (round trips per "
                                  "call from the slope), 32 callers at 0.5 ms; the store and "
                                  "the data both behind the delay",
                      metrics=("p50", "throughput", "round_trips", "statements"),
                      labels=("0.42.0", "0.43.0", "0.43.0+cache"),
                      rounds=None if quick else 10, window_s=None if quick else 3.0),
        HttpBlockSpec("profile", (closed("lookup-plain", 32, rows),),
                      title="Where the CPU goes (py-spy attached, one round)",
                      labels=("0.42.0", "0.43.0", "0.43.0-noaccess", "0.43.0-quiet",
                              "0.43.0+cache"), rounds=1, flamegraph=True,
                      flame_rules=FLAME_RULES, window_s=None if quick else 8.0),
        # Issue 36: instructions per call under valgrind's callgrind, which a busy machine
        # cannot move (waits, round trips, I/O are not in them); calls counted, not seconds.
        HttpBlockSpec("instructions", tuple(closed(c, 1, rows) for c in calls),
                      title="Instructions per call (the worker under callgrind, one caller)",
                      description="each call 50 times per window from one caller, counted "
                                  "by callgrind in gunicorn's master and worker; Python shows "
                                  "as the interpreter's C functions",
                      labels=("0.42.0", "0.43.0-noaccess", "0.43.0", "0.43.0-again"),
                      # 8: the fewest rounds the wilcoxon rule can call clear at α = 1 %
                      rounds=2 if quick else 8,
                      # gunicorn's master and gthread worker wake once a second: their
                      # instructions per second, measured idle, come off each window's count
                      # 50 calls: the count per call repeats to a few parts in ten thousand
                      # over 20-30 calls with one caller; 300 would take hours under callgrind
                      instructions=Instructions(calls=30 if quick else 50, callers=1,
                                                idle_s=5.0)),
    )
    size = f"{rows:,} accounts"
    # Method v2.1: 20 rounds of 2 s per call, every label's window of a call back to back, each
    # after a 0.5 s settle, each label's subject up for the whole block (the rule's design:
    # 55 min of windows and settles by the progress bar); quick sizes: 2 rounds, a smoke test
    # whose verdicts say "too few rounds".
    return Suite(
        name="queryapigate",
        title=("QueryAPIGate 0.42.0 vs 0.43.0 on PostgreSQL, one worker, logging as shipped "
               "and off (" + size +
               (", quick sizes: 2 rounds of 2 s windows)" if quick
                else ", 20 rounds of 2 s windows)")),
        labels=labels(), blocks=blocks,
        dataset=DataSet("pgbench-tables", rows=rows, load=load_pgbench_tables, seed=0),
        service=Service(spec=spec, prepare=prepare),
        rule="wilcoxon", rounds=2 if quick else None,
        floor_s=2.0 if quick else 4.0, min_rounds=2 if quick else 5,
        scope="quick" if quick else "full",
        notes=NOTES,
    )
