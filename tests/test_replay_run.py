"""The run side of `bench replay RUN`: a new run with everything an archived run recorded.

One small run of a copy of the tiny suite is archived (label `a` re-pinned by `--pin` to a
local wheel, label `b` with a setting), then replayed from a later copy of the suite whose
method changed: the replay keeps the recorded method, pins, labels and blocks. A suite that no
longer declares what the run recorded, a run that is not complete and an artifact whose sha256
differs from the record are one-line refusals. The wheel is served from a local directory
(PIP_NO_INDEX): nothing is downloaded from a registry.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import uuid
import zipfile
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from perfpages import DataSet, HttpBlockSpec, HttpCase, LabelSpec, Service, Suite
from perfpages.archive.reader import Run, open_run, read_manifest
from perfpages.archive.writer import ArchiveWriter
from perfpages.errors import PerfpagesError
from perfpages.run import builds
from perfpages.run.postgres import cache_dir
from perfpages.run.replay import Check, replay_options
from perfpages.run.runner import Options, run
from perfpages.run.schedule import order
from perfpages.testing import Spec, generate
from sites import quiet

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = f"perfpages-replay-{uuid.uuid4().hex[:8]}"  # this session's: its own cached venv
REQUIREMENT = f"{PACKAGE}==1.0"

SUITE = '''
import dataclasses, sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
import tiny

def suite(quick):
    base = tiny.suite(quick)
    a = dataclasses.replace(base.labels[0], package={package!r},
                            env={{"MODE": {mode!r}, "API_TOKEN": {token!r}}})
    b = dataclasses.replace(base.labels[1], package={b_package!r},
                            pg_settings={{"work_mem": {work_mem!r}}})
    block = dataclasses.replace(base.blocks[0], clients={clients!r}, metrics={metrics!r})
    return dataclasses.replace(base, name="replayed", labels=(a, b), blocks=(block,),
                               rounds=3, order={order!r}, window_s={window_s!r})
'''
DEFAULTS = {"package": "", "mode": "fast", "token": "s3cret-token", "b_package": "",
            "work_mem": "8MB", "clients": (1,), "metrics": ("throughput", "p50", "p95", "p99"),
            "order": "shuffle", "window_s": 1}


def write_suites(directory: Path, **changes: object) -> Path:
    """A suites directory: tiny (and its scripts) and `replayed`, with `changes` applied."""
    directory.mkdir(parents=True)
    shutil.copy(ROOT / "benchmarks" / "tiny.py", directory)
    shutil.copytree(ROOT / "benchmarks" / "tiny", directory / "tiny")
    (directory / "replayed.py").write_text(SUITE.format(**{**DEFAULTS, **changes}))
    return directory


def write_wheel(directory: Path, body: str) -> Path:
    """A pure-Python wheel of PACKAGE 1.0, byte-for-byte the same for the same body."""
    dist = PACKAGE.replace("-", "_")
    info = f"{dist}-1.0.dist-info"
    files = {f"{dist}/__init__.py": body,
             f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {PACKAGE}\nVersion: 1.0\n",
             f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: tests\nRoot-Is-Purelib: true\n"
                              "Tag: py3-none-any\n"}
    files[f"{info}/RECORD"] = "".join(f"{name},,\n" for name in [*files, f"{info}/RECORD"])
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{dist}-1.0-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as z:
        for name, text in files.items():
            z.writestr(zipfile.ZipInfo(name, date_time=(2026, 1, 1, 0, 0, 0)), text)
    return path


def forget_build() -> None:
    """Drop the cached venv of REQUIREMENT: the next build downloads the artifact again."""
    venv = cache_dir() / "venvs" / builds._key({"package": REQUIREMENT})
    shutil.rmtree(venv, ignore_errors=True)
    venv.with_name(venv.name + ".lock").unlink(missing_ok=True)


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """pip finds PACKAGE in a local directory only (no index), for every build of the module."""
    wheels = tmp_path_factory.mktemp("wheels")
    write_wheel(wheels, "VERSION = 'one'\n")
    with pytest.MonkeyPatch.context() as m:
        m.setenv("PIP_FIND_LINKS", str(wheels))
        m.setenv("PIP_NO_INDEX", "1")
        yield wheels
    forget_build()


@pytest.fixture(scope="module")
def suites(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The suites as the original run found them: a git repository of their own."""
    directory = write_suites(tmp_path_factory.mktemp("at-commit") / "suites")
    for args in (["init", "-q", "-b", "main"], ["add", "-A"],
                 ["-c", "user.name=t", "-c", "user.email=t@example.org", "commit", "-q", "-m",
                  "suites"]):
        subprocess.run(["git", "-C", str(directory), *args], check=True, capture_output=True)
    return directory


@pytest.fixture(scope="module")
def original(tmp_path_factory: pytest.TempPathFactory, index: Path, suites: Path) -> Path:
    """A complete run of `replayed`, its label a re-pinned by `--pin` to the local wheel."""
    results = tmp_path_factory.mktemp("results")
    return run(Options(suite="replayed", benchmarks=suites, results=results, rounds=2, seed=5,
                       pins={"a": REQUIREMENT},
                       command=f"perfpages bench.run --suite replayed --rounds 2 --seed 5 "
                               f"--pin a={REQUIREMENT}"), quiet())


@pytest.fixture(scope="module")
def replayed(original: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The replay, from a later suite whose own method changed (order, window length)."""
    later = write_suites(tmp_path_factory.mktemp("later") / "suites", order="rotate",
                         window_s=2)
    opts = replay_options(original.parent, original.name, later,
                          f"perfpages bench.replay {original.name}")
    return run(opts, quiet())


@pytest.mark.postgres
def test_a_replay_reuses_everything_the_run_recorded(original: Path, replayed: Path) -> None:
    before, after = open_run(original), open_run(replayed)  # both verified
    m, r = before.manifest, after.manifest
    assert m.status == r.status == "complete" and r.id != m.id
    assert r.replay_of == m.id and m.replay_of is None
    assert r.command == f"perfpages bench.replay {m.id}"
    assert r.labels == m.labels  # pins (the wheel's sha256), env (masked), settings
    assert r.labels["a"].pin.artifacts and r.labels["a"].env["API_TOKEN"] == "***"
    assert r.blocks == m.blocks and (r.suite, r.scope) == (m.suite, m.scope)
    assert r.id.startswith(f"{r.started[:10]}-replayed") and "lookup" not in r.id
    # the record's method (not the later suite's 3 rounds, rotate, 2 s), with a seed of its
    # own: a fresh order, the original's seed recorded beside it
    assert replace(r.method, notes="", seed=5) == replace(m.method, notes="")
    assert (r.method.rounds, r.method.order, r.method.window_s) == (2, "shuffle", 1)
    assert r.method.seed is not None and r.method.seed != m.method.seed == 5
    assert r.replay_of_seed == 5 and m.replay_of_seed is None
    assert "replay_of_seed" not in json.loads((original / "run.json").read_text())

    def turns(windows: list) -> list[tuple[object, ...]]:
        return [(w.kind, w.block, w.round, w.label, w.params) for w in windows
                if w.kind != "floor"]
    assert sorted(map(repr, turns(after.windows))) == sorted(map(repr, turns(before.windows)))
    for run_ in (before, after):  # each in the order of its own seed
        first = [w.label for w in run_.measured if w.round == 1]
        assert list(dict.fromkeys(first)) == order(["a", "b"], run_.manifest.method, 0, 1)


@pytest.mark.postgres
def test_list_shows_what_a_replay_replays(original: Path, replayed: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "perfpages", "bench.list", "--results",
                           str(original.parent)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert f"replay of {original.name}" in done.stdout.replace("\n", " ")
    assert done.stdout.count("replay of") == 1


@pytest.mark.postgres
@pytest.mark.parametrize(("changes", "key", "needle"), [
    ({"mode": "slow"}, "labels.a.env.MODE", "the suite sets 'slow', run {id} recorded 'fast'"),
    ({"work_mem": "16MB"}, "labels.b.pg_settings.work_mem", "the suite sets '16MB'"),
    ({"b_package": REQUIREMENT}, "labels.b.package",
     f"the suite pins package '{REQUIREMENT}', run {{id}} recorded nothing"),
    ({"clients": (1, 2)}, "blocks.lookup.clients",
     "the suite runs clients 1, 2, run {id} measured 1"),
    ({"metrics": ("throughput",)}, "blocks.lookup.metrics", "the suite declares throughput"),
], ids=["env", "pg_settings", "package", "clients", "metrics"])  # the same in every xdist worker
def test_a_suite_that_changed_is_one_line(original: Path, tmp_path: Path,
                                          changes: dict[str, object], key: str,
                                          needle: str) -> None:
    suites = write_suites(tmp_path / "suites", **changes)
    with pytest.raises(PerfpagesError) as err:
        replay_options(original.parent, original.name, suites, "perfpages bench.replay")
    text = str(err.value)
    commit = read_manifest(original).suite_repository["commit"]  # type: ignore[index]
    assert "\n" not in text and text.startswith(f"{suites / 'replayed.py'}: {key}: ")
    assert needle.format(id=original.name) in text
    assert f"check out the suites at commit {commit[:12]}" in text


@pytest.mark.postgres
def test_a_secret_is_compared_as_the_run_masked_it(original: Path, tmp_path: Path) -> None:
    suites = write_suites(tmp_path / "suites", token="another-token")
    opts = replay_options(original.parent, original.name, suites, "perfpages bench.replay")
    m = read_manifest(original)
    # every block of the suite: none named, so the replay's id names none (as the original's)
    assert (opts.labels, opts.blocks, opts.replay_of) == (["a", "b"], None, m.id)
    assert opts.method == replace(m.method, notes="", seed=opts.seed)
    assert opts.pins == opts.refs == {}
    assert opts.seed != m.method.seed and opts.replay_of_seed == m.method.seed
    assert opts.recorded_pins == {n: label.pin for n, label in m.labels.items()}


@pytest.mark.postgres
def test_a_recorded_pin_is_built_whatever_the_suite_pins_now(original: Path) -> None:
    """Label a pins nothing in the suite: its recorded pin (from `--pin`) is what is built,
    for a replay as for a resume."""
    pin = read_manifest(original).labels["a"].pin
    b = builds.resolve(LabelSpec("a"), pin)
    assert pin.kind == "package" and b.label.pin == pin and b.venv is not None


@pytest.mark.postgres
def test_an_artifact_that_differs_from_the_record_is_refused(
        original: Path, suites: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    wheel = write_wheel(tmp_path / "wheels", "VERSION = 'two'\n")  # same name, other bytes
    monkeypatch.setenv("PIP_FIND_LINKS", str(wheel.parent))
    forget_build()
    opts = replay_options(original.parent, original.name, suites, "perfpages bench.replay")
    runs = sorted(original.parent.iterdir())
    try:
        with pytest.raises(PerfpagesError) as err:
            run(opts, quiet())
    finally:
        forget_build()  # the venv of the other bytes is never reused
    text = str(err.value)
    assert "\n" not in text and text.startswith("labels.a.package: the artifact ")
    assert wheel.name in text and "the run recorded" in text
    assert sorted(original.parent.iterdir()) == runs  # nothing archived


@pytest.mark.postgres
@pytest.mark.parametrize("status", ["partial", "failed"])
def test_only_a_complete_run_is_replayed(original: Path, suites: Path, tmp_path: Path,
                                         status: str) -> None:
    """Runs of the same record, written by the real writer, that did not complete."""
    m = read_manifest(original)
    run_id = f"{m.id}-{status}"
    writer = ArchiveWriter.create(tmp_path, replace(m, id=run_id))
    window = open_run(original).measured[0]
    writer.append(window if status == "partial" else replace(
        window, status="failed", error="server gone", latency=None, requests=None))
    if status == "partial":
        writer.abandon()
    else:
        writer.finish("failed")
    with pytest.raises(PerfpagesError) as err:
        replay_options(tmp_path, run_id, suites, "")
    text = str(err.value)
    assert "\n" not in text and text.startswith(f"bench.replay: run {run_id} ")
    assert (f"is partial — resume it with `invoke bench.run --suite replayed --resume {run_id}`"
            if status == "partial" else "failed: 1 of 1 windows failed") in text


def test_a_synthetic_run_is_not_replayed(demo_results: Path) -> None:
    with pytest.raises(PerfpagesError) as err:
        replay_options(demo_results, "2026-11-01-synthetic-demo", ROOT / "benchmarks", "")
    assert "not a measurement" in str(err.value) and "\n" not in str(err.value)



def http_block(**changes: object) -> HttpBlockSpec:
    """The synthetic demo run's `callers` block, as an HTTP block of a suite would declare it."""
    cases = tuple(HttpCase(params=p, load=lambda turn: None)
                  for p in ({"call": "lookup", "callers": 32}, {"call": "page", "callers": 32}))
    return replace(HttpBlockSpec("callers", cases=cases, metrics=("throughput", "p50", "p99")),
                   **changes)


@pytest.fixture(scope="module")
def http_run(tmp_path_factory: pytest.TempPathFactory) -> Run:
    return generate(tmp_path_factory.mktemp("results"), Spec(
        run_id="2026-11-02-synthetic-http", labels={"v1.0": 1.0, "v1.1": 1.1, "cache": 1.2},
        blocks={"callers": [{"call": "lookup", "callers": 32}, {"call": "page", "callers": 32}]},
        rounds=3, windows=1, distinct=5))


@pytest.mark.parametrize(("changes", "key", "needle"), [
    ({}, None, ""),
    ({"cases": http_block().cases[:1]}, "blocks.callers.cases",
     "the suite runs cases call=lookup, callers=32, run {id} measured call=lookup, callers=32; "
     "call=page, callers=32"),
    ({"labels": ("v1.0", "v1.1")}, "blocks.callers.labels",
     "the suite runs it for v1.0, v1.1, run {id} measured cache, v1.0, v1.1"),
    ({"rounds": 2}, "blocks.callers.rounds", "the suite runs it for 2 rounds, run {id} measured 3"),
])
def test_an_http_block_is_checked_by_its_cases_labels_and_rounds(
        http_run: Run, changes: dict[str, object], key: str | None, needle: str) -> None:
    m = http_run.manifest
    suite = Suite("synthetic", "t", labels=tuple(LabelSpec(n) for n in m.labels),
                  blocks=(http_block(**changes),), dataset=DataSet("d", 1, load=print),
                  service=Service(spec=print))
    check = Check(m, suite, Path("suites/synthetic.py"))
    if key is None:
        check.block(suite.blocks[0], http_run.measured)  # as recorded: nothing to say
        return
    with pytest.raises(PerfpagesError) as err:
        check.block(suite.blocks[0], http_run.measured)
    text = str(err.value)
    assert text.startswith(f"suites/synthetic.py: {key}: {needle.format(id=m.id)} — ")
    assert text.endswith(f"restore the suite as run {m.id} ran it (it recorded no suite commit)")


@pytest.mark.postgres
def test_bench_replay_runs_the_replay_and_reports_on_it(original: Path, suites: Path,
                                                        tmp_path: Path) -> None:
    """The whole command: `perfpages bench replay RUN` archives a replay, then compares."""
    before = {p.name for p in original.parent.iterdir()}
    done = subprocess.run([sys.executable, "-m", "perfpages", "bench", "replay", original.name,
                           "--results", str(original.parent), "--suites", str(suites),
                           "--format", "json"], capture_output=True, text=True, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    (new,) = {p.name for p in original.parent.iterdir()} - before
    replay = open_run(original.parent / new)  # verified
    assert replay.manifest.replay_of == original.name and replay.manifest.status == "complete"
    assert replay.manifest.command.startswith(f"perfpages bench replay {original.name}")
    data = json.loads(done.stdout)  # stdout is the report alone
    assert (data["original"]["id"], data["second"]["id"], data["replay"]) == (
        original.name, new, True)
    assert data["cells"] and {c["label"] for c in data["cells"]} == {"a", "b"}


def test_a_pgbench_block_with_delays_is_checked_by_its_clients_and_delays() -> None:
    """The archived sky run (its network block runs one client at five delays) against the
    shipped suite: as recorded, nothing to say; fewer delays, one line naming the block."""
    from perfpages.run.suite import load

    recorded = open_run(ROOT / "results" / "2026-12-02-sky-2")
    suite = load("sky", ROOT / "benchmarks", False)
    check = Check(recorded.manifest, suite, ROOT / "benchmarks" / "sky.py")
    for spec in suite.blocks:
        check.block(spec, [w for w in recorded.measured if w.block == spec.name])
    network = next(b for b in suite.blocks if b.name == "network")
    assert network.parameters == ("clients", "delay_ms") and len(network.cells()) == 5
    with pytest.raises(PerfpagesError, match=r"blocks\.network"):
        check.block(replace(network, delays_ms=(0, 1)),
                    [w for w in recorded.measured if w.block == "network"])
