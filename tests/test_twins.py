"""An A/A twin follows its label: `--ref base=…` (or `--pin`) moves `base` and the twin declared
with `base.again(…)` together, so the pair that certifies a block is not lost; a label of the
same build that is no declared twin (a suite's base and head both at HEAD) keeps its pin."""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest

from perfpages import LabelSpec
from perfpages.run.overrides import override, twins
from perfpages.run.suite import Suite, load
from test_runner import BENCHMARKS, invoke  # beside this file


def suite_of(*labels: LabelSpec) -> Suite:
    return replace(load("tiny", BENCHMARKS, True), labels=labels)


BASE = LabelSpec("base", git="/srv/service", ref="HEAD")
HEAD = LabelSpec("head", git="/srv/service", ref="HEAD")  # the same build, but no twin


@pytest.mark.parametrize("twin", [BASE.again("base-again"), BASE.again("twin-of-base"),
                                  BASE.again("base-aa", description="mine"),
                                  BASE.again("base_2", description="mine")])
def test_the_twin_follows_ref_and_pin(twin: LabelSpec) -> None:
    suite = suite_of(BASE, twin, HEAD)
    assert twins(suite, {"base", "head"}) == {twin.name: "base"}
    moved = {x.name: x for x in override(suite, {"base": "v1", "head": "v2"}, {}).labels}
    assert (moved["base"].ref, moved[twin.name].ref, moved["head"].ref) == ("v1", "v1", "v2")
    pinned = {x.name: x for x in override(suite, {}, {"base": "svc==1.0"}).labels}
    assert pinned[twin.name].package == "svc==1.0" and pinned[twin.name].git == ""
    assert pinned["head"].git == "/srv/service"  # the same build, not declared a twin


def test_a_twin_given_its_own_flag_or_a_build_of_its_own_keeps_it() -> None:
    suite = suite_of(BASE, BASE.again("base-again"), HEAD)
    own = {x.name: x.ref for x in override(suite, {"base": "v1", "base-again": "v0"},
                                           {}).labels}
    assert own == {"base": "v1", "base-again": "v0", "head": "HEAD"}
    other = LabelSpec("base-again", git="/srv/service", ref="v9")  # named so, another build
    kept = {x.name: x.ref for x in override(suite_of(BASE, other), {"base": "v1"}, {}).labels}
    assert kept == {"base": "v1", "base-again": "v9"}


SUITE = '''
import dataclasses, sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
import tiny
from perfpages import LabelSpec

def suite(quick):
    base = LabelSpec("base", git={repo!r}, ref="main")
    # the twin first: its build is resolved first, so its error shows where --ref sent it
    labels = (base.again("base-again"), base, LabelSpec("head", git={repo!r}, ref="main"))
    return dataclasses.replace(tiny.suite(quick), labels=labels)
'''


def test_ref_moves_the_twin_through_the_command_line(tmp_path: Path) -> None:
    """Fails fast, before PostgreSQL: the twin's build is resolved at the ref given to base."""
    repo = tmp_path / "service"
    repo.mkdir()
    for args in (["init", "-q", "-b", "main"],
                 ["-c", "user.name=t", "-c", "user.email=t@example.org", "commit", "-q",
                  "--allow-empty", "-m", "one"]):
        subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)
    suites = tmp_path / "suites"
    suites.mkdir()
    shutil.copy(BENCHMARKS / "tiny.py", suites)
    shutil.copytree(BENCHMARKS / "tiny", suites / "tiny")
    (suites / "pair.py").write_text(SUITE.format(repo=str(repo)))
    done = invoke("--suite", "pair", "--suites", str(suites), "--ref", "base=nosuchref",
                  "--ref", "head=main", results=tmp_path / "r")
    assert done.returncode == 1
    assert done.stderr.startswith("error: labels.base-again.ref: no commit 'nosuchref'"), \
        done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and not (tmp_path / "r").exists()
