"""invoke tasks: thin wrappers over perfpages' core (`inv --list` shows them)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

from invoke import Collection, Context, Exit, task

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT / "src"))

RESULTS = ROOT / "results"
BENCHMARKS = ROOT / "benchmarks"
MKDOCS_YML = ROOT / "mkdocs.yml"
RESULTS_HELP = "directory of archived runs (default: results/ of this checkout)"


def _results(results: str | None) -> Path:
    return Path(results) if results else RESULTS


def _command(action: Callable[[ModuleType, Any], int]) -> None:
    """Run a console command; exit with its code. Imported here, not at the top, so that
    `inv --list` does not load pandas."""
    from perfpages.cli import console

    code = console.run_command(lambda out: action(console, out))
    if code:
        raise Exit(code=code)


def _names(text: str | None) -> list[str] | None:
    return [p.strip() for p in text.split(",") if p.strip()] if text else None


@task(help={"suite": "suite name: benchmarks/NAME.py",
            "labels": "only these labels, comma-separated",
            "blocks": "only these blocks, comma-separated",
            "rounds": "rounds (default: the suite's)",
            "quick": "the suite's quick sizes (the run's scope and title say so)",
            "resume": "complete this partial run instead of starting a new one",
            "dsn": "an external server, postgresql://USER[:PASSWORD]@HOST:PORT/DB "
                   "(the password is never archived)",
            "seed": "seed of the label order (default: random, always recorded)",
            "results": RESULTS_HELP})
def run(c: Context, suite: str | None = None, labels: str | None = None,
        blocks: str | None = None, rounds: int | None = None, quick: bool = False,
        resume: str | None = None, dsn: str | None = None, seed: int | None = None,
        results: str | None = None) -> None:
    """Replay a suite against its pinned builds on PostgreSQL and archive the run."""
    from perfpages.run.runner import Options

    opts = Options(suite=suite, benchmarks=BENCHMARKS, results=_results(results),
                   labels=_names(labels), blocks=_names(blocks), rounds=rounds, quick=quick,
                   resume=resume, dsn=dsn, seed=seed, command="invoke " + " ".join(sys.argv[1:]))
    _command(lambda cmd, out: cmd.run_suite(opts, out))


@task(help={"results": RESULTS_HELP})
def list_(c: Context, results: str | None = None) -> None:
    """List every archived run: id, date, suite, scope, status, labels."""
    _command(lambda cmd, out: cmd.list_runs(_results(results), out))


@task(help={"run": "run id or unique part of it (default: the newest run)",
            "compare": "BASE,OTHER labels to compare (default: every label vs the first); "
                       "RUN:LABEL picks a label of another run",
            "allow_mixed": "compare runs from different machines or harness versions anyway",
            "format": "term, md or json",
            "min_rounds": "rounds each side needs before a change may be called clear",
            "results": RESULTS_HELP})
def report(c: Context, run: str | None = None, compare: str | None = None, format: str = "term",
           min_rounds: str | None = None, results: str | None = None,
           allow_mixed: bool = False) -> None:
    """Print a run's tables (median and range per cell) and its changes with verdicts."""
    _command(lambda cmd, out: cmd.print_report(_results(results), run, compare, format,
                                               min_rounds, out, allow_mixed))


@task(help={"run": "run id (default: every archived run)", "results": RESULTS_HELP})
def verify(c: Context, run: str | None = None, results: str | None = None) -> None:
    """Check runs against the schema and their checksums; exit 1 on any problem."""
    _command(lambda cmd, out: cmd.verify_runs(_results(results), run, out))


@task(positional=["run"], help={"run": "run id or unique part of it", "results": RESULTS_HELP})
def cite(c: Context, run: str, results: str | None = None) -> None:
    """Print a Markdown block citing a complete run, for a pull request."""
    _command(lambda cmd, out: cmd.print_cite(_results(results), run, MKDOCS_YML))


@task
def build(c: Context) -> None:
    """Build the site strictly into site/ (fails on any warning)."""
    c.run("mkdocs build --strict", pty=False)


@task(help={"port": "port to serve on"})
def serve(c: Context, port: int = 8000) -> None:
    """Serve the site with live reload on http://127.0.0.1:PORT/."""
    c.run(f"mkdocs serve --livereload --dev-addr 127.0.0.1:{port}", pty=False)


bench = Collection("bench")
bench.add_task(run)
bench.add_task(list_, name="list")
bench.add_task(report)
bench.add_task(verify)
bench.add_task(cite)

docs = Collection("docs")
docs.add_task(build)
docs.add_task(serve)

ns = Collection(bench, docs)
