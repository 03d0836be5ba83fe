"""Secrets never reach an archive: passwords in any DSN form, and the values of secret variables.

`Redactor.text` is applied to everything a run writes that came from outside perfpages: the
command line, the method's notes, failed windows' errors, diagnostics and server logs. It knows
two kinds of secret:

- patterns: a URL's userinfo password (`postgresql://u:pw@h`), a `password=` query parameter,
  a key=value `password = …` (quoted or not);
- values: the password of the run's DSN and of every environment variable whose name says it
  is secret (PASSWORD, SECRET, TOKEN, API_KEY, …KEY), wherever they appear.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from urllib.parse import unquote, urlsplit, urlunsplit

MASK = "***"
MIN_VALUE = 4  # shorter values are too common to replace everywhere ("1", "on", "yes")
SECRET_NAME = re.compile(r"PASSWORD|PASSWD|PASSPHRASE|SECRET|TOKEN|CREDENTIAL|API_?KEY"
                         r"|PRIVATE_?KEY|ACCESS_?KEY|(^|_)KEY$|^PGPASS", re.I)
GIT_URL_USER = re.compile(r"(git\+[A-Za-z][A-Za-z0-9+.-]*://)[^/\s]*@")  # a token as the user
PATTERNS = (
    (GIT_URL_USER, r"\g<1>"),
    # scheme://user:password@host — keep the user, mask the password
    (re.compile(r"(\b[a-z][a-z0-9+.-]*://[^\s:/@?#]*:)[^\s@/?#]*(@)", re.I), rf"\g<1>{MASK}\g<2>"),
    # ?password=… / &password=… in a URL
    (re.compile(r"([?&](?:password|passwd|sslpassword)=)[^&\s#]*", re.I), rf"\g<1>{MASK}"),
    # key=value DSNs and settings: password=secret, password = 'se cret'
    (re.compile(r"(\b(?:password|passwd|sslpassword)\s*=\s*)('(?:[^'\\]|\\.)*'|\"[^\"]*\"|[^\s'\"&]+)",
                re.I), rf"\g<1>{MASK}"),
)


def secret_names(env: Mapping[str, str]) -> list[str]:
    return sorted(name for name in env if SECRET_NAME.search(name))


def redact(dsn: str) -> str:
    """A DSN without its password (URI or key=value form): safe to print and to archive."""
    if "://" in dsn:
        parts = urlsplit(dsn)
        if parts.password is not None:
            host = parts.hostname or ""
            netloc = f"{parts.username}@{host}" if parts.username else host
            if parts.port:
                netloc += f":{parts.port}"
            return urlunsplit(parts._replace(netloc=netloc))
        return dsn
    return " ".join(p for p in dsn.split() if not p.startswith("password="))


def redact_command(command: str) -> str:
    """The command line as archived: no DSN password, no user or token in a --pin git URL."""
    command = GIT_URL_USER.sub(r"\1", command)
    return " ".join(redact(p) for p in command.split()) or "invoke bench.run"


def masked_env(env: Mapping[str, str]) -> dict[str, str]:
    """An environment as archived: the values of secret variables masked."""
    return {k: MASK if SECRET_NAME.search(k) else v for k, v in env.items()}


def dsn_password(dsn: str) -> str | None:
    """The password a DSN carries, in any of its forms."""
    if "://" in dsn:
        parts = urlsplit(dsn)
        if parts.password:
            return unquote(parts.password)
        query = re.search(r"(?:^|&)password=([^&]*)", parts.query)
        return unquote(query.group(1)) if query else None
    found = re.search(r"\bpassword\s*=\s*('(?:[^'\\]|\\.)*'|\S+)", dsn)
    if not found:
        return None
    value = found.group(1)
    return value[1:-1].replace("\\'", "'") if value.startswith("'") else value


@dataclass
class Redactor:
    values: set[str] = field(default_factory=set)

    @classmethod
    def for_run(cls, dsn: str | None = None, env: Mapping[str, str] | None = None,
                extra: Iterable[str] = ()) -> Redactor:
        """The secrets of one run: its DSN's password, the secret variables of its
        environment (this process's by default) and any extra values (a label's env)."""
        env = os.environ if env is None else env
        values = {env[name] for name in secret_names(env)}
        password = dsn_password(dsn) if dsn else None
        if password:
            values.add(password)
        values.update(extra)
        return cls({v for v in values if len(v) >= MIN_VALUE})

    def text(self, text: str) -> str:
        for pattern, replacement in PATTERNS:
            text = pattern.sub(replacement, text)
        for value in sorted(self.values, key=len, reverse=True):  # longest first: no leftovers
            text = text.replace(value, MASK)
        return text

    def data(self, data: bytes) -> bytes:
        """A file's bytes: text is redacted, anything not UTF-8 is kept as it is."""
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            return data
        redacted = self.text(text)
        return data if redacted == text else redacted.encode("utf-8")
