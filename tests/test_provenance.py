"""What run.json says made a run: perfpages' own version and commit from its installed
distribution (never the HEAD of the repository it is used in), the commit of the repository
holding the suites, and pins shown one way everywhere.

perfpages is installed for real (pip, no build isolation, no index) from throwaway copies of
this checkout into a directory inside an adopter's repository, and asked from a child Python
started there (`-S`: only that install is importable)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from perfpages.analysis.cite import cite
from perfpages.archive.reader import Run
from perfpages.run import machine
from perfpages.site import escape
from perfpages.site.facts import Facts
from perfpages.site.pins import Pins
from perfpages.site.store import RunStore

ROOT = Path(__file__).resolve().parent.parent
VERSION = "9.9.9"  # the copies' version (their _version.py); this checkout's stays 0.1.0


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True,
                          text=True).stdout.strip()


def init(path: Path) -> None:
    git(path, "init", "-q", "-b", "main")
    git(path, "config", "user.email", "test@example.org")
    git(path, "config", "user.name", "test")


def copy_source(target: Path) -> Path:
    """This checkout's package (as it is now, committed or not) with its own version number."""
    target.mkdir(parents=True)
    shutil.copytree(ROOT / "src" / "perfpages", target / "src" / "perfpages",
                    ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "README.md", target)
    shutil.copy(ROOT / "setup.py", target)  # the build that records a wheel's commit
    shutil.copy(ROOT / "pyproject.toml", target)  # its version is _version.py's
    version = target / "src" / "perfpages" / "_version.py"
    text = version.read_text()
    assert '__version__ = "0.1.0"' in text
    version.write_text(text.replace('__version__ = "0.1.0"', f'__version__ = "{VERSION}"'))
    return target


def install(target: Path, *what: str) -> Path:
    # --no-compile: no test imports the installed copy often enough to need its bytecode, and
    # compiling every module took a third of each install
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--disable-pip-version-check",
                    "--no-deps", "--no-build-isolation", "--no-index", "--no-compile",
                    "--target", str(target),
                    *what], check=True, capture_output=True, text=True)
    return target


def harness_of(site: Path, cwd: Path, env: dict[str, str] | None = None) -> dict[str, object]:
    """machine.harness() in a Python that sees only the perfpages installed into `site`."""
    code = ("import json, site, sys; site.addsitedir(sys.argv[1]); import perfpages; "
            "from perfpages.run import machine; "
            "print(json.dumps({**machine.harness(), 'file': perfpages.__file__}))")
    env = env or {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run([sys.executable, "-S", "-c", code, str(site)], cwd=cwd, check=True,
                          capture_output=True, text=True, env=env)
    return json.loads(done.stdout)


@pytest.fixture(scope="module")
def adopter(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Another project's repository, with a commit of its own: perfpages is installed in it."""
    path = tmp_path_factory.mktemp("adopter")
    init(path)
    (path / "app.py").write_text("print('hello')\n")
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", "the adopter's own commit")
    return path


@pytest.fixture(scope="module")
def perfpages_repo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A git repository of perfpages' sources: (its top level, its HEAD)."""
    path = copy_source(tmp_path_factory.mktemp("perfpages-git") / "perfpages")
    init(path)
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", "perfpages")
    return path, git(path, "rev-parse", "HEAD")


def test_a_git_install_records_the_commit_pip_installed(adopter: Path,
                                                        perfpages_repo: tuple[Path, str]) -> None:
    repo, head = perfpages_repo
    site = install(adopter / ".venv-git", f"git+{repo.as_uri()}@main")
    found = harness_of(site, cwd=adopter)
    assert str(found["file"]).startswith(str(site))  # the installed copy ran, not this checkout
    assert found == {"version": VERSION, "commit": head, "dirty": False, "file": found["file"]}
    assert found["commit"] != git(adopter, "rev-parse", "HEAD")


def test_an_editable_checkout_records_its_own_head(adopter: Path,
                                                   perfpages_repo: tuple[Path, str]) -> None:
    repo, head = perfpages_repo
    site = install(adopter / ".venv-editable", "-e", str(repo))
    # A caller inside a git hook points git at its own repository: that must not answer.
    env = {"PATH": "/usr/bin:/bin", "GIT_DIR": str(adopter / ".git")}
    found = harness_of(site, cwd=adopter, env=env)
    assert str(found["file"]).startswith(str(repo))
    assert (found["version"], found["commit"], found["dirty"]) == (VERSION, head, False)
    module = repo / "src" / "perfpages" / "errors.py"
    original = module.read_text()
    module.write_text(original + "# an uncommitted change\n")
    try:
        assert harness_of(site, cwd=adopter)["dirty"] is True
    finally:
        module.write_text(original)


@pytest.mark.parametrize("how", ["directory", "editable", "wheel"])
def test_a_copy_inside_another_repository_has_no_commit(adopter: Path, tmp_path: Path,
                                                        how: str) -> None:
    """A vendored copy is no checkout of its own: the adopter's HEAD is not perfpages' commit."""
    source = copy_source(adopter / "vendor" / f"perfpages-{how}")
    site = tmp_path / "site"
    if how == "wheel":
        wheels = tmp_path / "wheels"
        subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps",
                        "--no-build-isolation", "--no-index", "-w", str(wheels), str(source)],
                       check=True, capture_output=True)
        install(site, str(next(wheels.glob("*.whl"))))
    else:
        install(site, *(["-e"] if how == "editable" else []), str(source))
    found = harness_of(site, cwd=adopter)
    assert (found["version"], found["commit"]) == (VERSION, None)
    assert git(source, "rev-parse", "--show-toplevel") == str(adopter.resolve())


def test_this_checkout_records_its_head_as_before() -> None:
    """tests/test_results.py needs archived runs' harness commits to be ancestors of HEAD."""
    from importlib import metadata

    origin = json.loads(metadata.distribution("perfpages").read_text("direct_url.json") or "{}")
    if origin.get("url") != ROOT.as_uri() or not (ROOT / ".git").exists():
        pytest.skip("needs this checkout installed in editable mode")
    found = machine.harness()
    assert found["commit"] == git(ROOT, "rev-parse", "HEAD")
    assert found["dirty"] == bool(git(ROOT, "status", "--porcelain", "--untracked-files=no"))


def test_the_suite_repository_is_its_commit_and_dirty_flag(tmp_path: Path) -> None:
    suites = tmp_path / "repo" / "benchmarks"
    suites.mkdir(parents=True)
    init(suites.parent)
    (suites / "one.py").write_text("# a suite\n")
    git(suites.parent, "add", "-A")
    git(suites.parent, "commit", "-q", "-m", "suites")
    head = git(suites.parent, "rev-parse", "HEAD")
    assert machine.repository(suites, (suites / "one.py",)) == {"commit": head, "dirty": False}
    (suites / "two.py").write_text("# a new suite, not committed\n")
    (suites / "__pycache__").mkdir()
    (suites / "__pycache__" / "one.pyc").write_bytes(b"")
    assert machine.repository(suites, (suites / "one.py",))["dirty"] is False
    assert machine.repository(suites, (suites / "two.py",)) == {"commit": head, "dirty": True}
    (suites / "one.py").write_text("# changed\n")
    assert machine.repository(suites, (suites / "one.py",))["dirty"] is True
    outside = tmp_path / "plain"
    outside.mkdir()
    assert machine.repository(outside) == {"commit": None}


def test_a_pin_reads_the_same_in_a_citation_a_run_page_and_a_fact(demo_run: Run,
                                                                   demo_results: Path) -> None:
    from perfpages.site.runpages import render

    facts = Facts(Pins({"demo": RunStore(demo_results).get(demo_run.manifest.id)}))
    page = render(demo_run, "https://perf.example.org/")
    for name, label in demo_run.manifest.labels.items():
        shown = label.pin.describe()
        assert f"`{name}`: {shown}" in cite(demo_run, "https://perf.example.org/")
        assert escape.md(shown) in page
        assert facts.fact(f"labels.{name}.pin") == escape.md(shown)
    git_pin = demo_run.manifest.labels["v1.1"].pin
    assert git_pin.describe() == f"https://example.org/demo-service.git @ {git_pin.commit} (v1.1)"
