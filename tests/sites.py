"""Helpers shared by tests: temporary MkDocs projects built in-process over fixture archives,
and a silent console for runs."""

from __future__ import annotations

import io
import logging
import os
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import yaml
from mkdocs.commands.build import build
from mkdocs.config import load_config
from mkdocs.exceptions import Abort
from rich.console import Console

from perfpages.archive.reader import open_run
from perfpages.archive.writer import ArchiveWriter
from perfpages.testing import Spec, generate

DEMO = "2026-11-01-synthetic-demo"
SWEEP = "2026-11-02-synthetic-sweep"
HOSTILE = "2026-11-03-synthetic-hostile"
PARTIAL = "2026-11-04-synthetic-partial"
CORRUPT = "2026-11-05-synthetic-corrupt"
DIAGNOSED = "2026-11-06-synthetic-diagnosed"
SCRIPT_LABEL = "<script>alert(1)</script>"


def quiet() -> Console:
    """A console that prints nowhere: a run's progress bar is not under test."""
    return Console(file=io.StringIO(), force_terminal=False)


ROOT = Path(__file__).resolve().parent.parent
CLI_ENV = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "COLUMNS": "200"}


def perfpages(*args: str) -> subprocess.CompletedProcess[str]:
    """The real `perfpages` command line, run from the repository."""
    return subprocess.run([sys.executable, "-m", "perfpages", *args], cwd=ROOT,
                          capture_output=True, text=True, env=CLI_ENV)


def make_results(root: Path, corrupt: bool = False) -> Path:
    """Synthetic archives written by the real writer: complete, hostile, partial (and corrupt)."""
    generate(root)
    generate(root, Spec(run_id=SWEEP, title="Synthetic sweep (generated values)",
                        blocks={"callers": [{"call": "lookup", "callers": n}
                                            for n in (1, 2, 4, 8, 16, 32)]},
                        windows=1, floors=False))
    generate(root, Spec(run_id=HOSTILE, title="<img src=x onerror=alert(2)> synthetic | *run*",
                        labels={"v1": 1.0, SCRIPT_LABEL: 1.1},
                        blocks={"callers": [{"call": "<b>lookup</b>", "callers": 32}]},
                        windows=1, floors=False))
    demo = open_run(root / DEMO)
    with ArchiveWriter.create(root, replace(demo.manifest, id=PARTIAL, files={})) as writer:
        for window in demo.windows[:20]:
            writer.append(window)
        writer.finish("partial")
    with ArchiveWriter.create(root, replace(demo.manifest, id=DIAGNOSED, files={})) as writer:
        for window in demo.windows:
            writer.append(window)
        writer.write_file("diagnostics/callers/statements.json", '{"calls": 3}\n')
        writer.finish("complete")
    if not corrupt:
        return root
    shutil.copytree(root / DEMO, root / CORRUPT)
    manifest = (root / CORRUPT / "run.json").read_text().replace(DEMO, CORRUPT)
    (root / CORRUPT / "run.json").write_text(manifest)
    results = root / CORRUPT / "results.jsonl"  # an edited complete run: checksum mismatch
    results.write_text(results.read_text().replace('"requests":', '"requests": ', 1))
    return root


class Capture(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage().removeprefix("perfpages: "))


class Failed(Exception):
    """The build stopped; `messages` are the warnings and errors MkDocs logged."""

    def __init__(self, messages: list[str]) -> None:
        super().__init__("\n".join(messages))
        self.messages = messages


def failed_build_lines(project: Path, page: str, results: Path, needle: str) -> list[str]:
    """`mkdocs build --strict` of a site whose home page is `page`, through the real command
    line; it must exit 1 without a traceback: the lines of its log holding `needle`."""
    build_site(project, {"index.md": "# Home\n"}, results)  # writes mkdocs.yml
    (project / "docs" / "index.md").write_text(page, encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-q"],
                          cwd=project, capture_output=True, text=True,
                          env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr
    return [line for line in done.stderr.splitlines() if needle in line]


def build_site(project: Path, pages: dict[str, str], results: Path, *, strict: bool = True,
               nav: list[object] | None = None, run_pages: bool = True) -> tuple[Path, list[str]]:
    """Write docs/ and mkdocs.yml under `project`, build, return (site dir, warnings);
    a build that stops (strict mode, a plugin error) raises Failed with what MkDocs logged."""
    docs = project / "docs"
    if docs.exists():
        shutil.rmtree(docs)
    for name, text in pages.items():
        (docs / name).parent.mkdir(parents=True, exist_ok=True)
        (docs / name).write_text(text, encoding="utf-8")
    config = {
        "site_name": "test", "site_url": "https://example.org/",
        "theme": {"name": "material", "font": False},
        "markdown_extensions": ["admonition", "tables", "attr_list", "pymdownx.superfences",
                                "pymdownx.details"],
        "plugins": ["search", {"perfpages": {"results": str(results), "run_pages": run_pages}}],
    }
    if nav is not None:
        config["nav"] = nav
    (project / "mkdocs.yml").write_text(yaml.safe_dump(config), encoding="utf-8")
    capture = Capture()
    logger = logging.getLogger("mkdocs")
    logger.addHandler(capture)
    try:
        build(load_config(config_file=str(project / "mkdocs.yml"), strict=strict))
    except Abort:
        raise Failed(capture.messages) from None
    finally:
        logger.removeHandler(capture)
    return project / "site", capture.messages
