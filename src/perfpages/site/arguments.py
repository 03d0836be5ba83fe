"""Checks every macro's arguments share, before the macro runs: `digits=` within what a figure
can show, and no empty text where a claim's sentence, a fact's key or a statement's fragment
goes (an empty one would print nothing, or the whole manifest, without a word)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from perfpages.errors import PerfpagesError

MAX_DIGITS = 12  # a double carries about 15 significant digits; no page shows more than this
# The macros whose first argument is text that must say something, and what it is called.
TEXT_FIRST = {"claim": "sentence", "fact": "key", "statement": "fragment"}
FIX = "see the guide: perfpages guide pages"


def _digits(name: str, value: Any) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_DIGITS:
        raise PerfpagesError(f"{name}(digits={value!r}): digits is a whole number of decimals "
                             f"from 0 to {MAX_DIGITS}", key="digits",
                             fix=f"e.g. digits=1; {FIX}")


def _text(name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    what = TEXT_FIRST.get(name)
    value = args[0] if args else kwargs.get(what or "")
    if what and isinstance(value, str) and not value.strip():
        raise PerfpagesError(f"{name}() with an empty {what}", key=name,
                             fix=f"give {name}() its {what}; {FIX}")


def checked(name: str, macro: Callable[..., Any]) -> Callable[..., Any]:
    """`macro`, refusing bad shared arguments with one line (the page's line is added by the
    renderer, as for every macro error)."""

    @functools.wraps(macro)
    def call(*args: Any, **kwargs: Any) -> Any:
        _digits(name, kwargs.get("digits"))
        _text(name, args, kwargs)
        return macro(*args, **kwargs)

    return call


def checked_namespace(namespace: dict[str, Any]) -> dict[str, Any]:
    return {name: checked(name, value) if callable(value) else value
            for name, value in namespace.items()}
