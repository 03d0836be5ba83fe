"""`perfpages init` checks everything before it writes anything: through the real command in
throwaway git repositories, each way of the issue (#24 item 3) it used to crash, half-write, write
outside the repository or corrupt pyproject.toml is now one line, exit 1 and nothing written;
the pyproject.toml edit (tomlkit) on its own, and the write's roll-back."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from perfpages import settings
from perfpages.cli import init, pyproject
from perfpages.errors import PerfpagesError

ENV = {**os.environ, "COLUMNS": "200"}


def perfpages_init(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "perfpages", "init", *args], cwd=cwd,
                          capture_output=True, text=True, env=ENV)


def tree(top: Path) -> dict[str, str]:
    """Every path under `top` (but .git) with what it is: a file's text, a link's target."""
    out = {}
    for path in sorted(top.rglob("*")):
        if ".git" in path.relative_to(top).parts:
            continue
        rel = path.relative_to(top).as_posix()
        if path.is_symlink():
            out[rel] = f"-> {os.readlink(path)}"
        elif path.is_dir():
            out[rel] = "dir"
        else:
            out[rel] = path.read_bytes().decode("latin-1")
    return out


@pytest.fixture
def readonly() -> Iterator[Callable[[Path], None]]:
    """Makes a directory unwritable even for root (chattr +i), or skips the test."""
    undo: list[Callable[[], object]] = []

    def make(path: Path) -> None:
        path.chmod(0o555)
        undo.append(lambda: path.chmod(0o755))
        if os.access(path, os.W_OK) and shutil.which("chattr") and subprocess.run(
                ["chattr", "+i", str(path)], capture_output=True).returncode == 0:
            undo.append(lambda: subprocess.run(["chattr", "-i", str(path)], check=True))
        if os.access(path, os.W_OK):
            pytest.skip("root, and chattr +i does not work here: no directory is read-only")

    yield make
    for step in reversed(undo):
        step()


def _file(rel: str) -> Callable[[Path], None]:
    def make(repo: Path) -> None:
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text("mine\n")
    return make


def _pyproject(data: bytes) -> Callable[[Path], None]:
    return lambda repo: (repo / "pyproject.toml").write_bytes(data)


def _dangling(repo: Path) -> None:
    (repo / "mkdocs.yml").symlink_to(repo.parent / "elsewhere.yml")


def _link_out(repo: Path) -> None:
    (repo.parent / "elsewhere").mkdir()
    (repo / "docs").symlink_to(repo.parent / "elsewhere")


REFUSED = {  # case: (set-up, --suites, what the one line says)
    "workflows is a file": (_file(".github/workflows"), None,
                            ".github/workflows is a file where init needs a directory"),
    "docs is a file": (_file("docs"), None, "docs is a file where init needs a directory"),
    "results is a file": (_file("results"), None,
                          "results is a file where init needs a directory"),
    "pyproject not UTF-8": (_pyproject(b'[project]\nname = "caf\xe9"\n'), None,
                            "pyproject.toml: not UTF-8"),
    "tool is not a table": (_pyproject(b'tool = "x"\n'), None,
                            "pyproject.toml: tool: `tool` is a string, not a table"),
    "dangling mkdocs.yml": (_dangling, None, "mkdocs.yml is a dangling link"),
    "docs links out": (_link_out, None, "docs links outside the repository"),
    "suites ../x": (None, "../x", "--suites: ../x is outside the repository"),
    "suites absolute": (None, "ABS", "is an absolute path"),
}


@pytest.mark.parametrize("case", REFUSED)
def test_a_refused_init_is_one_line_and_writes_nothing(case: str, tmp_path: Path) -> None:
    setup, suites, says = REFUSED[case]
    repo = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    if setup:
        setup(repo)
    before = tree(tmp_path)  # the repository and around it
    args = ["--suites", str(tmp_path / "abs") if suites == "ABS" else suites] if suites else []
    done = perfpages_init(*args, cwd=repo)
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stderr.startswith("error: ") and done.stderr.count("\n") == 1, done.stderr
    assert says in done.stderr and "Traceback" not in done.stderr, done.stderr
    assert tree(tmp_path) == before
    assert done.stdout == ""


def test_init_after_a_refused_one_writes_everything(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    _file(".github/workflows")(repo)
    (repo / "pyproject.toml").write_text('[project]\nname = "s"\n')
    (repo / "pyproject.toml").chmod(0o640)
    assert perfpages_init(cwd=repo).returncode == 1
    (repo / ".github/workflows").unlink()
    done = perfpages_init(cwd=repo)
    assert done.returncode == 0, done.stderr
    assert sorted(p for p, kind in tree(repo).items() if kind != "dir") == sorted(
        init.targets("benchmarks"))
    assert (repo / "pyproject.toml").stat().st_mode & 0o777 == 0o640  # edited, not replaced


def test_a_read_only_directory_is_refused_first(tmp_path: Path, readonly) -> None:
    repo = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / "docs").mkdir()
    readonly(repo / "docs")
    before = tree(tmp_path)
    with pytest.raises(PerfpagesError, match=r"docs is read-only; nothing was written — make "):
        init.init(repo)
    assert tree(tmp_path) == before


def test_a_write_that_fails_after_the_checks_takes_back_the_others(tmp_path: Path,
                                                                   readonly) -> None:
    repo = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / "pyproject.toml").write_text('[project]\nname = "s"\n')
    planned = init.plan(repo)  # checked, then the machine changes under it
    (repo / ".github").mkdir()
    readonly(repo / ".github")
    before = tree(tmp_path)
    with pytest.raises(PerfpagesError, match=r"cannot write in .*\.github: .*nothing was written"):
        init.write(repo, planned)
    assert tree(tmp_path) == before


def test_a_quote_in_suites_stays_valid_toml(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    done = perfpages_init("--suites", 'bench"marks', cwd=repo)
    assert done.returncode == 0, done.stderr
    assert settings.load(repo).suites == repo / 'bench"marks'
    assert (repo / 'bench"marks/example.py').is_file()


# ---- the pyproject.toml edit ----------------------------------------------------------------

def test_the_edit_keeps_comments_and_layout_and_adds_only_the_section() -> None:
    text = ('# ours\n[project]\nname = "s"  # the name\n\n[tool.ruff]\nline-length = 99\n\n'
            "[build-system]\nrequires = []")  # no newline at the end
    out = pyproject.with_settings(text, "bench'\"marks")
    assert out.startswith(text.split("[build-system]")[0] + "[tool.perfpages]\n")
    assert out.endswith("\n\n[build-system]\nrequires = []\n")
    data = tomllib.loads(out)
    assert data["tool"] == {"ruff": {"line-length": 99},
                            "perfpages": {"suites": "bench'\"marks", "results": "results"}}
    assert "# site-url" in out


@pytest.mark.parametrize("text", ["", "tool.ruff.x = 1\n", "[tool]\nx = 1\n",
                                  "[[tool.x]]\na = 1\n", '[project]\r\nname = "s"\r\n'])
def test_the_edit_adds_the_section_to_any_tool_table(text: str) -> None:
    data = tomllib.loads(pyproject.with_settings(text, "benchmarks"))
    assert data["tool"]["perfpages"] == {"suites": "benchmarks", "results": "results"}
    assert {k: v for k, v in data["tool"].items() if k != "perfpages"} == tomllib.loads(
        text).get("tool", {})


@pytest.mark.parametrize(("text", "says"), [
    ('tool = "x"\n', "`tool` is a string, not a table"),
    ("tool = {ruff = {x = 1}}\n", "`tool` is an inline table, not a table"),
    ("[[tool]]\nx = 1\n", "`tool` is an array, not a table"),
    ("[project\n", "not valid TOML"),
])
def test_an_edit_that_cannot_be_made_is_refused(text: str, says: str) -> None:
    with pytest.raises(PerfpagesError, match=says):
        pyproject.with_settings(text, "benchmarks")


@pytest.mark.parametrize("suites", ["", " ", "a\nb", "/abs", "..", "a/../../x", ".git/hooks",
                                    "tasks.py", "mkdocs.yml/x"])
def test_suites_outside_the_repository_or_on_a_file_init_writes_is_refused(suites: str) -> None:
    with pytest.raises(PerfpagesError, match="--suites"):
        init.suites_dir(suites)
    assert init.suites_dir("./perf/suites/") == "perf/suites"
