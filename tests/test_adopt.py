"""perfpages as an adopter gets it: a wheel of this checkout in a fresh venv outside it, used in a
new git repository of a tiny HTTP service over PostgreSQL (two commits) — init, a quick replay of
both commits by --ref, a page with a true and a false claim, the strict build, pytest through the
plugin, bench.cite. Real pip, real git, real PostgreSQL, real HTTP."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
pytestmark = [pytest.mark.network, pytest.mark.postgres]  # pip installs from PyPI, then replays

SERVICE = '''\
"""A tiny HTTP service over PostgreSQL: GET /item?id=N reads one row."""
import os, sys, time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

import psycopg

DSN = os.environ["SVC_DSN"]
DELAY_S = {delay}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True

    def do_GET(self):
        url = urlparse(self.path)
        if url.path == "/health":
            body = b"ok"
        else:
            item = int(parse_qs(url.query).get("id", ["1"])[0])
            with psycopg.connect(DSN) as conn:
                row = conn.execute("SELECT v FROM items WHERE id = %s", (item,)).fetchone()
            time.sleep(DELAY_S)
            body = str(row[0] if row else -1).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
'''

SUITE = '''\
"""The service at two commits: base and head (set them with --ref)."""
import sys
from pathlib import Path

from perfpages import (DataSet, HttpBlockSpec, HttpCase, LabelSpec, Load, Request, Service,
                       ServiceSpec, Suite)

REPO = str(Path(__file__).resolve().parents[1])


def load_items(conn, rows, seed):
    conn.execute("DROP TABLE IF EXISTS items")
    conn.execute("CREATE TABLE items (id integer PRIMARY KEY, v integer NOT NULL)")
    conn.execute("INSERT INTO items SELECT i, (i * 31 + %s) %% 1000 "
                 "FROM generate_series(1, %s) AS i", (seed, rows))


def spec(build, target, work, env):
    dsn = f"host={target.host} port={target.port} user={target.user} dbname={target.dbname}"
    return ServiceSpec(name=f"svc {build.label.name}",
                       command=(str(build.venv / "bin" / "python"), "-m", "svc", "{port}"),
                       env={**build.env, **env, "SVC_DSN": dsn}, startup_timeout_s=30)


def item(turn):
    return Load([Request(turn.base_url + "/item?id={id}", fill={"id": (1, 100)})],
                duration_s=turn.window_s, warmup_s=turn.warmup_s, callers=2, seed=turn.seed)


def suite(quick):
    return Suite(
        name="svc", title="svc: base vs head",
        labels=(LabelSpec("base", git=REPO, ref="HEAD"), LabelSpec("head", git=REPO, ref="HEAD")),
        blocks=(HttpBlockSpec("items", (HttpCase({"call": "item"}, item),), title="Item reads"),),
        dataset=DataSet("items", rows=100, load=load_items, seed=3),
        service=Service(spec=spec),
        rounds=3, warmup_s=0.5, window_s=1.0, floor_s=1.0, min_rounds=3,
        scope="quick" if quick else "full",
    )
'''


def run(cmd: list[str], cwd: Path, env: dict[str, str], check: bool = True,
        timeout: float = 600) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    if check and done.returncode != 0:
        raise AssertionError(f"{' '.join(cmd)} exited {done.returncode}:\n"
                             f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    return done


def commit(repo: Path, env: dict[str, str], message: str) -> str:
    run(["git", "add", "-A"], repo, env)
    run(["git", "commit", "-q", "-m", message], repo, env)
    return run(["git", "rev-parse", "HEAD"], repo, env).stdout.strip()


@pytest.fixture(scope="module")
def adopter_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A wheel built from this checkout, installed with its docs extra into a fresh venv."""
    base = tmp_path_factory.mktemp("adopter")
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    source = base / "source"  # setuptools builds in the tree: never in this checkout
    shutil.copytree(ROOT / "src", source / "src",
                    ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, source / name)
    run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(base / "dist"),
         str(source)], base, env)
    wheel = next((base / "dist").glob("perfpages-*.whl"))
    venv = base / "venv"
    run([sys.executable, "-m", "venv", str(venv)], base, env)
    # --no-compile: the bytecode of every file of pandas, numpy and mkdocs is most of the
    # install's CPU; Python compiles what the adopter's commands import, when they import it.
    run([str(venv / "bin/pip"), "install", "-q", "--no-compile", f"{wheel}[docs]"],  # pytest too
        base, env, timeout=900)
    return venv


def test_an_adopter_replays_two_commits_and_publishes_checked_claims(
        adopter_venv: Path, tmp_path: Path) -> None:
    bin_ = adopter_venv / "bin"
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    env.update(PATH=f"{bin_}:{env['PATH']}", NO_MKDOCS_2_WARNING="1", COLUMNS="200",
               GIT_AUTHOR_NAME="a", GIT_AUTHOR_EMAIL="a@example.org",
               GIT_COMMITTER_NAME="a", GIT_COMMITTER_EMAIL="a@example.org",
               PERFPAGES_CACHE=str(tmp_path / "cache"))
    repo = tmp_path / "svc-repo"
    (repo / "svc").mkdir(parents=True)
    run(["git", "init", "-q", "-b", "main"], repo, env)
    (repo / "pyproject.toml").write_text(textwrap.dedent('''\
        [build-system]
        requires = ["setuptools>=68"]
        build-backend = "setuptools.build_meta"

        [project]
        name = "svc"
        version = "1.0"
        dependencies = ["psycopg[binary]>=3.2"]
        '''))
    (repo / "svc/__init__.py").write_text("")
    (repo / "svc/__main__.py").write_text(SERVICE.format(delay="0.0"))
    base = commit(repo, env, "svc 1.0")
    (repo / "svc/__main__.py").write_text(SERVICE.format(delay="0.02"))
    head = commit(repo, env, "svc: 20 ms more per item")

    # init, then the adopter's own suite
    done = run(["perfpages", "init"], repo, env)
    assert "wrote mkdocs.yml" in done.stdout and "wrote pyproject.toml" in done.stdout
    (repo / "benchmarks/svc.py").write_text(SUITE)
    suites_commit = commit(repo, env, "perfpages")

    run(["perfpages", "bench.run", "--suite", "svc", "--quick", "--preflight-wait", "0",
         "--ref", f"base={base}", "--ref", f"head={head}"], repo, env, timeout=900)
    run_id = next(p.name for p in (repo / "results").iterdir() if p.is_dir())
    manifest = json.loads((repo / "results" / run_id / "run.json").read_text())
    pins = {name: label["pin"]["commit"] for name, label in manifest["labels"].items()}
    assert pins == {"base": base, "head": head}
    # perfpages' provenance is its own (a wheel: no commit), never the adopter's HEAD
    assert manifest["harness"]["commit"] is None
    assert manifest["suite_repository"]["commit"] == suites_commit
    report = run(["perfpages", "bench", "report", "--format", "md"], repo, env).stdout
    assert "head vs base" in report

    # a page with a true claim (line 6) and a false one (line 7)
    page = repo / "docs/performance/svc/v1.md"
    page.parent.mkdir(parents=True, exist_ok=True)
    page.write_text(f"---\nruns:\n  svc: {run_id}\n---\n# svc\n"
                    '{{ claim("head is slower", slower("base", "head", "p50", block="items")) }}\n'
                    '{{ claim("head is faster", faster("base", "head", "p50", block="items")) }}\n')
    nav = (repo / "mkdocs.yml").read_text().replace(
        "          - v1: performance/example/v1.md",
        "          - v1: performance/example/v1.md\n      - svc:\n"
        "          - v1: performance/svc/v1.md")
    (repo / "mkdocs.yml").write_text(nav)
    build = run(["mkdocs", "build", "--strict"], repo, env, check=False)  # -q hides warnings
    assert build.returncode != 0
    assert "docs/performance/svc/v1.md:7" in build.stdout + build.stderr
    assert "docs/performance/svc/v1.md:6" not in build.stdout + build.stderr

    # pytest in the adopter's repository collects the claims through the plugin, no test file;
    # the new page's snapshot is accepted first, as the guide says
    env_update = {**env, "PERFPAGES_UPDATE_GOLDEN": "1"}
    run(["pytest", "-q", "-p", "no:cacheprovider", "docs/performance/svc/v1.md"], repo,
        env_update, check=False)
    assert (repo / "tests/golden/pages/svc-v1.md").is_file()
    tests = run(["pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly"], repo, env,
                check=False)
    out = tests.stdout + tests.stderr
    assert tests.returncode == 1, out
    # the page's true claim, its snapshot, and one check per page of the built site (the strict
    # build wrote it before failing): no macro left unrendered
    built = len(list((repo / "site").rglob("*.html")))
    assert built > 0
    assert f"1 failed, {2 + built} passed" in out and "docs/performance/svc/v1.md:7" in out, out

    # the guide every message cites is installed with the package
    guide = run(["perfpages", "guide", "suites"], repo, env).stdout
    assert guide == (ROOT / "docs/guide/suites.md").read_text(encoding="utf-8")

    cite = run(["perfpages", "bench.cite", run_id], repo, env).stdout
    assert run_id in cite and head[:12] in cite
    assert "svc-repo" in cite and str(repo) not in cite  # the repository's name, not its path
    assert "](http" not in cite  # no site URL set: no link
