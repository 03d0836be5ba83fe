"""The build's one addition to pyproject.toml: a wheel built from a git checkout records that
checkout's commit in perfpages/_build.json, so that runs made with the wheel installed name
perfpages' commit (run/machine.py) rather than "unknown". Only from the top level of a checkout
(a copy vendored inside another repository has no commit of its own), never in an editable
install (that reads its checkout directly)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent


def _git(*args: str) -> str | None:
    done = subprocess.run(["git", "-C", str(HERE), *args], capture_output=True, text=True)
    return done.stdout.strip() if done.returncode == 0 else None


def built_from() -> dict[str, object] | None:
    top = _git("rev-parse", "--show-toplevel")
    commit = _git("rev-parse", "--verify", "HEAD")
    if top is None or Path(top).resolve() != HERE or not commit:
        return None
    return {"commit": commit,
            "dirty": bool(_git("status", "--porcelain", "--untracked-files=no"))}


class BuildPy(build_py):
    def run(self) -> None:
        super().run()
        found = None if getattr(self, "editable_mode", False) else built_from()
        if found:
            target = Path(self.build_lib) / "perfpages" / "_build.json"
            target.write_text(json.dumps(found) + "\n")


setup(cmdclass={"build_py": BuildPy})
