"""The `perfpages` command, `[tool.perfpages]` settings, task names with a space, `perfpages init`
— through the real command line."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from invoke import Collection, task

from perfpages import settings
from perfpages.cli import init
from perfpages.cli.names import failed_cast, spaced_names
from perfpages.errors import PerfpagesError
from perfpages.run.suite import load as load_suite

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "results"
ENV = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "COLUMNS": "200"}


def perfpages(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "perfpages", *args], cwd=cwd,
                          capture_output=True, text=True, env=ENV)


def invoke(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "invoke", *args], cwd=cwd,
                          capture_output=True, text=True, env=ENV)


def git_repo(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    return path


# ---- the command and its task tree --------------------------------------------------------

def test_perfpages_lists_the_same_tasks_as_invoke_here() -> None:
    ours = perfpages("--list", cwd=ROOT)
    theirs = invoke("--list", cwd=ROOT)
    assert ours.returncode == theirs.returncode == 0, ours.stderr + theirs.stderr
    tasks = [line.split()[0] for line in ours.stdout.splitlines() if line.startswith("  ")]
    assert {"bench.run", "bench.report", "bench.cite", "docs.build", "init"} <= set(tasks)
    assert tasks == [line.split()[0] for line in theirs.stdout.splitlines()
                     if line.startswith("  ")]


@pytest.mark.parametrize("command", [perfpages, invoke])
def test_a_space_between_collection_and_task_works(command, tmp_path: Path) -> None:
    done = command("bench", "list", "--results", str(RESULTS), cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert "2026-11-30-sizing-quick" in done.stdout
    wrong = command("bench", "lsit", cwd=ROOT)
    assert wrong.returncode == 1
    assert "bench.lsit" in wrong.stderr  # names what was meant, not "No idea what 'bench' is"


def test_spaced_names_joins_only_the_first_task() -> None:
    @task
    def report(c):  # pragma: no cover - never run
        pass

    ns = Collection(Collection("bench", report))
    assert spaced_names(["bench", "report", "--run", "x"], ns) == ["bench.report", "--run", "x"]
    assert spaced_names(["--echo", "bench", "report"], ns) == ["--echo", "bench.report"]
    assert spaced_names(["bench.report", "bench", "x"], ns) == ["bench.report", "bench", "x"]
    assert spaced_names(["bench", "--help"], ns) == ["bench", "--help"]
    assert spaced_names([], ns) == []


# ---- settings ------------------------------------------------------------------------------

def test_settings_come_from_pyproject_and_flags_override(tmp_path: Path) -> None:
    repo = git_repo(tmp_path / "repo")
    (repo / "pyproject.toml").write_text('[tool.perfpages]\nresults = "archive"\n'
                                         'suites = "perf"\nsite-url = "https://x.org/"\n')
    (repo / "docs").mkdir()
    s = settings.load(repo / "docs")  # from a subdirectory: the root is found upwards
    assert (s.root, s.results, s.suites, s.site_url) == (repo, repo / "archive", repo / "perf",
                                                          "https://x.org/")
    s = settings.load(repo, results=str(tmp_path / "other"), site_url="")
    assert (s.results, s.site_url) == (tmp_path / "other", "")
    bare = git_repo(tmp_path / "bare")
    (bare / "mkdocs.yml").write_text("site_name: x\nsite_url: https://m.org/\n")
    s = settings.load(bare)
    assert (s.results, s.suites, s.site_url, s.source) == (
        bare / "results", bare / "benchmarks", "https://m.org/", None)


def test_the_results_setting_reaches_the_commands(tmp_path: Path) -> None:
    repo = git_repo(tmp_path / "repo")
    shutil.copytree(RESULTS / "2026-11-30-sizing-quick", repo / "archive/2026-11-30-sizing-quick")
    (repo / "pyproject.toml").write_text('[tool.perfpages]\nresults = "archive"\n')
    done = perfpages("bench.list", cwd=repo)
    assert done.returncode == 0 and "2026-11-30-sizing-quick" in done.stdout, done.stderr
    empty = perfpages("bench.list", "--results", str(tmp_path), cwd=repo)
    assert "no archived runs" in empty.stdout


@pytest.mark.parametrize(("text", "says"), [
    ('[tool.perfpages]\nresult = "x"\n', "tool.perfpages.result: unknown setting 'result'"),
    ("[tool.perfpages]\nresults = 3\n", "tool.perfpages.results: results must be a string"),
    ("[tool.perfpages\n", "not valid TOML"),
    ("[tool]\nperfpages = 1\n", "[tool.perfpages] is not a table"),
])
def test_bad_settings_are_one_line(tmp_path: Path, text: str, says: str) -> None:
    repo = git_repo(tmp_path / "repo")
    (repo / "pyproject.toml").write_text(text)
    done = perfpages("bench.list", cwd=repo)
    assert done.returncode == 1
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    assert done.stderr.startswith("error: ") and says in done.stderr, done.stderr
    assert "pyproject.toml" in done.stderr


@pytest.mark.parametrize(("dsn", "says"), [
    ("postgresql://[bad", 'looking for matching "]"'),
    ("postgresql://me:S3cretPW@db:notaport/x", "port 'notaport' is not a port number"),
    ("host=db port=99999 password=S3cretPW", "port '99999' is not a port number"),
])
def test_a_malformed_dsn_is_one_line_without_its_password(tmp_path: Path, dsn: str,
                                                          says: str) -> None:
    done = perfpages("bench.run", "--suite", "tiny", "--quick", "--labels", "a", "--dsn", dsn,
                     "--results", str(tmp_path / "results"), cwd=ROOT)
    assert done.returncode == 1 and not (tmp_path / "results").exists()
    assert done.stderr.startswith("error: --dsn: not a valid DSN (") and says in done.stderr
    assert done.stderr.count("\n") == 1 and "S3cretPW" not in done.stderr + done.stdout


# ---- init ----------------------------------------------------------------------------------

def test_init_writes_a_site_that_builds_and_a_suite_that_loads(tmp_path: Path) -> None:
    repo = git_repo(tmp_path / "service")
    (repo / "pyproject.toml").write_text('[project]\nname = "service"\n')
    done = perfpages("init", cwd=repo)
    assert done.returncode == 0, done.stderr
    written = [line.split(" ", 1)[1] for line in done.stdout.splitlines()
               if line.startswith("wrote ")]
    assert written == [p.path for p in init.plan(repo)]
    assert all((repo / p).exists() for p in written)
    assert (repo / "pyproject.toml").read_text().startswith('[project]\nname = "service"\n\n'
                                                            "[tool.perfpages]")
    s = settings.load(repo)
    assert (s.suites, s.results) == (repo / "benchmarks", repo / "results")
    suite = load_suite("example", s.suites, quick=True)
    assert [label.name for label in suite.labels] == ["stock", "work_mem"]
    workflow = (repo / init.WORKFLOW).read_text()
    assert 'pip install "perfpages[docs]' in workflow and "--fail-on loss" in workflow
    build = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-q"], cwd=repo,
                           capture_output=True, text=True, env=ENV)
    assert build.returncode == 0, build.stderr
    assert (repo / "site/performance/example/v1/index.html").is_file()


def test_init_refuses_to_overwrite_and_writes_nothing(tmp_path: Path) -> None:
    repo = git_repo(tmp_path / "service")
    (repo / "docs").mkdir()
    (repo / "docs/index.md").write_text("# mine\n")
    (repo / "pyproject.toml").write_text('[project]\nname = "service"\n')
    done = perfpages("init", cwd=repo)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert "docs/index.md already exists; nothing was written" in done.stderr
    assert sorted(p.relative_to(repo).as_posix() for p in repo.rglob("*")
                  if ".git" not in p.parts) == ["docs", "docs/index.md", "pyproject.toml"]
    assert (repo / "docs/index.md").read_text() == "# mine\n"
    assert (repo / "pyproject.toml").read_text() == '[project]\nname = "service"\n'


def test_init_outside_git_or_twice_is_one_line(tmp_path: Path) -> None:
    done = perfpages("init", cwd=tmp_path)
    assert done.returncode == 1
    assert "is not in a git repository — run `git init` first" in done.stderr
    repo = git_repo(tmp_path / "r")
    assert perfpages("init", cwd=repo).returncode == 0
    again = perfpages("init", cwd=repo)
    assert again.returncode == 1
    assert "[tool.perfpages] already exist; nothing was written" in again.stderr


def test_this_repository_uses_what_init_writes() -> None:
    planned = {p.path: p.text for p in init.plan(ROOT)}
    ours = (ROOT / init.WORKFLOW).read_text()  # the same, but for the suites it replays
    assert ours.replace('SUITES: "sky sizing"', 'SUITES: "example"') == planned[init.WORKFLOW]
    assert 'pip install -e ".[docs]"' in planned[init.WORKFLOW]
    assert (ROOT / "tasks.py").read_text() == planned["tasks.py"]
    with pytest.raises(PerfpagesError, match="already exist"):
        init.init(ROOT)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_outside_a_run_is_one_line_and_status_130(
        sig: signal.Signals, capsys: pytest.CaptureFixture[str]) -> None:
    """Ctrl-C or SIGTERM while a command loads or before a run starts: `error: … interrupted`,
    130 as for an interrupted run — never a traceback (SIGINT) or a silent death (SIGTERM);
    the handlers are restored."""
    from perfpages.cli.interrupts import interruptible

    before = signal.getsignal(signal.SIGTERM)
    with pytest.raises(SystemExit) as done, interruptible("perfpages", "while it started"):
        os.kill(os.getpid(), sig)
        time.sleep(5)  # the signal arrives long before; reaching the end fails the test
        pytest.fail("the signal did not interrupt")
    assert done.value.code == 130
    assert capsys.readouterr().err == ("error: perfpages: interrupted while it started — run "
                                       "it again\n")
    assert signal.getsignal(signal.SIGTERM) is before


def test_every_task_body_runs_interruptible_and_the_program_imports_late() -> None:
    from perfpages.cli.tasks import ns

    def bodies(collection: Collection) -> list[object]:
        found = [t.body for t in collection.tasks.values()]
        return found + [b for sub in collection.collections.values() for b in bodies(sub)]
    assert len(bodies(ns)) >= 14
    assert all(getattr(b, "__wrapped__", None) is not None for b in bodies(ns))
    # `perfpages`'s module loads nothing before its signal handlers are in place
    done = subprocess.run([sys.executable, "-c", "import sys, perfpages.cli.program; "
                           "print(sorted(m for m in sys.modules if m.startswith('invoke')))"],
                          capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_the_guide_is_installed_with_the_package_and_messages_cite_it() -> None:
    """Every "see …" opens where perfpages is installed: `perfpages guide PAGE` prints the
    page shipped as package data; no message cites docs/guide/, which an adopter lacks."""
    guide = ROOT / "docs" / "guide"
    listed = perfpages("guide", "list", cwd=ROOT)
    assert listed.returncode == 0
    names = [line.split()[0] for line in listed.stdout.splitlines()[:-1]]
    assert names == sorted(p.stem for p in guide.glob("*.md"))
    shown = perfpages("guide", "suites", cwd=ROOT)
    assert shown.stdout == (guide / "suites.md").read_text(encoding="utf-8")
    wrong = perfpages("guide", "nosuch", cwd=ROOT)
    assert wrong.returncode == 1 and wrong.stderr == (
        f"error: guide: no guide page 'nosuch' — choose among: {', '.join(names)}\n")
    assert _strings_citing("docs/guide/") == []


def _strings_citing(text: str) -> list[str]:
    """file:line of every string in src/ holding `text`, docstrings (for readers of the
    source, who have docs/) left out."""
    import ast

    found = []
    for path in sorted((ROOT / "src").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        docs = {id(node.body[0].value) for node in ast.walk(tree)
                if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef
                              | ast.AsyncFunctionDef)
                and node.body and isinstance(node.body[0], ast.Expr)}
        found += [f"{path.relative_to(ROOT)}:{node.lineno}" for node in ast.walk(tree)
                  if isinstance(node, ast.Constant) and isinstance(node.value, str)
                  and text in node.value and id(node) not in docs]
    return found


def test_a_failed_cast_is_found_in_the_arguments_not_in_invoke_frames() -> None:
    @task
    def serve(c, port=8000, name=""):  # pragma: no cover - never run
        pass

    contexts = {c.name: c for c in Collection(Collection("docs", serve)).to_contexts()}
    assert failed_cast(["docs.serve", "--port", "x"], contexts) == ("--port", "docs.serve")
    assert failed_cast(["docs.serve", "--name", "x", "--port=8.5"], contexts) == (
        "--port", "docs.serve")
    assert failed_cast(["docs.serve", "--port", "80"], contexts) == ("an option", None)
