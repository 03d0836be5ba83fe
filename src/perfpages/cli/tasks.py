"""The task tree of `perfpages` and of `invoke` in a repository that uses perfpages.

`perfpages bench.run …` and `invoke bench.run …` (with the thin tasks.py `perfpages init`
writes) run the same tasks: thin wrappers over `perfpages.cli.console`. Paths and the site URL
come from `[tool.perfpages]` (perfpages.settings); the flags override them.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any, TypeVar

from invoke.collection import Collection
from invoke.context import Context
from invoke.exceptions import Exit
from invoke.tasks import task

from perfpages import settings
from perfpages.cli.interrupts import interruptible
from perfpages.cli.names import accept_spaced_names, command_line, program_name, whole_number

T = TypeVar("T")

RESULTS_HELP = "directory of archived runs (default: [tool.perfpages] results, else results/)"
SUITES_HELP = "directory of suite modules (default: [tool.perfpages] suites, else benchmarks/)"


def _settings(results: str | None = None, suites: str | None = None) -> settings.Settings:
    return _guard(lambda: settings.load(results=results, suites=suites))


def _guard(action: Callable[[], T]) -> T:
    """Settings errors are user errors too: one line, exit 1."""
    from perfpages.cli import console

    box: list[T] = []

    def call(out: object) -> int:
        box.append(action())
        return 0

    code = console.run_command(call)
    if code:
        raise Exit(code=code)
    return box[0]


def _command(action: Callable[[ModuleType, Any], int]) -> None:
    """Run a console command; exit with its code. Imported here, not at the top, so that
    `--list` does not load pandas."""
    from perfpages.cli import console

    code = console.run_command(lambda out: action(console, out))
    if code:
        raise Exit(code=code)


def _names(text: str | None) -> list[str] | None:
    return [p.strip() for p in text.split(",") if p.strip()] if text else None


@task(iterable=["ref", "pin"], help={"suite": "suite name: SUITES/NAME.py",
            "labels": "only these labels, comma-separated",
            "blocks": "only these blocks, comma-separated",
            "rounds": "rounds (default: the suite's)",
            "quick": "the suite's quick sizes (the run's scope and title say so)",
            "resume": "complete this partial run instead of starting a new one",
            "dsn": "an external server, postgresql://USER[:PASSWORD]@HOST:PORT/DB "
                   "(the password is never archived)",
            "seed": "seed of the label order (default: random, always recorded)",
            "ref": "LABEL=REF: build this git-pinned label at REF (repeatable)",
            "pin": "LABEL=SPEC: replace the label's pin with name==version or git+REPO@REF "
                   "(repeatable)",
            "preflight_wait": "SECONDS a block waits for a quiet machine (default 60; 0: never "
                              "wait, only record it)",
            "results": RESULTS_HELP, "suites": SUITES_HELP})
def run(c: Context, suite: str | None = None, labels: str | None = None,
        blocks: str | None = None, rounds: int | None = None, quick: bool = False,
        resume: str | None = None, dsn: str | None = None, seed: int | None = None,
        results: str | None = None, suites: str | None = None,
        ref: list[str] | None = None, pin: list[str] | None = None,
        preflight_wait: str | None = None) -> None:
    """Replay a suite against its pinned builds on PostgreSQL and archive the run."""
    from perfpages.run.overrides import parse_assignments
    from perfpages.run.runner import Options

    s = _settings(results, suites)
    refs, pins, rounds, seed, wait = _guard(lambda: (
        parse_assignments(ref or [], "--ref"), parse_assignments(pin or [], "--pin"),
        whole_number(rounds, "--rounds", minimum=1, noun="round count"),
        whole_number(seed, "--seed"),
        whole_number(preflight_wait, "--preflight-wait", minimum=0, maximum=3600,
                     noun="wait in seconds")))
    opts = Options(suite=suite, benchmarks=s.suites, results=s.results,
                   labels=_names(labels), blocks=_names(blocks), rounds=rounds, quick=quick,
                   resume=resume, dsn=dsn, seed=seed, refs=refs, pins=pins,
                   preflight_wait=wait,
                   command=command_line())
    _command(lambda cmd, out: cmd.run_suite(opts, out))


@task(help={"suite": "suite name: SUITES/NAME.py", "block": "the block to calibrate",
            "label": "the label measured against its twin (default: the block's first)",
            "minutes": "about how long to measure (default 10; fractions allowed)",
            "run": "read this calibration run back instead of measuring",
            "quick": "the suite's quick sizes", "seed": "seed of the label order",
            "format": "term or json", "results": RESULTS_HELP, "suites": SUITES_HELP})
def calibrate(c: Context, suite: str | None = None, block: str | None = None,
              label: str | None = None, minutes: str | None = None, run: str | None = None,
              quick: bool = False, seed: int | None = None, format: str = "term",
              results: str | None = None, suites: str | None = None) -> None:
    """Measure one block A/A: this machine's noise, what each design resolves, which to use."""
    from perfpages.cli import calibrate as command

    s = _settings(results, suites)
    seed = _guard(lambda: whole_number(seed, "--seed"))
    line = command_line()
    _command(lambda cmd, out: command.print_calibration(
        s.results, out, run=run, suite=suite, block=block, label=label, minutes=minutes,
        fmt=format, benchmarks=s.suites, quick=quick, seed=seed, command=line))


@task(help={"results": RESULTS_HELP})
def list_(c: Context, results: str | None = None) -> None:
    """List every archived run: id, date, suite, scope, status, labels."""
    s = _settings(results)
    _command(lambda cmd, out: cmd.list_runs(s.results, out))


@task(help={"run": "run id or unique part of it (default: the newest run)",
            "compare": "BASE,OTHER labels to compare (default: every label vs the first); "
                       "RUN:LABEL picks a label of another run",
            "allow_mixed": "compare runs from different machines or harness versions anyway",
            "format": "term, md or json",
            "min_rounds": "rounds each side needs before a change may be called clear",
            "fail_on": "loss: exit 1 when any change is a clear loss, a line each on stderr "
                       "(for CI)",
            "min_effect": "with --fail-on loss: fail only on a clear loss of at least PCT "
                          "percent (its median shift); smaller ones are noted",
            "results": RESULTS_HELP})
def report(c: Context, run: str | None = None, compare: str | None = None, format: str = "term",
           min_rounds: str | None = None, results: str | None = None,
           allow_mixed: bool = False, fail_on: str | None = None,
           min_effect: str | None = None) -> None:
    """Print a run's tables (median and range per cell) and its changes with verdicts."""
    s = _settings(results)
    rounds = _guard(lambda: whole_number(min_rounds, "--min-rounds", minimum=1,
                                         noun="round count"))
    _command(lambda cmd, out: cmd.print_report(s.results, run, compare, format,
                                               rounds, out, allow_mixed, fail_on, min_effect))


@task(help={"run": "run id (default: every archived run)", "results": RESULTS_HELP})
def verify(c: Context, run: str | None = None, results: str | None = None) -> None:
    """Check runs against the schema and their checksums; exit 1 on any problem."""
    s = _settings(results)
    _command(lambda cmd, out: cmd.verify_runs(s.results, run, out))


@task(positional=["run"], help={"run": "run id or unique part of it", "results": RESULTS_HELP})
def seal(c: Context, run: str, results: str | None = None) -> None:
    """Seal a run archived before sealing, once its files match run.json (from a clean checkout)."""
    s = _settings(results)
    _command(lambda cmd, out: cmd.seal_run(s.results, run, out))


@task(positional=["run"], help={"run": "run id or unique part of it", "results": RESULTS_HELP,
                                "site_url": "the published site, for the link (default: "
                                            "[tool.perfpages] site-url, else mkdocs.yml's; "
                                            "none: no link)"})
def cite(c: Context, run: str, results: str | None = None, site_url: str | None = None) -> None:
    """Print a Markdown block citing a complete run, for a pull request."""
    s = _guard(lambda: settings.load(results=results, site_url=site_url))
    _command(lambda cmd, out: cmd.print_cite(s.results, run, s.site_url))


@task(positional=["run"], help={
    "run": "the original run: id or unique part of it",
    "claims_only": "compare with this existing run of the suite instead of replaying RUN",
    "format": "term, md or json",
    "fail_on": "claims: exit 1 when a claim of a page pinning RUN does not hold on the "
               "replay, a line each on stderr (for CI)",
    "results": RESULTS_HELP, "suites": SUITES_HELP})
def replay(c: Context, run: str, claims_only: str | None = None, format: str = "term",
           fail_on: str | None = None, results: str | None = None,
           suites: str | None = None) -> None:
    """Replay a run as recorded, then report which cells, verdicts and claims reproduce."""
    from perfpages.cli import replay as command

    s = _settings(results, suites)
    line = command_line()
    _command(lambda cmd, out: command.print_reproduction(
        s.results, run, claims_only, format, out, mkdocs=s.mkdocs, suites=s.suites,
        fail_on=fail_on, command=line))


@task()
def build(c: Context) -> None:
    """Build the site strictly into site/ (fails on any warning)."""
    s = _settings()
    c.run(f"mkdocs build --strict --config-file {s.mkdocs}", pty=False)


@task(help={"port": "port to serve on"})
def serve(c: Context, port: int = 8000) -> None:
    """Serve the site with live reload on http://127.0.0.1:PORT/."""
    s = _settings()
    chosen = _guard(lambda: whole_number(port, "--port", minimum=1, maximum=65535, noun="port"))
    c.run(f"mkdocs serve --livereload --dev-addr 127.0.0.1:{chosen} --config-file {s.mkdocs}",
          pty=False)


@task(help={"docs": "the pages (default: mkdocs.yml's docs_dir)",
            "out": "where to write them (default: rendered/ beside mkdocs.yml)",
            "strict": "fail on a claim that does not hold, a hand-typed figure, a bad pin "
                      "(the default; --no-strict fails only on what stops any build)"})
def render(c: Context, docs: str | None = None, out: str | None = None,
           strict: bool = True) -> None:
    """Render every page as plain Markdown (macros computed, claims checked) for any generator."""
    from perfpages.cli import render as command

    _command(lambda cmd, out_: command.render_pages(docs, out, strict, out_))


@task(positional=["site"], help={"site": "the built site's directory (e.g. site, "
                                          "rendered/site)"})
def check_site(c: Context, site: str) -> None:
    """Fail on any perfpages macro left unrendered in a built site, whatever built it."""
    from perfpages.cli import render as command

    _command(lambda cmd, out: command.check_site(site, out))


@task(help={"suites": "directory for the suite modules (default: benchmarks)"})
def init(c: Context, suites: str = "benchmarks") -> None:
    """Start perfpages in this git repository: site, example suite and page, CI workflow."""
    from perfpages.cli import init as scaffold

    def write(cmd: ModuleType, out: Any) -> int:
        written = scaffold.init(Path.cwd(), suites)
        for path in written:
            out.print(f"wrote {path}", highlight=False, markup=False)
        if scaffold.WORKFLOW in written and (note := scaffold.written_note(Path.cwd())):
            out.print(f"note: {note}", highlight=False, markup=False)
        out.print("next: perfpages bench.run --suite example --quick, then pin the run in "
                  "docs/performance/example/v1.md (the guide: perfpages guide adopt)",
                  highlight=False)
        return 0

    _command(write)


@task(positional=["page"], help={"page": "a guide page (adopt, suites, pages, …; list: all)"})
def guide(c: Context, page: str) -> None:
    """The guide, as installed with perfpages: print a page as Markdown (list: the pages)."""
    from perfpages.cli import guide as pages

    def show(cmd: ModuleType, out: Any) -> int:
        sys.stdout.write(pages.listing() if page == "list" else pages.text(page))
        return 0

    _command(show)


@task(name="import", positional=["file"], iterable=["build", "env", "setting"], help={
    "file": "the table: FILE.csv or FILE.json (layout: perfpages guide commands)",
    "title": "the source's title (required)", "url": "where it was published, https://… "
    "(required, unless --unpublished)", "date": "the day it was published (or received), "
    "YYYY-MM-DD (required)",
    "unpublished": "an unpublished source: who gave it (instead of --url)",
    "rounds": "a summary: the rounds each cell summarises, as the source states",
    "rule": "a summary: the rule the source decided by (ranges: ranges of the rounds apart)",
    "build": "LABEL=BUILD: the build a label ran, as the source states it (repeatable)",
    "env": "LABEL:NAME=VALUE: an environment variable a label ran with (repeatable)",
    "setting": "LABEL:NAME=VALUE: a PostgreSQL setting a label ran with (repeatable)",
    "method": "the source's method, as a note",
    "again": "import a file already imported a second time",
    "suite": "the run's suite name (default: the file's `suite`, else its name)",
    "results": RESULTS_HELP})
def import_(c: Context, file: str, title: str | None = None, url: str | None = None,
            date: str | None = None, suite: str | None = None, unpublished: str | None = None,
            rounds: str | None = None, rule: str | None = None, build: list[str] | None = None,
            env: list[str] | None = None, setting: list[str] | None = None,
            method: str | None = None, again: bool = False,
            results: str | None = None) -> None:
    """Archive a table measured elsewhere as a sealed run: transcribed, not measured here."""
    from perfpages.cli import importer

    s = _settings(results)
    line = command_line()
    _command(lambda cmd, out: importer.import_table(
        s.results, file, title, url, date, suite, line, out, rounds=rounds, rule=rule,
        builds=build or [], env=env or [], settings=setting or [], method=method,
        unpublished=unpublished, again=again))


@task(help={"master": "HOST[:PORT] of the perfpages load's Locust master (port default 5557)",
            "once": "serve one run, then exit (default: one run after another until Ctrl-C)"})
def worker(c: Context, master: str, once: bool = False) -> None:
    """Run a Locust worker here for an HTTP load whose master runs on another host."""
    from perfpages.loadgen import locust as engine

    _command(lambda cmd, out: engine.serve_worker(
        master, once, lambda line: out.print(line, highlight=False, markup=False)))


bench = Collection("bench")
bench.add_task(run)
bench.add_task(list_, name="list")
bench.add_task(report)
bench.add_task(verify)
bench.add_task(seal)
bench.add_task(cite)
bench.add_task(replay)
bench.add_task(calibrate)

docs = Collection("docs")
docs.add_task(build)
docs.add_task(serve)

loadgen = Collection("loadgen")
loadgen.add_task(worker)

ns = Collection(bench, docs, loadgen)
ns.add_task(init)
ns.add_task(import_, name="import")
ns.add_task(render)
ns.add_task(check_site)
ns.add_task(guide)


def _interruptible(collection: Collection) -> None:
    """Every task's whole body under `interruptible`: invoke ends a KeyboardInterrupt that
    reaches it (a Ctrl-C while a task imports its modules) with exit 1 and no word."""
    for t in collection.tasks.values():
        body = t.body

        @functools.wraps(body)
        def guarded(*args: Any, __body: Callable[..., Any] = body, **kwargs: Any) -> Any:
            with interruptible(program_name(), "before it finished"):
                return __body(*args, **kwargs)

        t.body = guarded
    for sub in collection.collections.values():
        _interruptible(sub)


_interruptible(ns)

# `invoke bench report` (a space) works like `invoke bench.report`, as under `perfpages`.
accept_spaced_names()
