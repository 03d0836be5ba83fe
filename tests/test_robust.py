"""Robust readers and a typed command line: every option is checked as its type, every mistake
invoke's parser finds is one line, and text from an archive — however hostile — is printed as
it is: never terminal markup, never Markdown or HTML, never a traceback."""

from __future__ import annotations

import html
import io
import re
import subprocess
import sys
from pathlib import Path

import markdown
import pytest
from rich.console import Console

from perfpages.analysis.cite import cite
from perfpages.analysis.report import build, to_markdown
from perfpages.analysis.text import prose, span
from perfpages.archive.reader import open_run
from perfpages.cli import console
from perfpages.errors import PerfpagesError
from perfpages.site.page import render_file
from perfpages.site.store import RunStore
from perfpages.testing import Spec, generate
from sites import CLI_ENV, DEMO, Failed, build_site, make_results, perfpages

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "results"  # archived runs: read, never written
FIXTURES = Path(__file__).parent / "fixtures" / "results"

HOSTILE_RUN = "2026-11-12-synthetic-markup"
TITLE = "Sky [quick] [/bold] <script>alert(1)</script> *x* | y"
LABELS = {"[/bold]": 1.0, "Sky [quick]": 1.3, "<script>": 1.0, "*x*": 1.0, "a|b": 1.0}


def invoke(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "invoke", "-r", str(ROOT), *args], cwd=ROOT,
                          capture_output=True, text=True, env=CLI_ENV)


def one_error(done: subprocess.CompletedProcess[str]) -> str:
    """The single `error:` line of a refused command (exit 1, nothing else on stderr)."""
    assert done.returncode == 1, (done.returncode, done.stdout, done.stderr)
    assert "Traceback" not in done.stderr and len(done.stderr.splitlines()) == 1, done.stderr
    assert done.stderr.startswith("error: "), done.stderr
    return done.stderr.rstrip("\n")


# ---- a typed command line ------------------------------------------------------------------

@pytest.mark.parametrize(("args", "says"), [
    (["bench.run", "--rounds", "x"],
     "error: --rounds: not a whole number: 'x' — give --rounds a whole number of at least 1"),
    (["bench.run", "--rounds", "0"], "error: --rounds: not a round count: '0' — give --rounds a "
                                     "whole number of at least 1"),
    (["bench.run", "--rounds=2.5"], "error: --rounds: not a whole number: '2.5'"),
    (["bench.run", "--seed", "x"], "error: --seed: not a whole number: 'x' — give --seed a whole "
                                   "number"),
    (["bench.report", "--min-rounds", "x"], "error: --min-rounds: not a whole number: 'x'"),
    (["bench.report", "--min-rounds", "-3"], "error: --min-rounds: not a round count: '-3'"),
    (["docs.serve", "--port", "x"], "error: --port: not a whole number: 'x' — give --port a "
                                    "whole number (see {prog} docs.serve --help)"),
    (["docs.serve", "--port", "0"], "error: --port: not a port: '0' — give --port a whole number "
                                    "from 1 to 65535"),
    (["docs.serve", "--port", "70000"], "error: --port: not a port: '70000'"),
])
@pytest.mark.parametrize("command", [perfpages, invoke])
def test_a_number_that_is_not_one_is_one_line(command, args: list[str], says: str,
                                              tmp_path: Path) -> None:
    done = command(*args, "--results", str(tmp_path)) if args[0] != "docs.serve" \
        else command(*args)
    prog = "perfpages" if command is perfpages else "invoke"
    assert one_error(done).startswith(says.format(prog=prog))
    assert not any(tmp_path.iterdir())  # refused before anything was written


@pytest.mark.parametrize("command", [perfpages, invoke])
def test_a_valid_number_is_taken_as_one(command) -> None:
    done = command("bench.report", "--run", DEMO, "--results", str(FIXTURES), "--min-rounds", "6",
                   "--format", "json")
    assert done.returncode == 0, done.stderr
    assert '"too few rounds (5 < 6)"' in done.stdout
    same = command("bench", "report", f"--run={DEMO}", f"--results={FIXTURES}", "--min-rounds=6",
                   "--format=json")
    assert same.returncode == 0 and same.stdout == done.stdout, same.stderr


@pytest.mark.parametrize(("args", "says"), [
    (["bench.report", "--foo"],
     "error: bench.report: unknown option '--foo' — see {prog} bench.report --help"),
    (["bench", "report", "--foo"],
     "error: bench.report: unknown option '--foo' — see {prog} bench.report --help"),
    (["bench.report", "--run"],
     "error: bench.report: --run needs a value — see {prog} bench.report --help"),
    (["bench.run", "--suite"], "error: bench.run: --suite needs a value — see {prog} bench.run "
                               "--help"),
    (["bench.run", "--quick=yes"], "error: bench.run: unexpected 'yes' (not an option of this "
                                   "task, nor a task) — see {prog} bench.run --help"),
    (["bench.list", "extra"], "error: bench.list: unexpected 'extra' (not an option of this "
                              "task, nor a task) — see {prog} bench.list --help"),
    (["bench.cite"], "error: bench.cite: missing RUN — see {prog} bench.cite --help"),
    (["bench.reprot"], "error: no task 'bench.reprot' — see {prog} --list"),
    (["bench", "lsit"], "error: no task 'bench.lsit' — see {prog} --list"),
    (["--help", "nosuch"], "error: no task 'nosuch' — see {prog} --list"),
])
@pytest.mark.parametrize("command", [perfpages, invoke])
def test_a_parse_error_is_one_line_naming_the_help(command, args: list[str], says: str) -> None:
    prog = "perfpages" if command is perfpages else "invoke"
    assert one_error(command(*args)) == says.format(prog=prog)


def test_the_help_an_error_names_exists() -> None:
    done = perfpages("bench.report", "--help")
    assert done.returncode == 0 and "--min-rounds" in done.stdout, done.stderr


# ---- hostile text from an archive ----------------------------------------------------------

@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> Path:
    results = tmp_path_factory.mktemp("results")
    generate(results, Spec(run_id=HOSTILE_RUN, title=TITLE, labels=LABELS,
                           blocks={"[/bold] *b*": [{"call": "[red]x", "callers": 32}]},
                           windows=1, floors=False))
    return results


def visible(markdown_text: str) -> str:
    """What a reader sees once the Markdown is rendered: tags dropped, references decoded."""
    rendered = markdown.markdown(markdown_text, extensions=["tables"])
    assert "<script" not in rendered and "<em>" not in rendered and "<strong>x" not in rendered
    return html.unescape(re.sub(r"<[^>]+>", "", rendered))


def terminal(data: dict, width: int = 300) -> str:
    out = io.StringIO()
    console.print_terminal(data, Console(file=out, width=width, color_system=None))
    return out.getvalue()


def test_the_terminal_report_prints_markup_as_text(hostile: Path) -> None:
    data = build(open_run(hostile / HOSTILE_RUN))
    text = terminal(data)
    assert TITLE in text
    for label in LABELS:
        assert label in text
    assert "[/bold] *b*" in text and "call=[red]x" in text
    assert "Sky [quick] vs [/bold]" in text  # in the changes and their summary
    narrow = terminal(data, 80)  # the shared naming column, too
    assert "Sky [quick]" in narrow and "[red]x" in narrow


def test_list_and_verify_print_markup_as_text(hostile: Path) -> None:
    out = io.StringIO()
    assert console.list_runs(hostile, Console(file=out, width=300, color_system=None)) == 0
    assert ", ".join(LABELS) in out.getvalue()
    out = io.StringIO()
    assert console.verify_runs(hostile, None, Console(file=out, width=300)) == 0
    assert f"ok: {HOSTILE_RUN} (complete)" in out.getvalue()


def test_markdown_report_and_cite_escape_titles_and_labels(hostile: Path) -> None:
    run = open_run(hostile / HOSTILE_RUN)
    data = build(run)
    md = to_markdown(data)
    assert "<script>" not in md and "[/bold]" not in md and "*x*" not in md
    shown = visible(md)
    assert TITLE in shown and "[/bold] *b*" in shown
    rows = [line for line in md.splitlines() if line.startswith("| ")]
    assert {line.count(" | ") for line in rows[:3]} == {len(LABELS) + 1}  # `a|b` is one cell
    for label in LABELS:
        assert label in shown
    block = cite(run, "https://example.org/")
    assert "<script>" not in block.replace("`<script>`", "") and "*x*" not in block.replace(
        "`*x*`", "")
    shown = visible(block)
    assert TITLE in shown and all(f"{label}: " in shown for label in LABELS)


def test_hostile_text_through_the_command_line(hostile: Path) -> None:
    listed = perfpages("bench.list", "--results", str(hostile))
    assert listed.returncode == 0, listed.stderr
    assert ", ".join(LABELS) in listed.stdout
    report = invoke("bench.report", "--results", str(hostile))
    assert report.returncode == 0 and "Traceback" not in report.stderr, report.stderr
    assert TITLE in report.stdout and "Sky [quick]" in report.stdout
    md = perfpages("bench.report", "--results", str(hostile), "--format", "md")
    assert md.returncode == 0 and TITLE in visible(md.stdout), md.stderr
    cited = perfpages("bench.cite", HOSTILE_RUN, "--results", str(hostile), "--site-url", "")
    assert cited.returncode == 0 and TITLE in visible(cited.stdout), cited.stderr


@pytest.mark.parametrize(("text", "escaped"), [
    ("work_mem", "work_mem"),  # inside a word, never emphasis: left as typed
    ("_x_", "&#95;x&#95;"),
    ("the suite's (5 < 6) & more", "the suite's (5 < 6) & more"),
    ("<b>&amp;", "&#60;b>&#38;amp;"),
    ("Sky [quick] *x* | `y`", "Sky &#91;quick&#93; &#42;x&#42; &#124; &#96;y&#96;"),
    ("> quote\nnext", "&#62; quote next"),
])
def test_prose_escapes_only_what_could_act(text: str, escaped: str) -> None:
    assert prose(text) == escaped
    assert visible(f"- {prose(text)}").strip() == text.replace("\n", " ")


def test_span_cannot_be_broken_out_of() -> None:
    assert span("v1.0") == "`v1.0`"
    assert span("a`b") == "``a`b``"
    assert span("`x") == "`` `x ``"
    assert visible(span("`x")).strip() == "`x"


# ---- a Python error inside a macro expression ----------------------------------------------

PAGE = f"---\nruns:\n  a: {DEMO}\n---\n\n# Title\n\n```\n{{{{ 1/0 }}}}\n```\n\nx {{{{ {{}} }}}} y\n"


@pytest.mark.parametrize(("expression", "says"), [
    ("1/0", "ZeroDivisionError: division by zero"),
    ("[].pop()", "IndexError: pop from empty list"),
    ("'%d' % 'x'", "%d format: a real number is required, not str"),
    ("(1).bit_length() // 0", "ZeroDivisionError"),
])
def test_an_error_in_an_expression_names_the_page_line(tmp_path: Path, expression: str,
                                                       says: str) -> None:
    results = make_results(tmp_path / "results")
    page = tmp_path / "v1.md"
    page.write_text(PAGE.replace("{{ {} }}", "{{ " + expression + " }}"))
    with pytest.raises(PerfpagesError) as caught:
        render_file(page, path="docs/v1.md", store=RunStore(results))
    # Line 12 of the page: after four lines of front matter and a fence holding `{{ 1/0 }}`.
    assert str(caught.value).startswith("docs/v1.md:12: macro: ")
    assert says in str(caught.value) and "\n" not in str(caught.value)


def test_an_error_in_an_expression_stops_a_strict_build_with_the_page_line(
        tmp_path: Path) -> None:
    results = make_results(tmp_path / "results")
    with pytest.raises(Failed) as caught:
        build_site(tmp_path / "site", {"perf/v1.md": PAGE.replace("{{ {} }}", "{{ 1/0 }}")},
                   results)
    assert ("docs/perf/v1.md:12: macro: ZeroDivisionError: division by zero — see "
            "the guide: perfpages guide pages") in caught.value.messages
    assert not any("Traceback" in m for m in caught.value.messages)


def test_a_results_directory_with_markup_in_its_name_is_printed_as_is(tmp_path: Path) -> None:
    empty = tmp_path / "[/bold] [quick]"
    empty.mkdir(parents=True)  # "[" holds the directory "bold] [quick]"
    for command in (console.list_runs, lambda d, out: console.verify_runs(d, None, out)):
        out = io.StringIO()
        assert command(empty, Console(file=out, width=300)) == 0
        assert out.getvalue() == f"no archived runs in {empty}\n"
