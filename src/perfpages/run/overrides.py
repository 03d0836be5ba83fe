"""`--ref LABEL=REF` and `--pin LABEL=SPEC`: a suite's labels pointed at other builds, without
editing the suite (a pull request's head against its base)."""

from __future__ import annotations

import re
from dataclasses import replace

from perfpages.errors import PerfpagesError
from perfpages.run.builds import REQUIREMENT
from perfpages.run.suite import LabelSpec, Suite

BAD_REF = re.compile(r"[\s:~^?*\[\\]")


def parse_assignments(values: list[str], flag: str) -> dict[str, str]:
    """`LABEL=VALUE` flags, repeated, as a dict (a malformed or repeated one: one line)."""
    out: dict[str, str] = {}
    for text in values:
        label, sep, value = text.partition("=")
        label, value = label.strip(), value.strip()
        if not sep or not label or not value:
            raise PerfpagesError(f"{text!r} is not LABEL=VALUE", key=flag,
                                 fix=f"write {flag} LABEL={'REF' if flag == '--ref' else 'SPEC'}")
        if label in out:
            raise PerfpagesError(f"label {label!r} is given twice", key=flag,
                                 fix=f"give one {flag} per label")
        out[label] = value
    return out


def _pin_fields(label: str, spec: str) -> dict[str, str]:
    """A `--pin` value as LabelSpec fields: `name==version`, or `git+REPO@REF` as pip writes it
    (with an optional `#subdirectory=DIR`)."""
    fix = "write --pin LABEL=name==version or --pin LABEL=git+REPO@REF"
    if not spec.startswith("git+"):
        if not REQUIREMENT.match(spec):
            raise PerfpagesError(f"{label}={spec!r} is neither an exact package pin nor a git "
                                 "pin", key="--pin", fix=fix)
        return {"package": spec, "git": "", "ref": "HEAD", "subdirectory": ""}
    body, _, fragment = spec.removeprefix("git+").partition("#")
    # The ref follows the last '@' after the host (a URL's user@ comes before it).
    path = max(body.find("/", body.index("://") + 3), 0) if "://" in body else 0
    repo, _, ref = body.rpartition("@") if "@" in body[path:] else ("", "", "")
    sub = fragment.removeprefix("subdirectory=") if fragment.startswith("subdirectory=") else ""
    # A git ref holds no ':', space or '~^?*[\\' and never starts with '-'.
    if not (repo and ref) or BAD_REF.search(ref) or ref.startswith("-") or (fragment and not sub):
        raise PerfpagesError(f"{label}={spec!r} is not git+REPO@REF[#subdirectory=DIR]",
                             key="--pin", fix=fix)
    return {"package": "", "git": repo, "ref": ref, "subdirectory": sub}


def override(suite: Suite, refs: dict[str, str], pins: dict[str, str]) -> Suite:
    """The suite with `--pin` and `--ref` applied to its (selected) labels."""
    known = [x.name for x in suite.labels]
    for flag, given in (("--pin", pins), ("--ref", refs)):
        for name in given:
            if name not in known:
                raise PerfpagesError(f"this run has no label {name!r}", key=flag,
                                     fix=f"choose among: {', '.join(known)}")
    labels: list[LabelSpec] = []
    for spec in suite.labels:
        if spec.name in pins and spec.name in refs:
            raise PerfpagesError(f"label {spec.name!r} is given both --pin and --ref",
                                 key="--ref", fix="put the ref in the pin: git+REPO@REF")
        if spec.name in pins:
            spec = replace(spec, **_pin_fields(spec.name, pins[spec.name]))
        elif spec.name in refs:
            if not spec.git:
                raise PerfpagesError(f"label {spec.name!r} is not pinned to a git repository",
                                     key="--ref", fix=f"replace its pin instead: --pin "
                                                      f"{spec.name}=git+REPO@REF")
            if refs[spec.name].startswith("-"):
                raise PerfpagesError(f"{refs[spec.name]!r} is not a ref", key="--ref",
                                     fix="name a branch, tag or commit")
            spec = replace(spec, ref=refs[spec.name])
        labels.append(spec)
    return replace(suite, labels=tuple(labels))
