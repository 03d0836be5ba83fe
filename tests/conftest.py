"""Shared fixtures: synthetic archives written by the real writer into temporary results/ dirs."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from perfpages.archive.reader import Run
from perfpages.testing import generate

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture(scope="session")
def demo_results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A results/ directory holding the synthetic demo run (never modified by tests)."""
    root = tmp_path_factory.mktemp("results")
    generate(root)
    return root


@pytest.fixture
def demo_run(demo_results: Path) -> Run:
    from perfpages.archive.reader import open_run

    return open_run(demo_results / "2026-11-01-synthetic-demo")


@pytest.fixture
def scratch_run(demo_results: Path, tmp_path: Path) -> Path:
    """A private copy of the demo run that a test may corrupt."""
    target = tmp_path / "results" / "2026-11-01-synthetic-demo"
    shutil.copytree(demo_results / "2026-11-01-synthetic-demo", target)
    return target
