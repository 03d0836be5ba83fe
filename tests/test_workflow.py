"""The CI workflow `perfpages init` writes, and this repository's own, which is the same template
rendered for this repository: actionlint (with shellcheck on the `run:` scripts) accepts both, and
what the workflow promises (caches, strict build, claims, one PR comment, artifacts, Pages) is
in it, each job with the least permissions."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import yaml

from perfpages.cli import init
from test_cli import ENV, git_repo, perfpages  # beside this file

ROOT = Path(__file__).resolve().parent.parent
OURS = ROOT / init.WORKFLOW
RUNNER_IN_JOB_ENV = "context \"runner\" is not allowed here"


def tool(name: str) -> str:
    """A linter from the dev extra: next to this Python first, as a venv that is not active has."""
    found = shutil.which(name, path=str(Path(sys.executable).parent)) or shutil.which(name)
    assert found, f"{name} is not installed: pip install -e '.[dev]'"
    return found


def actionlint(workflow: Path) -> subprocess.CompletedProcess[str]:
    # -shellcheck names it: actionlint silently skips the run: scripts when it finds none
    return subprocess.run([tool("actionlint"), "-no-color", f"-shellcheck={tool('shellcheck')}",
                           str(workflow)], capture_output=True, text=True, cwd=workflow.parent)


def ours_rendered() -> str:
    """The template for this repository: its suites directory, the suites its CI replays."""
    planned = {p.path: p.text for p in init.plan(ROOT, "benchmarks", "sky sizing")}
    return planned[init.WORKFLOW]


def test_what_init_writes_passes_actionlint(tmp_path: Path) -> None:
    repo = git_repo(tmp_path / "service")
    (repo / "pyproject.toml").write_text('[project]\nname = "service"\n')
    done = perfpages("init", cwd=repo)
    assert done.returncode == 0, done.stderr
    lint = actionlint(repo / init.WORKFLOW)
    assert lint.returncode == 0, lint.stdout + lint.stderr
    text = (repo / init.WORKFLOW).read_text()
    assert 'pip install "perfpages[docs]' in text and "hashFiles('pyproject.toml', " \
        "'benchmarks/**')" in text and 'SUITES: "example"' in text
    # the site job's own commands, as written, in the new repository: the strict build, then
    # the claims (pytest exits 5, a failure, if the plugin collected nothing)
    site = steps(yaml.safe_load(text)["jobs"]["site"])
    env = {**ENV, "PATH": f"{Path(sys.executable).parent}:{ENV['PATH']}"}
    for name in ("Build the site", "Check the claims"):
        done = subprocess.run(["bash", "-e", "-c", site[name]["run"]], cwd=repo, env=env,
                              capture_output=True, text=True)
        assert done.returncode == 0, f"{name}: {done.stdout[-800:]}{done.stderr[-800:]}"
    assert "passed" in done.stdout and (repo / "site/index.html").is_file()


def test_this_repository_runs_what_init_writes_and_it_lints() -> None:
    assert OURS.read_text() == ours_rendered(), (
        "regenerate it: python -c \"from pathlib import Path; from perfpages.cli import init; "
        "Path(init.WORKFLOW).write_text({p.path: p.text for p in init.plan(Path.cwd(), "
        "'benchmarks', 'sky sizing')}[init.WORKFLOW])\"")
    lint = actionlint(OURS)
    assert lint.returncode == 0, lint.stdout + lint.stderr


def test_actionlint_refuses_the_runner_context_in_a_job_env(tmp_path: Path) -> None:
    # the fault of the old workflow: it never started on GitHub
    text = ours_rendered().replace('      PR_ARGS: ""\n', '      PR_ARGS: ""\n'
                                   "      RESULTS: ${{ runner.temp }}/perfpages-results\n", 1)
    assert "runner.temp }}/perfpages-results" in text
    bad = tmp_path / "perfpages.yml"
    bad.write_text(text)
    lint = actionlint(bad)
    assert lint.returncode == 1 and RUNNER_IN_JOB_ENV in lint.stdout, lint.stdout


def steps(job: dict) -> dict[str, dict]:
    """A job's steps by the action they use, or by their name."""
    return {s.get("uses", "").split("@")[0] or s["name"]: s for s in job["steps"]}


def test_each_job_does_its_part_with_the_least_permissions() -> None:
    flow = yaml.safe_load(ours_rendered())
    jobs = flow["jobs"]
    assert flow["permissions"] == {}
    assert {name: job["permissions"] for name, job in jobs.items()} == {
        "site": {"contents": "read"}, "bench": {"contents": "read"},
        "pages": {"pages": "write", "id-token": "write"},
        "comment": {"pull-requests": "write"}}

    site = steps(jobs["site"])
    assert site["actions/setup-python"]["with"]["cache"] == "pip"
    assert site["actions/cache"]["with"]["path"].startswith(".cache/perfpages")
    assert site["Build the site"]["run"] == "mkdocs build --strict"
    assert site["Check the claims"]["run"].startswith("pytest ")
    assert site["actions/upload-artifact"]["with"] == {"name": "perfpages-site", "path": "site"}
    assert site["actions/upload-pages-artifact"]["with"] == {"path": "site"}

    pages = jobs["pages"]
    assert pages["needs"] == "site" and pages["environment"]["name"] == "github-pages"
    assert pages["concurrency"] == {"group": "pages", "cancel-in-progress": False}
    assert list(steps(pages)) == ["actions/configure-pages", "actions/deploy-pages"]

    bench = steps(jobs["bench"])
    assert jobs["bench"]["env"]["SUITES"] == "sky sizing"
    assert "runner.temp" not in str(jobs["bench"]["env"])
    restore, save = bench["actions/cache/restore"], bench["actions/cache/save"]
    assert restore["with"]["path"] == save["with"]["path"] == "${{ env.PERFPAGES_CACHE }}"
    assert "hashFiles('pyproject.toml', 'benchmarks/**')" in restore["with"]["key"]
    assert save["if"].startswith("always()")  # a run that failed on a loss still fills it
    assert "--ref" not in bench["Replay"]["run"] and "$BASE" in bench["Replay"]["run"]
    assert "GITHUB_OUTPUT" in bench["Report"]["run"]
    assert bench["actions/upload-artifact"]["with"]["name"] == "perfpages-results"
    assert "--fail-on loss" in bench["Fail on a clear loss"]["run"]

    comment = jobs["comment"]
    assert comment["needs"] == "bench" and comment["if"].startswith("always()")
    script = steps(comment)["actions/github-script"]
    assert script["env"]["CITE"] == "${{ needs.bench.outputs.cite }}"  # never in the script
    assert "updateComment" in script["with"]["script"] and "${{" not in script["with"]["script"]
