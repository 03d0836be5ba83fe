"""The JSON Schemas shipped with the package, strict JSON parsing, and validation that names
the failing key.

One engine validates: jsonschema-rs (Draft 2020-12). Its refusals are worded as jsonschema
words them (`'one' is not of type 'integer'`), the wording perfpages' errors have always had."""

from __future__ import annotations

import json
import math
import re
from datetime import datetime
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema_rs

from perfpages.errors import ArchiveError

# 2: complete runs are sealed (seal.json); 1: archived before sealing existed.
FORMAT_VERSION = 2
SUPPORTED_VERSIONS = (1, 2)

MAX_DEPTH = 64  # archives nest 5 levels deep; far more is a hostile file, not a run
MAX_NUMBER = 2**53  # beyond it a float loses integers; nothing perfpages records comes near it
_SURROGATE = re.compile(r"\\u[dD][89abcdefABCDEF]")


def _date_time(value: object) -> bool:
    """The one format the schemas use: "2026-11-30T11:33:04Z", with its zone."""
    if not isinstance(value, str):
        return True  # the type is the schema's "type" to refuse
    if "T" not in value:
        raise ValueError("not a date and time")
    return datetime.fromisoformat(value.replace("Z", "+00:00")).tzinfo is not None


def _schema(name: str) -> Any:
    text = resources.files("perfpages.archive.schemas").joinpath(f"{name}.schema.json").read_text()
    return json.loads(text)


_INTEGER_ONLY = "perfpagesIntegerOnly"


class _IntegerOnly:
    """jsonschema-rs's custom keyword for perfpages' integers: 1.0 is not one. JSON Schema counts
    1.0 as an integer; perfpages never writes one, and `rounds: 5.0` would reach range() as a
    float."""

    def __init__(self, parent_schema: Any, value: Any, schema_path: Any) -> None:
        self.active = value is True

    def validate(self, instance: Any) -> None:
        if self.active and isinstance(instance, float):
            raise ValueError("a number with a fraction part where an integer belongs")


def _integers_only(node: Any) -> Any:
    """A copy of a schema in which every place that admits integers but no other numbers
    also carries _INTEGER_ONLY."""
    if isinstance(node, list):
        return [_integers_only(n) for n in node]
    if not isinstance(node, dict):
        return node
    out = {k: _integers_only(v) for k, v in node.items()}
    kinds = node.get("type")
    kinds = [kinds] if isinstance(kinds, str) else kinds if isinstance(kinds, list) else []
    if "integer" in kinds and "number" not in kinds:
        out[_INTEGER_ONLY] = True
    return out


def _date_time_ok(value: str) -> bool:
    try:
        return _date_time(value)
    except ValueError:
        return False


@cache
def validator(name: str) -> Any:
    """The schema compiled by jsonschema-rs, with perfpages' integers and date-times (the one
    format the schemas use, with its zone)."""
    return jsonschema_rs.validator_for(_integers_only(_schema(name)),
                                       keywords={_INTEGER_ONLY: _IntegerOnly},
                                       formats={"date-time": _date_time_ok},
                                       validate_formats=True)


def _message(error: Any) -> str:
    """A refusal in jsonschema's words (Python reprs: `'one' is not of type 'integer'`), for the
    kinds the schemas use; jsonschema-rs's own words for any other."""
    kind, value = type(error.kind).__name__, error.instance
    found = error.kind.as_dict()
    match kind:
        case "OneOfNotValid" | "OneOfMultipleValid":
            return "does not match any allowed form (package, git or none pin)"
        case "AdditionalProperties":
            extra = found["unexpected"]
            verb = "was" if len(extra) == 1 else "were"
            return f"unknown key ({', '.join(repr(x) for x in extra)} {verb} unexpected)"
        case "Type":
            types = found.get("types") or [found.get("type")]
            return f"{value!r} is not of type {', '.join(repr(str(t)) for t in types)}"
        case "Custom":  # _IntegerOnly: JSON Schema's integer 1.0, not perfpages'
            return f"{value!r} is not of type 'integer'"
        case "Minimum":
            return f"{value!r} is less than the minimum of {found['limit']!r}"
        case "ExclusiveMinimum":
            return f"{value!r} is less than or equal to the minimum of {found['limit']!r}"
        case "ExclusiveMaximum":
            return f"{value!r} is greater than or equal to the maximum of {found['limit']!r}"
        case "Required":
            return f"{found['property']!r} is a required property"
        case "Enum":
            return f"{value!r} is not one of {list(found['options'])!r}"
        case "Constant":
            return f"{found['expected_value']!r} was expected"
        case "Pattern":
            return f"{value!r} does not match {found['pattern']!r}"
        case "Format":
            return f"{value!r} is not a {found['format']!r}"
        case "MinLength" | "MinItems" | "MinProperties" if found["limit"] == 1:
            return f"{value!r} should be non-empty"
        case "MinLength" | "MinItems":
            return f"{value!r} is too short"
    return str(error.message)


def schema_path(name: str) -> Path:
    return Path(str(resources.files("perfpages.archive.schemas").joinpath(f"{name}.schema.json")))


def one_line(text: str) -> str:
    """A key or value as it may appear in a one-line error: control characters escaped."""
    return text if text.isprintable() else repr(text)[1:-1]


class _Rejected:
    """Stands in for a number JSON allows but an archive must not hold, until its key is known."""

    def __init__(self, text: str, why: str) -> None:
        self.text, self.why = text, why


def _number(text: str, kind: type) -> Any:
    if len(text) > 40:  # int() of thousands of digits is slow, and raises past 4300
        return _Rejected(text[:20] + "…", "a number written with more than 40 characters")
    value = kind(text)
    if not math.isfinite(value):
        return _Rejected(text, "not a finite number")
    if abs(value) >= MAX_NUMBER:
        return _Rejected(text, "a number beyond ±2^53")
    return value


def _walk(data: Any) -> tuple[int, list[tuple[str, Any]]]:
    """The nesting depth (stops counting past MAX_DEPTH) and (key path, value) of every leaf."""
    leaves: list[tuple[str, Any]] = []
    deepest = 0
    stack: list[tuple[Any, str, int]] = [(data, "", 1)]
    while stack:
        node, path, depth = stack.pop()
        deepest = max(deepest, depth)
        if depth > MAX_DEPTH:
            break
        if isinstance(node, dict):
            items: Any = node.items()
        elif isinstance(node, list):
            items = enumerate(node)
        else:
            leaves.append((path, node))
            continue
        children = []
        for key, value in items:
            if isinstance(key, str):
                leaves.append((path, key))  # keys are strings too: check them for surrogates
            children.append((value, f"{path}.{key}" if path else str(key), depth + 1))
        stack += reversed(children)  # leaves in file order: the first problem is named first
    return deepest, leaves


def loads(raw: bytes, *, where: str | Path, line: int | None = None) -> Any:
    """Parse UTF-8 JSON strictly: finite numbers below 2^53, at most MAX_DEPTH levels, no lone
    surrogates. Every refusal is one ArchiveError naming the file, line and key."""
    fix = "the file is damaged or was not written by perfpages: restore it or archive a new run"
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ArchiveError("not UTF-8 text", where=where, line=line, fix=fix) from None
    rejected: list[_Rejected] = []

    def constant(name: str) -> _Rejected:
        rejected.append(_Rejected(name, "not a finite number"))
        return rejected[-1]

    def number(kind: type) -> Any:
        def parse(token: str) -> Any:
            value = _number(token, kind)
            if isinstance(value, _Rejected):
                rejected.append(value)
            return value
        return parse

    try:
        data = json.loads(text, parse_constant=constant, parse_float=number(float),
                          parse_int=number(int))
    except json.JSONDecodeError as exc:
        raise ArchiveError(f"not valid JSON ({exc.msg})", where=where,
                           line=line if line is not None else exc.lineno, fix=fix) from None
    except RecursionError:  # the C decoder stops at the interpreter's recursion limit
        raise ArchiveError(f"JSON nested deeper than {MAX_DEPTH} levels", where=where, line=line,
                           fix=fix) from None
    surrogates = _SURROGATE.search(text) is not None
    # Counting brackets is cheap; only a value that could be deep or odd is walked.
    if not rejected and not surrogates and text.count("[") + text.count("{") <= MAX_DEPTH:
        return data
    depth, leaves = _walk(data)
    if depth > MAX_DEPTH:
        raise ArchiveError(f"JSON nested deeper than {MAX_DEPTH} levels", where=where, line=line,
                           fix=fix)
    for path, value in leaves:
        if isinstance(value, _Rejected):
            raise ArchiveError(f"{value.why} ({one_line(value.text)})", where=where, line=line,
                               key=one_line(path) or None, fix=fix)
        if isinstance(value, str) and surrogates:
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:
                raise ArchiveError("a lone UTF-16 surrogate in a string", where=where, line=line,
                                   key=one_line(path) or None, fix=fix) from None
    return data


def check(data: Any, name: str, *, where: str | Path, line: int | None = None,
          fix: str = "repair the file or archive a new run") -> None:
    """Raise ArchiveError for the first schema violation, naming its key path."""
    if validator(name).is_valid(data):
        return
    errors = sorted(validator(name).iter_errors(data),
                    key=lambda e: [str(p) for p in e.instance_path])  # ints and str: no mixing
    if not errors:
        return
    err = errors[0]
    key = one_line(".".join(str(p) for p in err.instance_path)) or None
    raise ArchiveError(one_line(_message(err)), where=where, line=line, key=key, fix=fix)
