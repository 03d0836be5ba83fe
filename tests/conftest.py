"""Shared fixtures: synthetic archives written by the real writer into temporary results/ dirs,
and the session's own temporary root.

Every test session gets a private temporary directory (TMPDIR and `tempfile.tempdir`, for this
process and every child it starts): embedded PostgreSQL data directories, subjects' working
directories and pytest's tmp_path all land there, so `leftover_servers(session_tmp)` judges only
servers this session started, never a replay running beside it.

Under pytest-xdist (`pytest -n 3`) each worker is a session of its own: it inherits the
controller's TMPDIR and makes its root inside it (`perfpages-tests-gw0-…`), so a worker's
`leftovers` count only its own servers, never the other worker's, and the controller keeps its
whole tree when any worker left a server running. Tests are handed out a file at a time (`--dist
loadfile` in pyproject.toml): a module-scoped fixture (a replay several tests read) is built once,
by the one worker that runs that file; a product several files read (the repository's site, the
QueryAPIGate smoke run) is built once for the whole session by the first worker that asks for it,
under a lock in the controller's root (tests/shared.py). The heaviest files go first (tests marked
`postgres`, `network` or `browser` weigh most): the last file handed out is a light one, so no
worker waits long for the other at the end. A test that starts PostgreSQL or installs from PyPI
must carry its marker, for this as for the fast loop (`-m "not postgres and not network and not
browser"`).

The cache (PERFPAGES_CACHE) stays shared between sessions, decided per subdirectory:
- pg/: the embedded PostgreSQL binaries, keyed by wheel version, published by an atomic rename;
- venvs/: build venvs keyed by the resolved pin, built under a lock (builds.py), so the
  queryapigate release from PyPI is installed once per machine, not once per session (minutes);
- clusters/: loaded clusters keyed by binaries and data set, published by an atomic rename (the
  key holds the binaries' path, so a per-session cache path would never hit);
- tools/: external tools' venvs (Locust; apache-otava, the reference tests/test_edivisive.py
  checks E-divisive against), keyed by their pinned requirement, published by an atomic rename:
  installed once per machine (about 45 s);
- git/: mirrors keyed by their source's path: the tests' throwaway repositories live in the
  session's directory, so two sessions never share a mirror (and the mirror is locked anyway).
"""

from __future__ import annotations

import multiprocessing.util
import os
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest

from perfpages.archive.reader import Run
from perfpages.run.postgres import cache_dir, leftover_servers
from perfpages.testing import generate
from shared import Shared

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).parent / "fixtures"
_SAVED: dict[str, str | None] = {}
SESSION_TMP = pytest.StashKey[Path]()
SHARED_ROOT = pytest.StashKey[Path]()  # the controller's root under xdist, else the session's
FAILED = pytest.StashKey[bool]()


def worker_id(config: pytest.Config) -> str | None:
    """`gw0`, `gw1`… in an xdist worker (xdist sets workerinput before configuring it)."""
    return getattr(config, "workerinput", {}).get("workerid")


def pytest_configure(config: pytest.Config) -> None:
    """Give the session its own temporary root before anything (tmp_path included) uses one."""
    _SAVED.update(TMPDIR=os.environ.get("TMPDIR"), PERFPAGES_CACHE=os.environ.get(
        "PERFPAGES_CACHE"), tempdir=tempfile.tempdir)
    os.environ["PERFPAGES_CACHE"] = str(cache_dir().absolute())  # the same for every child
    # The load generator's forkserver keeps its socket in multiprocessing's temporary directory,
    # removed at exit, after this root: made now, outside the root, so both removals succeed.
    multiprocessing.util.get_temp_dir()
    worker = worker_id(config)
    # A worker's TMPDIR is the controller's root (inherited): its own root is made inside it.
    root = Path(tempfile.mkdtemp(prefix=f"perfpages-tests-{worker}-" if worker else
                                 "perfpages-tests-"))
    root.chmod(0o711)  # as root, the PostgreSQL server user traverses it to its data directory
    os.environ["TMPDIR"] = tempfile.tempdir = str(root)
    config.stash[SESSION_TMP] = root
    config.stash[SHARED_ROOT] = root.parent if worker else root


# A test marked postgres or network takes from ten seconds to minutes (a replay, a venv from
# PyPI; test_adopt does both), a browser one a second or two each after a site build of a
# minute, the others a tenth of a second to a few: weights in that ratio.
HEAVY = ("postgres", "network", "browser")
HEAVY_WEIGHT = 400  # per heavy marker; 1 for every test


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """In an xdist worker: the files heaviest first. Every worker sorts the same collection the
    same way, and `--no-loadscope-reorder` makes xdist hand out the files in this order."""
    if not worker_id(config):
        return

    def unit(item: pytest.Item) -> str:  # xdist's loadfile unit: the node id up to its first ::
        return item.nodeid.split("::", 1)[0]

    weight: Counter[str] = Counter()
    for item in items:
        heavy = sum(item.get_closest_marker(name) is not None for name in HEAVY)
        weight[unit(item)] += 1 + HEAVY_WEIGHT * heavy
    items.sort(key=lambda item: -weight[unit(item)])  # stable: a file's own order is kept


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    session.config.stash[FAILED] = exitstatus not in (0, pytest.ExitCode.NO_TESTS_COLLECTED)


def pytest_unconfigure(config: pytest.Config) -> None:
    root = config.stash.get(SESSION_TMP, None)
    for name in ("TMPDIR", "PERFPAGES_CACHE"):
        saved = _SAVED.get(name)
        if saved is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = saved
    tempfile.tempdir = _SAVED.get("tempdir")
    # A failed session keeps its files (the failures name them); so does a server left running
    # anywhere under the root (a worker's root is inside the controller's: data_prefix "").
    if root is not None and not config.stash.get(FAILED, True) and not leftover_servers(
            root, data_prefix=""):
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="session")
def session_tmp(pytestconfig: pytest.Config) -> Path:
    """This session's temporary root: every data directory it makes is under it."""
    return pytestconfig.stash[SESSION_TMP]


@pytest.fixture(scope="session")
def shared(pytestconfig: pytest.Config) -> Shared:
    """Products built once for the whole session, every xdist worker included (tests/shared.py)."""
    return Shared(pytestconfig.stash[SHARED_ROOT])


@pytest.fixture(scope="session")
def repository_site(shared: Shared) -> Path:
    """The repository's own site, built strictly once as `invoke docs.build` builds it, for
    every file that reads it (test_site's strict build, test_browser's pages)."""
    def build(site: Path) -> None:
        subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-d",
                        str(site)], cwd=ROOT, check=True,
                       env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})

    return shared("repository-site", build)


@pytest.fixture(scope="session")
def queryapigate_smoke(shared: Shared) -> Path:
    """QueryAPIGate 0.43.0 from PyPI, one round of two blocks in one-second windows: `calls` for
    0.43.0 and its twin 0.43.0-again, `network` (through the delay proxy) for 0.43.0, the one
    label of the two the suite runs it for. One real run that test_httpsuite's smoke test and
    test_cost's cost per call both read, instead of one each."""
    from perfpages.run.runner import Options, run
    from sites import quiet

    def make(results: Path) -> None:
        run(Options(suite="queryapigate", benchmarks=ROOT / "benchmarks", results=results,
                    labels=["0.43.0", "0.43.0-again"], blocks=["calls", "network"], rounds=1,
                    quick=True, preflight_wait=0, adapt=lambda s: replace(s, window_s=1.0)),
            quiet())

    (run_dir,) = [p.parent for p in shared("queryapigate-smoke", make).glob("*/run.json")]
    return run_dir


@pytest.fixture
def leftovers(session_tmp: Path) -> Callable[[], list[int]]:
    """PostgreSQL servers this session started and left running (others' are not counted)."""
    return lambda: leftover_servers(session_tmp)


@pytest.fixture(scope="session")
def demo_results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A results/ directory holding the synthetic demo run (never modified by tests)."""
    root = tmp_path_factory.mktemp("results")
    generate(root)
    return root


@pytest.fixture
def demo_run(demo_results: Path) -> Run:
    from perfpages.archive.reader import open_run

    return open_run(demo_results / "2026-11-01-synthetic-demo")


@pytest.fixture
def scratch_run(demo_results: Path, tmp_path: Path) -> Path:
    """A private copy of the demo run that a test may corrupt."""
    target = tmp_path / "results" / "2026-11-01-synthetic-demo"
    shutil.copytree(demo_results / "2026-11-01-synthetic-demo", target)
    return target
