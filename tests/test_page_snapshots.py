"""Every versioned performance page renders exactly what its snapshot says.

A published version (docs/performance/<section>/v<N>.md) is pinned to its runs, and archived
runs never change; what can still change what it says is perfpages' own code (rounding, tables,
charts, claim wording). So each page is rendered through the core as the plugin does, and
compared byte for byte with tests/golden/pages/<section>-v<N>.md. The version note the plugin
puts on older versions is not part of a snapshot: starting v2 must not touch v1's.

PERFPAGES_UPDATE_GOLDEN=1 writes the snapshots (new pages, or an intended change).
"""

from __future__ import annotations

import functools
import os
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from perfpages.site import versions as version
from perfpages.site.page import render_file, site_paths
from perfpages.site.store import RunStore

ROOT = Path(__file__).resolve().parent.parent
DOCS, RESULTS = site_paths(ROOT / "mkdocs.yml")
PERFORMANCE = DOCS / "performance"
SNAPSHOTS = Path(__file__).resolve().parent / "golden" / "pages"
ACCEPT = "PERFPAGES_UPDATE_GOLDEN=1 pytest tests/test_page_snapshots.py"
POLICY = "see docs/guide/pages.md#versions"
SHOWN = 60  # characters of a differing line shown in a message


@dataclass(frozen=True)
class Page:
    path: str  # as the plugin names it: relative to mkdocs.yml, e.g. docs/performance/sky/v1.md
    file: Path
    snapshot: Path


def discover(performance: Path = PERFORMANCE) -> list[Page]:
    """The versioned pages (`v1.md`, or `v2/index.md`) under docs/performance/, by path."""
    pages = []
    for file in sorted(performance.rglob("*.md")):
        rel = file.relative_to(performance).as_posix()
        if version.number(rel) is None:
            continue
        parts = rel.removesuffix(".md").split("/")
        if parts[-1] in ("index", "README"):
            parts.pop()
        section = "-".join(parts[:-1]) or "performance"
        pages.append(Page(file.relative_to(ROOT).as_posix(), file,
                          SNAPSHOTS / f"{section}-{parts[-1]}.md"))
    return pages


@functools.cache
def _store() -> RunStore:
    # No disk cache: the test must not write into the repository's .cache/.
    return RunStore(RESULTS)


def render(page: Page, store: RunStore | None = None) -> str:
    return render_file(page.file, path=page.path, store=store or _store()).markdown


def _excerpt(line: str | None, column: int) -> str:
    if line is None:
        return "<end of page>"
    start = max(0, column - SHOWN // 2)
    end = start + SHOWN
    return repr(("…" if start else "") + line[start:end] + ("…" if end < len(line) else ""))


def compare(page: Page, rendered: str, snapshot: Path) -> str | None:
    """None if `rendered` is the snapshot, else one line: where it first differs, what to do."""
    shown = snapshot.relative_to(ROOT) if snapshot.is_relative_to(ROOT) else snapshot
    if not snapshot.is_file():
        return (f"{page.path}: no snapshot yet ({shown}); create it with {ACCEPT}, "
                f"then review and commit it")
    # Bytes, not text mode: a newline translated on some machine is a difference too.
    expected = snapshot.read_bytes().decode("utf-8")
    if expected == rendered:
        return None
    want, got = expected.split("\n"), rendered.split("\n")
    n = next(i for i in range(max(len(want), len(got)))
             if i >= len(want) or i >= len(got) or want[i] != got[i])
    a = want[n] if n < len(want) else None
    b = got[n] if n < len(got) else None
    column = next((i for i, (x, y) in enumerate(zip(a or "", b or "", strict=False)) if x != y),
                  min(len(a or ""), len(b or "")))
    return (f"{page.path} no longer renders what its snapshot {shown} says, at line {n + 1} "
            f"column {column + 1}: expected {_excerpt(a, column)}, got {_excerpt(b, column)}; "
            f"if the change is intended, accept it with {ACCEPT} "
            f"(if what the data says changed, start a new version instead: {POLICY})")


PAGES = discover()


@pytest.mark.parametrize("page", PAGES, ids=[p.path for p in PAGES])
def test_page_matches_its_snapshot(page: Page) -> None:
    rendered = render(page)
    if os.environ.get("PERFPAGES_UPDATE_GOLDEN"):
        page.snapshot.parent.mkdir(parents=True, exist_ok=True)
        page.snapshot.write_bytes(rendered.encode("utf-8"))
    problem = compare(page, rendered, page.snapshot)
    if problem:
        pytest.fail(problem, pytrace=False)


@pytest.mark.parametrize("page", PAGES, ids=[p.path for p in PAGES])
def test_page_renders_the_same_every_time(page: Page, tmp_path: Path) -> None:
    # Fresh stores, cold then warm cell cache (the plugin's default): same bytes each time.
    first = render(page, RunStore(RESULTS))
    assert render(page, RunStore(RESULTS, tmp_path)) == first
    assert render(page, RunStore(RESULTS, tmp_path)) == first
    assert str(ROOT) not in first, f"{page.path} renders an absolute path"


def test_pages_are_found_and_snapshots_have_their_pages() -> None:
    assert PAGES, f"no versioned page (v<N>.md) under {PERFORMANCE}"
    names = [p.snapshot.name for p in PAGES]
    assert len(set(names)) == len(names), f"two pages share a snapshot name: {names}"
    # A snapshot without its page means a published version was removed or renamed.
    orphans = sorted(f.name for f in SNAPSHOTS.glob("*.md") if f.name not in names)
    assert not orphans, f"snapshots without a page in {PERFORMANCE}: {orphans}"


def _change_a_figure(text: str) -> tuple[str, int]:
    """`text` with the last digit of its first table row changed, and that line's number."""
    lines = text.split("\n")
    n = next(i for i, line in enumerate(lines)
             if line.startswith("|") and not line.startswith("|-") and re.search(r"\d", line)
             and i > 0 and lines[i - 1].startswith("|-"))
    line = lines[n]
    at = max(m.start() for m in re.finditer(r"\d", line))
    lines[n] = line[:at] + str((int(line[at]) + 1) % 10) + line[at + 1:]
    return "\n".join(lines), n + 1


def test_a_changed_figure_fails_naming_the_page_and_line(tmp_path: Path) -> None:
    page = PAGES[0]
    rendered = render(page)
    snapshot = tmp_path / page.snapshot.name
    snapshot.write_text(rendered, encoding="utf-8", newline="")
    assert compare(page, rendered, snapshot) is None
    changed, line = _change_a_figure(rendered)
    snapshot.write_text(changed, encoding="utf-8", newline="")
    message = compare(page, rendered, snapshot)
    assert message is not None and "\n" not in message
    assert message.startswith(f"{page.path} no longer renders")
    assert f"at line {line} column" in message
    assert ACCEPT in message


def test_a_longer_snapshot_and_a_missing_one_say_so(tmp_path: Path) -> None:
    page = Page("docs/performance/x/v1.md", tmp_path / "v1.md", tmp_path / "x-v1.md")
    assert compare(page, "# X\n", page.snapshot) == (
        f"docs/performance/x/v1.md: no snapshot yet ({page.snapshot}); create it with {ACCEPT}, "
        f"then review and commit it")
    page.snapshot.write_text("# X\n\n| a | 1.0 ms |\n")
    message = compare(page, "# X\n", page.snapshot)
    assert message is not None
    assert "at line 3 column 1: expected '| a | 1.0 ms |', got <end of page>;" in message
