"""perfpages is on no package index: `perfpages init` writes a CI workflow that installs it from
where it is installed here, pinned exactly, or a placeholder it names in one line; a wheel built
from a checkout records that checkout's commit as the harness's.

Through the real command line, offline: perfpages is installed (pip, no index, no deps) from a
git repository served by `git daemon` (a URL CI could reach) and from a wheel; `perfpages init`
runs with that install first on its path; then the workflow's own Install line runs into a
fresh directory, and what it installed names the commit."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from perfpages.cli import init
from perfpages.processes import free_port
from test_provenance import copy_source, git, harness_of, install  # beside this file
from test_provenance import init as git_init

OFFLINE = "--no-deps --no-build-isolation --no-index --disable-pip-version-check -q"


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    """perfpages' sources committed in a git repository served over git:// (a URL that is not
    a path on this machine): (its URL, its HEAD)."""
    base = tmp_path_factory.mktemp("served")
    repo = copy_source(base / "perfpages")
    git_init(repo)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "perfpages")
    port = free_port()
    daemon = subprocess.Popen(["git", "daemon", "--export-all", "--reuseaddr",
                               f"--base-path={base}", "--listen=127.0.0.1", f"--port={port}",
                               str(base)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"git://127.0.0.1:{port}/perfpages"
    try:
        for _ in range(100):  # until it answers
            if subprocess.run(["git", "ls-remote", url], capture_output=True).returncode == 0:
                break
            time.sleep(0.1)
        yield url, git(repo, "rev-parse", "HEAD")
    finally:
        daemon.terminate()
        daemon.wait()


def adopter(path: Path) -> Path:
    path.mkdir()
    git_init(path)
    (path / "pyproject.toml").write_text('[project]\nname = "service"\n')
    return path


def perfpages_init(repo: Path, site: Path) -> subprocess.CompletedProcess[str]:
    """`perfpages init` run by the perfpages installed in `site` (first on the path)."""
    env = {**os.environ, "PYTHONPATH": str(site), "COLUMNS": "200"}
    return subprocess.run([sys.executable, "-m", "perfpages", "init"], cwd=repo, env=env,
                          capture_output=True, text=True)


def install_lines(repo: Path) -> list[str]:
    jobs = yaml.safe_load((repo / init.WORKFLOW).read_text())["jobs"]
    return [step["run"] for job in jobs.values() for step in job.get("steps", [])
            if step.get("name") == "Install"]


def test_a_git_install_gives_a_workflow_that_installs_the_same_commit(
        served: tuple[str, str], tmp_path: Path) -> None:
    url, head = served
    site = install(tmp_path / "site", f"git+{url}@main")
    repo = adopter(tmp_path / "service")
    done = perfpages_init(repo, site)
    assert done.returncode == 0, done.stderr
    assert "note:" not in done.stdout
    want = f'pip install "perfpages[docs] @ git+{url}@{head}"'
    assert install_lines(repo) == [want, want]  # the site and bench jobs
    # the workflow's step as written (offline: no index, no dependencies) into a fresh target
    fresh = tmp_path / "fresh"
    shim = (f'pip() {{ "{sys.executable}" -m pip "$@" --target "{fresh}" {OFFLINE} '
            '--no-compile; }')  # bytecode is not what this checks (a third of the install)
    ran = subprocess.run(["bash", "-e", "-c", f"{shim}\n{want}"], capture_output=True,
                         text=True)
    assert ran.returncode == 0, ran.stderr
    found = harness_of(fresh, cwd=repo)
    assert str(found["file"]).startswith(str(fresh))
    assert (found["commit"], found["dirty"]) == (head, False)


def test_a_wheel_install_gets_a_placeholder_named_in_one_line(
        served: tuple[str, str], tmp_path: Path) -> None:
    url, head = served
    checkout = tmp_path / "checkout"
    subprocess.run(["git", "clone", "-q", url, str(checkout)], check=True)
    wheels = tmp_path / "wheels"
    subprocess.run([sys.executable, "-m", "pip", "wheel", *OFFLINE.split(), "-w", str(wheels),
                    str(checkout)], check=True, capture_output=True)
    wheel = next(wheels.glob("perfpages-*.whl"))
    site = install(tmp_path / "site", str(wheel))
    # the wheel was built from a checkout: runs name its commit, not "unknown"
    assert harness_of(site, cwd=tmp_path)["commit"] == head
    repo = adopter(tmp_path / "service")
    done = perfpages_init(repo, site)
    assert done.returncode == 0, done.stderr
    notes = [line for line in done.stdout.splitlines() if line.startswith("note:")]
    assert len(notes) == 1 and str(wheel) in notes[0] and init.PLACEHOLDER in notes[0]
    assert install_lines(repo) == [f'pip install "perfpages[docs] @ {init.PLACEHOLDER}"'] * 2
    # a local clone whose commit its remote (a URL, not a path) holds is pinned to that remote
    assert init.source({"url": checkout.as_uri(), "dir_info": {}}).requirement == \
        f"perfpages[docs] @ git+{url}@{head}"


@pytest.mark.parametrize(("origin", "requirement"), [
    (None, "perfpages[docs]==0.1.0"),  # from a package index
    ({"url": "https://example.org/perfpages.git",
      "vcs_info": {"vcs": "git", "commit_id": "a" * 40}},
     f"perfpages[docs] @ git+https://example.org/perfpages.git@{'a' * 40}"),
    ({"url": "https://example.org/perfpages-0.1.0-py3-none-any.whl",
      "archive_info": {"hashes": {"sha256": "b" * 64}}},
     f"perfpages[docs] @ https://example.org/perfpages-0.1.0-py3-none-any.whl#sha256={'b' * 64}"),
    ({"url": "file:///nowhere/perfpages-0.1.0-py3-none-any.whl", "archive_info": {}}, None),
    ({"url": "file:///nowhere/perfpages", "dir_info": {}}, None),
    ({"url": "file:///nowhere/perfpages", "vcs_info": {"vcs": "git", "commit_id": "c" * 40}},
     None),
    ({"url": "https://bob:t0ken@example.org/perfpages.git",  # never a token in the workflow
      "vcs_info": {"vcs": "git", "commit_id": "d" * 40}},
     f"perfpages[docs] @ git+https://example.org/perfpages.git@{'d' * 40}"),
    ({"url": 'https://example.org/$(touch x)"', "vcs_info": {"vcs": "git", "commit_id": "e" * 40}},
     None),  # nothing the shell or YAML would read as code
])
def test_where_ci_installs_from(origin: dict[str, object] | None,
                                requirement: str | None) -> None:
    assert init.source(origin, "0.1.0").requirement == requirement
