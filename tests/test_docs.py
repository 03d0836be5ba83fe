"""The documentation matches the code: every task, every archive key, the test command."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from perfpages.archive.schema import schema_path

ROOT = Path(__file__).resolve().parent.parent
GUIDE = ROOT / "docs" / "guide"


def tasks() -> list[str]:
    import importlib.util

    spec = importlib.util.spec_from_file_location("tasks", ROOT / "tasks.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return sorted(module.ns.task_names)


@pytest.mark.parametrize("name", tasks())
def test_every_task_is_documented(name: str) -> None:
    spelled = (f"invoke {name}", f"perfpages {name}")
    guide = "".join(p.read_text() for p in GUIDE.glob("*.md"))
    assert any(s in guide for s in spelled), f"{name} missing from docs/guide"
    readme = (ROOT / "README.md").read_text()
    assert any(f"`{s}" in readme for s in spelled), f"{name} missing from README"


@pytest.mark.parametrize("schema", ["run", "window", "seal"])
def test_every_archive_key_is_documented(schema: str) -> None:
    text = (GUIDE / "archive.md").read_text()
    keys = json.loads(schema_path(schema).read_text())["properties"]
    missing = [k for k in keys if f"`{k}`" not in text]
    assert not missing, f"docs/guide/archive.md does not describe {missing}"


def test_ci_runs_the_readme_test_command() -> None:
    readme = (ROOT / "README.md").read_text()
    command = re.search(r"Run the tests.*?```bash\n(.+?)\n```", readme, re.S)
    assert command, "README.md has no test command"
    ci_lines = [line for line in (ROOT / ".ci" / "run").read_text().splitlines()
                if line.strip() and not line.startswith("#")]
    assert ci_lines[-1] == command.group(1)


def test_adopt_s_first_page_passes_the_lint_it_describes() -> None:
    """The page adopt.md tells a newcomer to write, copied as it stands, has no hand-typed figure:
    the strict build would otherwise fail on the guide's own example (its title's `64MB` did)."""
    from perfpages.site import lint

    text = (GUIDE / "adopt.md").read_text()
    pages = [b for b in re.findall(r"^```markdown\n(.*?)^```", text, re.S | re.M)
             if b.startswith("---\nruns:")]
    assert pages, "adopt.md shows no first page pinning a run"
    for page in pages:
        assert lint.check(page) == []
    assert lint.check(pages[0].replace('{{ given("64MB") }}', "64MB"))  # the lint does see it
