"""The archive's one validator (jsonschema-rs, with perfpages' integers and date-times) gives
the reference implementation's answers on archives, good and bad.

jsonschema, the reference (a test dependency only), is told perfpages' two departures from
JSON Schema: 1.0 is no integer, and a date-time has its zone. Every document below is mutated
key by key (removed, replaced by values of each JSON type, an integer written 1.0, a date
without its zone, an unknown key added); both must agree, and `schema.check` must name a key
the reference names.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator, FormatChecker, validators

from perfpages.archive import schema
from perfpages.archive.reader import RESULTS_FILE, RUN_FILE, SEAL_FILE
from perfpages.errors import ArchiveError
from perfpages.testing import Spec, generate

REPLACEMENTS: list[Any] = [None, True, 0, 1, -1, 1.0, 2.5, -0.5, 2**40, "", "x",
                           "2026-11-30T11:33:04", "2026-11-30T11:33:04Z", "2026-11-30", [], [1],
                           {}, {"k": 1}, {"k": "v"}]


def _paths(node: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    if isinstance(node, dict):
        for key, value in node.items():
            yield (*path, key)
            yield from _paths(value, (*path, key))
    elif isinstance(node, list):
        for i, value in enumerate(node[:3]):  # a few items of a list say what all of them do
            yield (*path, i)
            yield from _paths(value, (*path, i))


def _parent(doc: Any, path: tuple[Any, ...]) -> Any:
    for part in path[:-1]:
        doc = doc[part]
    return doc


def mutations(doc: Any) -> Iterator[Any]:
    yield doc
    for path in list(_paths(doc)):
        for value in REPLACEMENTS:
            out = copy.deepcopy(doc)
            _parent(out, path)[path[-1]] = value
            yield out
        out = copy.deepcopy(doc)
        parent = _parent(out, path)
        if isinstance(parent, dict):
            del parent[path[-1]]
            parent["unknown_key"] = 1
            yield out
    out = copy.deepcopy(doc)
    if isinstance(out, dict):
        out["unknown_key"] = "x"
        yield out


def _reference(name: str) -> Any:
    """jsonschema's validator of a schema, with perfpages' integers and date-times."""
    checker = Draft202012Validator.TYPE_CHECKER.redefine(
        "integer", lambda _, x: isinstance(x, int) and not isinstance(x, bool))
    formats = FormatChecker(formats=())
    formats.checks("date-time", raises=ValueError)(schema._date_time)
    cls = validators.extend(Draft202012Validator, type_checker=checker)
    return cls(json.loads(schema.schema_path(name).read_text()), format_checker=formats)


def _reference_paths(doc: Any, name: str) -> set[str]:
    """The key paths the reference refuses, as `check` writes them."""
    return {".".join(str(p) for p in e.absolute_path) for e in _reference(name).iter_errors(doc)}


@pytest.fixture(scope="module")
def documents(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[Any]]:
    results = tmp_path_factory.mktemp("fast") / "results"
    run = generate(results, Spec(machine={"busy_pct": 10.0, "others_pct": 1.0, "steal_pct": 0.0,
                                          "load1": 0.5}, preflight="quiet"))
    run_dir = Path(run.path)
    windows = [json.loads(line) for line in
               (run_dir / RESULTS_FILE).read_text().splitlines()]
    kinds = {}
    for w in windows:  # one window of each kind and status: the shapes results.jsonl holds
        kinds.setdefault((w["kind"], w["status"], "latency" in w), w)
    preflight = [json.loads(line) for p in run_dir.rglob("preflight*.jsonl")
                 for line in p.read_text().splitlines()]
    return {"window": list(kinds.values()),
            "run": [json.loads((run_dir / RUN_FILE).read_text())],
            "seal": [json.loads((run_dir / SEAL_FILE).read_text())],
            "preflight": preflight[:1]}


@pytest.mark.parametrize("name", ["window", "run", "seal", "preflight"])
def test_the_validator_agrees_with_jsonschema(documents: dict[str, list[Any]], name: str) -> None:
    if not documents[name]:
        pytest.skip(f"no {name} document in the generated run")
    checked = refused = 0
    for doc in documents[name]:
        for variant in mutations(doc):
            paths = _reference_paths(variant, name)
            assert schema.validator(name).is_valid(variant) == (not paths), (name, variant)
            checked += 1
            if paths:
                refused += 1
                with pytest.raises(ArchiveError) as caught:
                    schema.check(variant, name, where="x.json")
                assert (caught.value.key or "") in paths, (name, variant, caught.value)
    assert refused > checked // 3  # the mutations do reach the refusals


def test_check_names_the_key() -> None:
    bad = {"block": "b", "label": "l", "round": 1.0, "kind": "measure", "params": {},
           "start": "2026-11-30T11:33:04Z", "duration_s": 1.0, "status": "ok"}
    assert not schema.validator("window").is_valid(bad)
    with pytest.raises(ArchiveError) as caught:
        schema.check(bad, "window", where="results.jsonl", line=3)
    assert caught.value.key == "round" and caught.value.line == 3
    assert caught.value.what == "1.0 is not of type 'integer'"
    bad["round"] = 1
    schema.check(bad, "window", where="results.jsonl", line=3)  # valid: no error
