"""What benchmarks/bad_input_campaign.py still found after test_bad_input_38.py's fixes, each
through the real command line: a FIFO in place of mkdocs.yml, a site-cache entry that is a FIFO
or a directory, the cache's cells/ a file. One `error:` line or the same page, never a wait."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from perfpages.testing import generate
from test_bad_input_38 import one_error, perfpages, site, tree


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("results")
    generate(root)
    return root


def test_a_fifo_in_place_of_mkdocs_yml_is_one_line(tmp_path: Path, results: Path) -> None:
    project = site(tmp_path, results)
    (project / "mkdocs.yml").unlink()
    os.mkfifo(project / "mkdocs.yml")  # nothing writes to it: reading it would wait forever
    one_error(perfpages(project, "render", timeout=60),
              "mkdocs.yml: cannot read it: not a regular file")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["docs", "mkdocs.yml"]


@pytest.mark.parametrize("damage", ["fifo", "directory", "cells a file"])
def test_a_cache_entry_that_is_no_file_is_computed_again(tmp_path: Path, results: Path,
                                                        damage: str) -> None:
    project = site(tmp_path, results, run_pages=True)
    first = perfpages(project, "render")
    assert first.returncode == 0, first.stderr
    pages = tree(tmp_path / "rendered" / "docs")
    cells = tmp_path / ".cache" / "perfpages" / "cells"
    entries = sorted(cells.glob("*.json"))
    assert entries
    if damage == "cells a file":
        shutil.rmtree(cells)
        cells.write_text("not a directory\n")
    for entry in entries if damage != "cells a file" else ():
        entry.unlink()
        os.mkfifo(entry) if damage == "fifo" else entry.mkdir()
    again = perfpages(project, "render", timeout=120)  # a FIFO read would wait forever
    assert again.returncode == 0 and again.stderr == "", again.stderr
    assert again.stdout == first.stdout  # every page, the run page too
    assert tree(tmp_path / "rendered" / "docs") == pages  # from the sealed run, as before
    if damage == "cells a file":
        assert cells.read_text() == "not a directory\n"
    else:  # nothing of perfpages' cache removed that it did not write
        assert all(os.path.lexists(entry) for entry in entries)


@pytest.mark.parametrize(("args", "config", "says"), [
    (("--out", ""), None, "error: --out: --out is empty — give --out a path"),
    (("--docs", ""), None, "error: --docs: --docs is empty"),
    ((), "plugins: [{perfpages: {results: 5}}]\n",
     "mkdocs.yml: plugins.perfpages.results: 5 is not a directory's path"),
    ((), "docs_dir: 5\nplugins: [perfpages]\n", "mkdocs.yml: docs_dir: 5 is not a directory's"),
    ((), "docs_dir: ''\nplugins: [perfpages]\n", "mkdocs.yml: docs_dir: '' is not a directory's"),
])
def test_an_empty_or_odd_path_is_no_default(tmp_path: Path, results: Path, args: tuple[str, ...],
                                            config: str | None, says: str) -> None:
    """'' or a number was read as 'the default' and rendered there: now one line, nothing
    written."""
    project = site(tmp_path, results)
    if config is not None:
        (project / "mkdocs.yml").write_text("site_name: t\n" + config)
    one_error(perfpages(project, "render", *args), says)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["docs", "mkdocs.yml"]
