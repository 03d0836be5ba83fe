"""The JSON Schemas shipped with the package, and validation that names the failing key."""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator

from perfpages.errors import ArchiveError

FORMAT_VERSION = 1
SUPPORTED_VERSIONS = (1,)


@cache
def validator(name: str) -> Draft202012Validator:
    text = resources.files("perfpages.archive.schemas").joinpath(f"{name}.schema.json").read_text()
    return Draft202012Validator(json.loads(text))


def schema_path(name: str) -> Path:
    return Path(str(resources.files("perfpages.archive.schemas").joinpath(f"{name}.schema.json")))


def check(data: Any, name: str, *, where: str | Path, line: int | None = None,
          fix: str = "repair the file or archive a new run") -> None:
    """Raise ArchiveError for the first schema violation, naming its key path."""
    errors = sorted(validator(name).iter_errors(data), key=lambda e: list(e.absolute_path))
    if not errors:
        return
    err = errors[0]
    key = ".".join(str(p) for p in err.absolute_path) or None
    if err.validator == "oneOf":
        what = "does not match any allowed form (package, git or none pin)"
    elif err.validator == "additionalProperties":
        what = err.message.replace("Additional properties are not allowed", "unknown key")
    else:
        what = err.message
    raise ArchiveError(what, where=where, line=line, key=key, fix=fix)
