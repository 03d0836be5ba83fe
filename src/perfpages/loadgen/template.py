"""Request templates serialised for the wire once, their placeholders filled per request."""

from __future__ import annotations

import random
import re

from yarl import URL

from perfpages.loadgen.client import IDEMPOTENT, HttpError, Origin, request_head, tls_context
from perfpages.loadgen.spec import Request

# where to, the request's bytes, whether its response has no body (HEAD), whether it is idempotent
Prepared = tuple[Origin, bytes, bool, bool]

# Stand-ins for placeholders while a template is serialised: letters and digits, which URL
# encoding leaves alone, so the serialised head can be cut where the values go.
_MARK = "zQpPfill{}Qz"
_LENGTH = "zQpPlenQz"  # a filled body's Content-Length
_MARKS = re.compile(r"zQpPfill(\d+)Qz|zQpPlenQz")


class Template:
    """A request ready to send, serialised once; placeholders are filled per request into the
    serialised head (or, for a placeholder the head cannot be cut at, e.g. in the host, the head
    is serialised again per request)."""

    def __init__(self, req: Request) -> None:
        self.method = req.method
        self.headers = dict(req.headers)
        body = req.body_text()
        if req.json is not None:
            self.headers.setdefault("Content-Type", "application/json")
        self.fill = [("{" + name + "}", lo, hi) for name, (lo, hi) in req.fill.items()]
        self.url_text, self.body_text = req.url, body
        self.no_body, self.idempotent = req.method == "HEAD", req.method in IDEMPOTENT
        self.dynamic_body = any(token in body for token, _, _ in self.fill)
        self.static: Prepared | None = None
        self.parts: list[str] | None = None  # the serialised head, cut at the values
        self.holes: list[tuple[int, int]] = []  # (index in parts, fill index or -1: the length)
        if req.url.startswith("https:"):
            tls_context()  # reads certificate files: before the load, not during it
        if not self.fill:
            url = URL(req.url)
            data = body.encode()
            head = request_head(self.method, url, self.headers, str(len(data)) if data else None)
            self.origin = Origin.of(url)
            self.static = (self.origin, head.encode() + data, self.no_body, self.idempotent)
        else:
            self._cut()

    def _mark(self, text: str) -> str:
        for i, (token, _, _) in enumerate(self.fill):
            text = text.replace(token, _MARK.format(i))
        return text

    def _cut(self) -> None:
        """Serialise the head with marks for the values and cut it there, if the marks come
        through URL encoding unchanged and none is in the origin."""
        if "zqpp" in (self.url_text + self.body_text + repr(self.headers)).lower():
            return
        marked = self._mark(self.url_text)
        try:
            url = URL(marked)
            origin = Origin.of(url)
        except (ValueError, TypeError, HttpError):
            return
        if "zqpp" in origin.host.lower() or marked.count("zQpP") != url.raw_path_qs.count("zQpP"):
            return  # in the host, the user or the fragment: serialised per request
        length = _LENGTH if self.dynamic_body else (str(len(self.body_text.encode()))
                                                    if self.body_text else None)
        head = request_head(self.method, url, {k: self._mark(v) for k, v in self.headers.items()},
                            length)
        parts, at = [], 0
        for m in _MARKS.finditer(head):
            parts.append(head[at:m.start()])
            self.holes.append((len(parts), int(m.group(1)) if m.group(1) else -1))
            parts.append("")
            at = m.end()
        parts.append(head[at:])
        self.origin, self.parts = origin, parts

    def make(self, rng: random.Random) -> Prepared:
        if self.static is not None:
            return self.static
        values = [str(rng.randint(lo, hi)) for _, lo, hi in self.fill]
        body = self.body_text
        if self.dynamic_body:
            for (token, _, _), value in zip(self.fill, values, strict=True):
                body = body.replace(f'"{token}"', value).replace(token, value)
        data = body.encode()
        if self.parts is not None:
            parts = self.parts.copy()
            for at, i in self.holes:
                parts[at] = values[i] if i >= 0 else str(len(data))
            return self.origin, "".join(parts).encode() + data, self.no_body, self.idempotent
        url_text, headers = self.url_text, self.headers
        for (token, _, _), value in zip(self.fill, values, strict=True):
            url_text = url_text.replace(token, value)
            headers = {k: v.replace(token, value) for k, v in headers.items()}
        try:
            url = URL(url_text)
            origin = Origin.of(url)
        except (ValueError, TypeError) as exc:
            raise HttpError(f"invalid URL {url_text!r}: {exc}") from None
        head = request_head(self.method, url, headers, str(len(data)) if data else None)
        return origin, head.encode() + data, self.no_body, self.idempotent
