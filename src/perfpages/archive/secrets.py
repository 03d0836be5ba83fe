"""Secrets never reach an archive: passwords in any DSN form, URL user info, secret variables.

`Redactor.text` is applied to everything a run writes that came from outside perfpages: the
command line, the method's notes, failed windows' errors, diagnostics and server logs. It knows
two kinds of secret:

- patterns: a URL's user info (`postgresql://u:pw@h`, `git+https://TOKEN@host`), a `password=`
  query parameter, a key=value `password = …` (quoted or not);
- values: the password of the run's DSN, the user info of every URL a label is pinned to, and
  the value of every environment variable that is secret: wrapped in `Secret(...)` by the
  suite, or named like one (pass, pwd, pat, auth, dsn, key, token, secret, credential, cookie,
  session: `is_secret_name`) and not wrapped in `Public(...)`.

`Redactor.found` is the writer's last check before it seals (archive/finish.py): every byte
written, searched for every value known.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from urllib.parse import unquote

# errors prints its lines through mask_urls; they live there so that errors stays a leaf
from perfpages.errors import MASK as MASK
from perfpages.errors import URL_USERINFO as URL_USERINFO
from perfpages.errors import mask_urls as mask_urls

MIN_VALUE = 4  # shorter values are too common to replace everywhere ("1", "on", "yes")
# Values that are never secret material, whatever their variable is called
# (TOKENIZERS_PARALLELISM=false would otherwise mask every JSON `false`).
PLAIN_VALUES = frozenset({"true", "false", "none", "null", "auto", "default"})
# A part of a variable's name (split at `_`, `-`, `.`) that says its value is secret: one of
# these words inside it (DB_PASS, PGPASSWORD, SESSION_COOKIE), a part that ends with KEY
# (APIKEY), or a part that is PAT, PWD, PW, DSN or AUTH… (not AUTHOR).
_SECRET_PART = re.compile(r"pass|token|secret|credential|cookie|session|key$"
                          r"|^(?:pat|pwd|pw|dsn|auth(?!or).*)$")
# Variables of the process environment that match but are not secret: the shell's and the
# desktop session's own (a working directory or `user` masked everywhere would wreck the run).
PUBLIC_NAMES = frozenset({
    "PWD", "OLDPWD", "SSH_AUTH_SOCK", "DBUS_SESSION_BUS_ADDRESS", "SESSION_MANAGER",
    "DESKTOP_SESSION", "XDG_SESSION_ID", "XDG_SESSION_TYPE", "XDG_SESSION_CLASS",
    "XDG_SESSION_DESKTOP", "PGPASSFILE", "GPG_AGENT_INFO", "KEYTIMEOUT"})
QUERY_PASSWORD = re.compile(r"([?&](?:password|passwd|sslpassword)=)[^&\s#]*", re.I)
PATTERNS = (
    # scheme://user:password@host — keep the user, mask the password
    (re.compile(r"(\b[a-z][a-z0-9+.-]*://[^\s:/@?#]*:)[^\s/]*(@)", re.I), rf"\g<1>{MASK}\g<2>"),
    # git+https://TOKEN@host: a VCS URL's user is a token as often as a name
    (re.compile(r"(\b[a-z][a-z0-9]*\+[a-z][a-z0-9+.-]*://)[^\s/]+@", re.I), r"\g<1>"),
    # ?password=… / &password=… in a URL
    (QUERY_PASSWORD, rf"\g<1>{MASK}"),
    # key=value DSNs and settings: password=secret, password = 'se cret'
    (re.compile(r"(\b(?:password|passwd|sslpassword)\s*=\s*)('(?:[^'\\]|\\.)*'?|\"[^\"]*\"?"
                r"|[^\s'\"&]+)", re.I), rf"\g<1>{MASK}"),
)


class Secret(str):
    """An environment value that is secret whatever its variable is called:
    `env={"DB": Secret("s3cret")}`. It is a str: it reaches the label's processes as is, and
    is masked in the archive, in every log kept and on the site."""

    def __repr__(self) -> str:
        return f"Secret({MASK!r})"


class Public(str):
    """An environment value that is public although its variable's name looks secret:
    `env={"CACHE_KEY_PREFIX": Public("v2")}` is archived and shown as it is."""


def is_secret_name(name: str) -> bool:
    """Whether a variable's name says its value is secret (see _SECRET_PART)."""
    return any(_SECRET_PART.search(part) for part in re.split(r"[^a-z0-9]+", name.lower()))


def is_secret(name: str, value: str) -> bool:
    """A value marked Secret, or one under a secret-looking name that is not marked Public."""
    return isinstance(value, Secret) or (not isinstance(value, Public) and is_secret_name(name))


def secret_names(env: Mapping[str, str]) -> list[str]:
    return sorted(name for name, value in env.items() if is_secret(name, value))


def env_secrets(envs: Iterable[Mapping[str, str]]) -> list[str]:
    """The secret values of these environments (a suite's labels' and cases')."""
    return [value for env in envs for name, value in env.items() if is_secret(name, value)]


def url_secrets(url: str) -> list[str]:
    """The secret of a URL's user info, as written and decoded: the password of `user:pw@`,
    the whole of `TOKEN@` (a user name alone is a token as often as a name)."""
    found = URL_USERINFO.search(url)
    if not found:
        return []
    secret = found.group(2).split(":", 1)[-1]
    return [v for v in {secret, unquote(secret)} if v]


_URI = re.compile(r"([a-z][a-z0-9+.-]*://)(.*)", re.I | re.S)


def _userinfo(dsn: str) -> tuple[str, str, str] | None:
    """(scheme://, user info, what follows its '@') of a URI DSN; None without user info.
    The user info ends at the authority's last '@' (a password may hold '@', `?` or `#`; the
    authority ends at the first '/'), unless the text before a '?' holds an '@' already
    (`bob@host?password=p@ss`: the '@' after is the query's)."""
    found = _URI.fullmatch(dsn.strip())
    if not found:
        return None
    scheme, remainder = found.groups()
    slash = remainder.find("/")
    head = remainder if slash < 0 else remainder[:slash]
    query = head.find("?")
    cut = head.rfind("@", 0, query) if query >= 0 and "@" in head[:query] else head.rfind("@")
    if cut < 0:
        return None
    return scheme, remainder[:cut], remainder[cut + 1:]


def canonical_dsn(dsn: str) -> str:
    """A URI DSN with each '@' inside its user info written %40, as `_userinfo` reads it:
    libpq ends the user info at the first '@', so `postgresql://bob:p@ss@word9@HOST/db` would
    reach libpq with the host `ss@word9@HOST`, and its error messages with part of the
    password."""
    parts = _userinfo(dsn)
    if parts is None or "@" not in parts[1]:
        return dsn
    scheme, info, rest = parts
    return f"{scheme}{info.replace('@', '%40')}@{rest}"


def _without_password(dsn: str) -> str:
    """A key=value DSN without its password pair, however it is quoted."""
    return re.sub(r"\s*\bpassword\s*=\s*('(?:[^'\\]|\\.)*'?|\S*)", "", dsn).strip()


def redact(dsn: str) -> str:
    """A DSN without its password (URI or key=value form): safe to print and to archive."""
    if "://" in dsn:
        parts = _userinfo(dsn)
        if parts is not None and ":" in parts[1]:
            scheme, info, rest = parts
            user = info.split(":", 1)[0]
            dsn = f"{scheme}{user}@{rest}" if user else f"{scheme}{rest}"
        return QUERY_PASSWORD.sub(rf"\g<1>{MASK}", dsn)
    return _without_password(dsn)


def without_secret(text: str, dsn: str) -> str:
    """`text` (a library's message about `dsn`) with the DSN's password masked, whole and each
    of its words: libpq quotes what it could not parse."""
    password = dsn_password(dsn)
    if not password:
        return text
    raw = (_userinfo(dsn) or ("", "", ""))[1].partition(":")[2]
    for value in sorted({password, raw, *password.split(), *raw.split()}, key=len,
                        reverse=True):
        if len(value) >= 3:
            text = text.replace(value, MASK)
    return text


def redact_command(command: str) -> str:
    """The command line as archived: no DSN password (a quoted one with spaces included), no
    user or token in a URL."""
    for pattern, replacement in PATTERNS:
        command = pattern.sub(replacement, command)
    return " ".join(filter(None, map(redact, command.split()))) or "invoke bench.run"


def masked_env(env: Mapping[str, str]) -> dict[str, str]:
    """An environment as archived: the values of secret variables masked."""
    return {k: MASK if is_secret(k, v) else str(v) for k, v in env.items()}


def dsn_password(dsn: str) -> str | None:
    """The password a DSN carries, in any of its forms."""
    if "://" in dsn:
        parts = _userinfo(dsn)
        if parts is not None and parts[1].partition(":")[2]:
            return unquote(parts[1].partition(":")[2])
        query = re.search(r"[?&]password=([^&]*)", parts[2] if parts else dsn)
        return unquote(query.group(1)) if query else None
    found = re.search(r"\bpassword\s*=\s*('(?:[^'\\]|\\.)*'|\S+)", dsn)
    if not found:
        return None
    value = found.group(1)
    return value[1:-1].replace("\\'", "'") if value.startswith("'") else value


def _material(value: str) -> bool:
    return len(value) >= MIN_VALUE and value.lower() not in PLAIN_VALUES


@dataclass
class Redactor:
    values: set[str] = field(default_factory=set)

    @classmethod
    def for_run(cls, dsn: str | None = None, env: Mapping[str, str] | None = None,
                extra: Iterable[str] = (), urls: Iterable[str] = ()) -> Redactor:
        """The secrets of one run: its DSN's password, the secret variables of its
        environment (this process's by default), the user info of its URLs (git pins) and any
        extra values (a label's secret env)."""
        env = os.environ if env is None else env
        values = {env[name] for name in secret_names(env) if name not in PUBLIC_NAMES}
        password = dsn_password(dsn) if dsn else None
        if password:
            values.add(password)
        for url in urls:
            values.update(url_secrets(url))
        values.update(extra)
        return cls({str(v) for v in values if _material(v)})

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

    def needles(self) -> list[bytes]:
        """Every value as bytes, as written and as a JSON string holds it (quotes escaped)."""
        out = set()
        for value in self.values:
            out.add(value.encode("utf-8"))
            out.add(json.dumps(value, ensure_ascii=False)[1:-1].encode("utf-8"))
        return sorted(out)

    def found(self, data: bytes) -> bool:
        """Whether any secret value is in these bytes (never says which: it is not printed)."""
        return any(needle in data for needle in self.needles())
