"""One error hierarchy: every user-facing problem is a single line (what, where, what to do)."""

from __future__ import annotations

import re
from pathlib import Path

MASK = "***"  # what stands for a secret, in error lines and archives alike
# scheme://userinfo@ — a user, a password or a token as the user (git+https://TOKEN@host)
# (to its last '@': a password may hold one, and `p@ss@word9@host` is user info up to `host`)
URL_USERINFO = re.compile(r"(\b[a-z][a-z0-9+.-]*://)([^\s/]+)@", re.I)


def mask_urls(text: str) -> str:
    """Every URL's password masked, and the lone user of an http(s) or VCS URL (a token there
    as often as a name; a DSN's user is a name, kept): for lines printed, since an error that
    names a clone's URL reaches CI logs. Here, not in archive.secrets, so that errors imports
    nothing of perfpages (archive.secrets redacts archives with it)."""
    def masked(found: re.Match[str]) -> str:
        scheme, info = found.group(1), found.group(2)
        if ":" in info:
            return f"{scheme}{info.split(':', 1)[0]}:{MASK}@"
        token = "+" in scheme or scheme.lower().startswith("http")
        return f"{scheme}{MASK}@" if token else found.group(0)

    return URL_USERINFO.sub(masked, text)


class PerfpagesError(Exception):
    """A problem the user can fix; printed as one line, never as a traceback."""

    def __init__(self, what: str, *, where: str | Path | None = None, line: int | None = None,
                 key: str | None = None, fix: str | None = None) -> None:
        self.what = what
        self.where = str(where) if where is not None else None
        self.line = line
        self.key = key
        self.fix = fix
        super().__init__(self.render())

    def render(self) -> str:
        place = ""
        if self.where:
            place = self.where
            if self.line is not None:
                place += f":{self.line}"
            if self.key:
                place += f": {self.key}"
            place += ": "
        elif self.key:
            place = f"{self.key}: "
        text = place + self.what
        if self.fix:
            text += f" — {self.fix}"
        return mask_urls(text)  # a clone's URL may carry a token: never into a CI log


def clip(text: str, limit: int) -> str:
    """`text` cut to at most about `limit` characters at a space, marked " …": never inside a
    word or an address ("listening on 127.0" would name a wrong one). A single word longer
    than `limit` is kept whole."""
    if len(text) <= limit:
        return text
    cut = text.rfind(" ", 0, limit + 1)
    if cut <= 0:
        cut = text.find(" ", limit)
        if cut < 0:
            return text
    return text[:cut].rstrip() + " …"


class Interrupted(PerfpagesError):
    """Ctrl-C or SIGTERM: the command stopped cleanly; exits 130 as shells expect."""

    exit_code = 130


class ArchiveError(PerfpagesError):
    """A run directory is missing, malformed or corrupt."""


class ComparabilityError(PerfpagesError):
    """Two runs differ in machine or format and may not share a table or claim."""


class AnalysisError(PerfpagesError):
    """A requested cell, label or metric is not in the data."""
