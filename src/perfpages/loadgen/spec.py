"""What the load generator sends, and how hard: `Request` templates and a `Load`.

Pure values, validated in their constructors: the caller's process builds them, the worker
processes (`perfpages.loadgen.worker`) receive them pickled.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from yarl import URL

from perfpages.errors import PerfpagesError

PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")
# A control character in a header (CR, LF above all) would split the request: an injection.
FORBIDDEN = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")
METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS")


def _bad(key: str, what: str, fix: str) -> PerfpagesError:
    return PerfpagesError(what, key=key, fix=fix)


@dataclass(frozen=True)
class Request:
    """One request template. `{name}` in the URL, a header or the JSON body is filled per request
    with a seeded random integer from `fill[name] = (low, high)` (inclusive), so a lookup hits
    different keys; a JSON string that is exactly "{name}" becomes the integer itself."""

    url: str
    method: str = "GET"
    headers: dict[str, str] = field(default_factory=dict)
    json: Any = None
    fill: dict[str, tuple[int, int]] = field(default_factory=dict)
    weight: float = 1.0

    def __post_init__(self) -> None:
        if self.method.upper() not in METHODS:
            raise _bad("request.method", f"unknown HTTP method {self.method!r}",
                       f"use one of {', '.join(METHODS)}")
        object.__setattr__(self, "method", self.method.upper())
        try:
            url = URL(self.url.replace("{", "0").replace("}", "0"))
        except (ValueError, TypeError):
            url = None
        if url is None or url.scheme not in ("http", "https") or not url.host:
            raise _bad("request.url", f"{self.url!r} is not an http(s) URL with a host",
                       "write it as http://HOST:PORT/path")
        self._check_headers()
        if not (self.weight > 0 and math.isfinite(self.weight)):
            raise _bad("request.weight", f"weight {self.weight} must be a positive number",
                       "give each template a weight > 0")
        try:
            body = self.body_text()
        except (TypeError, ValueError) as exc:
            raise _bad("request.json", f"the body is not JSON-serialisable ({exc})",
                       "pass dicts, lists, strings and numbers") from None
        used = set(PLACEHOLDER.findall(self.url + body + "".join(self.headers.values())))
        for name in sorted(used - set(self.fill)):
            raise _bad(f"request.fill.{name}", f"{{{name}}} is used but has no range",
                       f"add fill={{'{name}': (LOW, HIGH)}}")
        for name, bounds in self.fill.items():
            if name not in used:
                raise _bad(f"request.fill.{name}", f"{{{name}}} appears nowhere in the request",
                           "remove it or use it in the URL, a header or the body")
            if (len(bounds) != 2 or not all(isinstance(b, int) for b in bounds)
                    or bounds[0] > bounds[1]):
                raise _bad(f"request.fill.{name}", f"range {bounds!r} is not (LOW, HIGH) integers",
                           "give two integers with LOW <= HIGH")

    def _check_headers(self) -> None:
        """Refused here, naming the header, not later in a generator process; the value is not
        printed (it may be a secret)."""
        for name, value in self.headers.items():
            if not isinstance(name, str) or not name or ":" in name or FORBIDDEN.search(name):
                raise _bad("request.headers", f"header name {name!r} is not a token",
                           "give names such as 'X-API-Key', without ':' or line breaks")
            if not isinstance(value, str) or FORBIDDEN.search(value):
                raise _bad(f"request.headers.{name}", f"the value of header {name!r} is not a "
                           "string or holds CR, LF or another control character",
                           "remove the line breaks (one header per key)")

    def body_text(self) -> str:
        return "" if self.json is None else json.dumps(self.json, separators=(",", ":"))


@dataclass(frozen=True)
class Load:
    """How hard to push. Closed loop when neither `rate` nor `share` is given: `callers` callers,
    each sending its next request as soon as its last one is answered (one caller: `callers=1`).
    Open loop with a `rate` (requests/s over all processes) or `share` × `capacity` (e.g. 0.75 of
    the throughput a closed-loop run just measured): requests fire on a fixed timetable over at most
    `callers` connections; one still waiting for a connection `drop_after_s` past its intended start
    is dropped and counted.

    Duet: `targets` names several base URLs (each a scheme://host:port prefix of the requests'
    URLs, the first the one they are written against); the requests then alternate between
    them, caller k's i-th going to target (k + i) mod n (open loop: each process's i-th due
    request), every target with its own connections and its own windows
    (`perfpages.loadgen.generator.run_each`); with `alternate=False`, caller k keeps to target
    k mod n instead (independent closed loops side by side). Without `targets`, the requests'
    own URLs."""

    requests: tuple[Request, ...] | list[Request]
    duration_s: float
    callers: int = 1
    rate: float | None = None
    share: float | None = None
    capacity: float | None = None
    arrivals: Literal["uniform", "poisson"] = "uniform"
    processes: int = 1
    window_s: float = 1.0
    warmup_s: float = 0.0
    timeout_s: float = 10.0
    drop_after_s: float | None = None  # default: timeout_s
    seed: int = 0
    samples: bool = False  # keep every request's duration (the cold path)
    uvloop: bool = True  # use uvloop where it is installed
    targets: tuple[str, ...] | list[str] = ()  # duet: base URLs the requests alternate between
    alternate: bool = True  # duet, closed loop: False keeps caller k on target k mod n

    def __post_init__(self) -> None:
        object.__setattr__(self, "requests", tuple(self.requests))
        object.__setattr__(self, "targets", tuple(self.targets))
        if not self.requests or not all(isinstance(r, Request) for r in self.requests):
            raise _bad("load.requests", "no request templates given",
                       "pass a list of perfpages.Request")
        self._check_targets()
        for key in ("duration_s", "window_s", "timeout_s"):
            value = getattr(self, key)
            if not (isinstance(value, int | float) and value > 0 and math.isfinite(value)):
                raise _bad(f"load.{key}", f"{key} must be > 0 (got {value!r})",
                           "give a positive number of seconds")
        if self.warmup_s < 0:
            raise _bad("load.warmup_s", "warmup_s must be >= 0", "use 0 for no warm-up")
        if self.drop_after_s is not None and self.drop_after_s <= 0:
            raise _bad("load.drop_after_s", "drop_after_s must be > 0", "leave it unset for "
                       "the timeout")
        if self.processes < 1:
            raise _bad("load.processes", "processes must be at least 1", "use 1 or more")
        if not isinstance(self.callers, int) or self.callers < 1:
            raise _bad("load.callers", f"callers must be a whole number >= 1 (got "
                       f"{self.callers!r})", "use 1 for one caller")
        if self.callers < self.processes:
            raise _bad("load.callers", f"{self.callers} callers cannot be shared by "
                       f"{self.processes} processes", "give at least one caller per process")
        if self.arrivals not in ("uniform", "poisson"):
            raise _bad("load.arrivals", f"unknown arrivals {self.arrivals!r}",
                       "use 'uniform' or 'poisson'")
        if self.rate is not None and (self.share is not None or self.capacity is not None):
            raise _bad("load.rate", "give either rate or share and capacity, not both",
                       "drop one of them")
        if (self.share is None) != (self.capacity is None):
            raise _bad("load.share", "share needs capacity (and capacity needs share)",
                       "pass both, e.g. share=0.75, capacity=892")
        for key in ("rate", "share", "capacity"):
            value = getattr(self, key)
            if value is not None and not (value > 0 and math.isfinite(value)):
                raise _bad(f"load.{key}", f"{key} must be > 0 (got {value!r})",
                           "give a positive number")

    def _check_targets(self) -> None:
        targets = self.targets
        if not targets:
            return
        if len(targets) < 2 or len(set(targets)) != len(targets):
            raise _bad("load.targets", f"{len(targets)} targets, {len(set(targets))} distinct",
                       "give two or more distinct base URLs, or none")
        for t in targets:
            try:
                url = URL(t) if isinstance(t, str) else None
            except (ValueError, TypeError):
                url = None
            if url is None or url.scheme not in ("http", "https") or not url.host \
                    or url.path not in ("", "/") or url.query_string or url.fragment:
                raise _bad("load.targets", f"{t!r} is not a base URL (scheme://host:port)",
                           "give each target's origin, e.g. http://127.0.0.1:8000")
        first = targets[0]
        for r in self.requests:
            rest = r.url[len(first):]
            if not r.url.startswith(first) or not (first.endswith("/") or rest[:1] in "/?"):
                raise _bad("load.targets", f"request {r.url!r} is not under the first target "
                           f"{targets[0]!r}", "write the requests against the first target")
        self.sides()  # each target's requests valid (their own one-line errors)

    def sides(self) -> list[tuple[Request, ...]]:
        """Each target's requests: the same paths, headers and bodies on its own origin."""
        if not self.targets:
            return [tuple(self.requests)]
        first = self.targets[0]
        return [tuple(replace(r, url=t + r.url[len(first):]) for r in self.requests)
                for t in self.targets]

    @property
    def open_loop(self) -> bool:
        return self.offered_rate is not None

    @property
    def offered_rate(self) -> float | None:
        if self.rate is not None:
            return float(self.rate)
        if self.share is not None and self.capacity is not None:
            return self.share * self.capacity
        return None

    @property
    def drop_limit_s(self) -> float:
        return self.drop_after_s if self.drop_after_s is not None else self.timeout_s

    def callers_of(self, shard: int) -> int:
        base, extra = divmod(self.callers, self.processes)
        return base + (1 if shard < extra else 0)

    def windows(self) -> list[float]:
        """Each measurement window's length: window_s, the last one shorter if need be."""
        n = max(1, math.ceil(self.duration_s / self.window_s - 1e-9))
        return [min(self.window_s, self.duration_s - i * self.window_s) for i in range(n)]
