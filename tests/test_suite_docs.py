"""docs/guide/suites.md and the suite API agree: every field in the reference tables, every
attribute the guide uses on a hook's argument, every example (it compiles; a whole suite loads)."""

from __future__ import annotations

import ast
import dataclasses
import re
import sys
import typing
from pathlib import Path

import pytest

import perfpages
from perfpages.archive.manifest import Label, Pin
from perfpages.run.builds import Build
from perfpages.run.postgres import Target
from perfpages.run.suite import load

GUIDE = Path(__file__).resolve().parent.parent / "docs" / "guide" / "suites.md"
TEXT = GUIDE.read_text()
CODE = re.findall(r"^```python\n(.*?)^```", TEXT, re.S | re.M)
PUBLIC = ["Suite", "LabelSpec", "DataSet", "BlockSpec", "Script", "HttpBlockSpec", "HttpCase",
          "HttpTurn", "Instructions", "Service", "ServiceSpec", "Load", "Request", "Placement"]
CLASSES: dict[str, type] = {name: getattr(perfpages, name) for name in PUBLIC}
CLASSES |= {"Build": Build, "Label": Label, "Pin": Pin, "Target": Target}
# How the guide names the objects its hooks receive (and the suite itself).
ROOTS: dict[str, type] = {"build": Build, "target": Target, "turn": perfpages.HttpTurn,
                          "suite": perfpages.Suite}


def cells(line: str) -> list[str]:
    """A table row's cells; a `|` inside a code span is text, as MkDocs renders it."""
    out, cell, code = [], "", False
    for ch in line.strip().strip("|"):
        code ^= ch == "`"
        if ch == "|" and not code:
            out, cell = [*out, cell.strip()], ""
        else:
            cell += ch
    return [*out, cell.strip()]


def reference() -> dict[str, dict[str, list[list[str]]]]:
    """{class: {first header cell: rows}} from the tables under '## Reference'."""
    tables: dict[str, dict[str, list[list[str]]]] = {}
    section = TEXT.split("\n## Reference\n", 1)[1]
    name, header = "", ""
    for line in section.splitlines():
        if m := re.match(r"^###\s+`(\w+)`\s*$", line):
            name, header = m.group(1), ""
            tables[name] = {}
        elif line.startswith("|") and name:
            row = cells(line)
            if not header:
                header = row[0]
                tables[name][header] = []
            elif not set(row[0]) <= set("-: "):
                tables[name][header].append(row)
        else:
            header = ""
    return tables


TABLES = reference()


def code_name(cell: str) -> str:
    m = re.fullmatch(r"`(\w+)`", cell)
    assert m, f"{cell!r}: the first cell of a reference row must be one `name`"
    return m.group(1)


def normal(annotation: str) -> str:
    return ast.unparse(ast.parse(annotation, mode="eval"))


def test_every_documented_class_is_a_suite_facing_class() -> None:
    assert set(TABLES) == set(CLASSES), (
        f"reference tables for unknown classes {sorted(set(TABLES) - set(CLASSES))}, "
        f"none for {sorted(set(CLASSES) - set(TABLES))}")


@pytest.mark.parametrize("name", list(CLASSES))
def test_reference_table_lists_every_field(name: str) -> None:
    cls = CLASSES[name]
    rows = TABLES.get(name, {}).get("Field", [])
    documented = [code_name(row[0]) for row in rows]
    actual = [f.name for f in dataclasses.fields(cls)]
    missing, extra = set(actual) - set(documented), set(documented) - set(actual)
    assert not missing and not extra, (
        f"{name}: docs/guide/suites.md lacks fields {sorted(missing)}, documents fields "
        f"{name} does not have: {sorted(extra)}")
    assert documented == actual, f"{name}: document the fields in the class's order {actual}"


@pytest.mark.parametrize("name", list(CLASSES))
def test_reference_types_and_defaults_are_the_code(name: str) -> None:
    fields = {f.name: f for f in dataclasses.fields(CLASSES[name])}
    for row in TABLES.get(name, {}).get("Field", []):
        assert len(row) == 4, f"{name}: {row[0]} needs field, type, default and meaning"
        f = fields.get(code_name(row[0]))
        if f is None:  # not a field: the test above names it
            continue
        written = row[1].strip("`")
        assert normal(written) == normal(str(f.type)), (
            f"{name}.{f.name}: the guide says {written}, the code {f.type}")
        if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            assert row[2] == "—", f"{name}.{f.name} is required: its default must be —"
            continue
        real = f.default if f.default is not dataclasses.MISSING else f.default_factory()
        assert row[2].startswith("`") and default_value(row[2].strip("`")) == real, (
            f"{name}.{f.name}: the guide's default is {row[2]}, the code's {real!r}")


def default_value(text: str) -> object:
    """A documented default: a literal, or a documented class called with literals
    (`Placement()`)."""
    node = ast.parse(text, mode="eval").body
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in CLASSES:
        return CLASSES[node.func.id](*(ast.literal_eval(a) for a in node.args),
                                     **{k.arg: ast.literal_eval(k.value) for k in node.keywords
                                        if k.arg})
    return ast.literal_eval(node)


def test_documented_methods_exist() -> None:
    for name, tables in TABLES.items():
        for row in tables.get("Method", []):
            method = code_name(row[0])
            assert callable(getattr(CLASSES[name], method, None)), (
                f"{name} has no method {method!r}, which docs/guide/suites.md documents")


def test_every_attribute_used_on_a_hook_argument_exists() -> None:
    used = set(re.findall(r"\b(build|target|turn|suite)((?:\.\w+)+)", TEXT))
    assert {root for root, _ in used} >= {"build", "target", "turn"}, "the guide's hooks changed"
    for root, chain in sorted(used):
        cls: type | None = ROOTS[root]
        for attr in chain.lstrip(".").split("."):
            if cls is None:  # a str's or a Path's own attribute: not the suite API's
                break
            fields = {f.name for f in dataclasses.fields(cls)}
            assert attr in fields or callable(getattr(cls, attr, None)), (
                f"docs/guide/suites.md uses {root}{chain}: {cls.__name__} has no {attr!r}")
            hint = typing.get_type_hints(cls).get(attr)
            cls = hint if dataclasses.is_dataclass(hint) else None


@pytest.mark.parametrize("index", range(len(CODE)))
def test_code_block_compiles_and_imports_the_public_api(index: int) -> None:
    source = CODE[index]
    tree = ast.parse(compile(source, f"suites.md block {index}", "exec", ast.PyCF_ONLY_AST))
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("perfpages"):
            assert node.module == "perfpages", (
                f"block {index}: import from perfpages, not {node.module}")
            assert {a.name for a in node.names} <= set(perfpages.__all__)
        elif isinstance(node, ast.Import):
            assert not any(a.name.startswith("perfpages") for a in node.names), (
                f"block {index}: use `from perfpages import …`")


SUITES = [code for code in CODE if "def suite(" in code]


@pytest.mark.parametrize("quick", [False, True])
@pytest.mark.parametrize("index", range(len(SUITES)))
def test_example_suite_loads(index: int, quick: bool, tmp_path: Path,
                             monkeypatch: pytest.MonkeyPatch) -> None:
    source = SUITES[index]
    name = re.search(r'\bname="([a-z0-9_-]+)"', source)
    assert name, f"example suite {index} has no name=\"…\""
    (tmp_path / f"{name.group(1)}.py").write_text(source)
    assets = tmp_path / name.group(1)  # benchmarks/NAME/, by convention
    for asset in re.findall(r'"([\w-]+\.sql)"', source):
        assets.mkdir(exist_ok=True)
        (assets / asset).write_text("SELECT 1;\n")
    monkeypatch.setitem(sys.modules, f"perfpages_suite_{name.group(1)}", None)  # undone after
    suite = load(name.group(1), tmp_path, quick)
    assert isinstance(suite, perfpages.Suite) and suite.name == name.group(1)
    scripts = [s.path for b in suite.blocks if isinstance(b, perfpages.BlockSpec)
               for s in b.scripts if s.path]
    assert all(p.is_file() for p in scripts), scripts


def test_the_guide_has_a_pgbench_and_an_http_example_suite() -> None:
    assert len(SUITES) == 2 and any("HttpBlockSpec(" in s for s in SUITES)
