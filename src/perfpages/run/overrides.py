"""`--ref LABEL=REF` and `--pin LABEL=SPEC`: a suite's labels pointed at other builds, without
editing the suite (a pull request's head against its base). A label's A/A twin (declared with
`LabelSpec.again`: the same build under another name) follows it, so the pair that certifies a
block is not lost to a flag that named one of the two."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from typing import Any

from perfpages.errors import PerfpagesError
from perfpages.run import profile
from perfpages.run.builds import REQUIREMENT
from perfpages.run.suite import LabelSpec, Suite

BAD_REF = re.compile(r"[\s:~^?*\[\\]")
# How a suite names a label's twin besides `again`'s own description ("X again: …"): X-again,
# X-aa (bench.calibrate's), X_twin, X2, …
TWIN_SUFFIX = re.compile(r"[-_.]?(again|aa|twin|bis|copy|2)")


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


def _pin_fields(label: str, spec: str) -> dict[str, Any]:
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


def _build(spec: LabelSpec) -> str:
    """What makes a label's build: everything but its name and description."""
    return json.dumps([spec.package, spec.git, spec.ref, spec.subdirectory, spec.env,
                       spec.pg_settings], sort_keys=True, default=str)


def _declared_twin(twin: LabelSpec, of: str) -> bool:
    return (twin.description.startswith(f"{of} again")
            or (twin.name.startswith(of) and bool(TWIN_SUFFIX.fullmatch(twin.name[len(of):]))))


def twins(suite: Suite, named: set[str]) -> dict[str, str]:
    """{twin: label} for each label of `named` whose A/A twin is not in `named`: a label of the
    same build declared as its twin (`LabelSpec.again`'s description, or a name such as
    LABEL-again). A label of the same build not declared so (a suite's base and head both at
    HEAD) is no twin: it keeps its pin."""
    by_name = {x.name: x for x in suite.labels}
    out: dict[str, str] = {}
    for twin in suite.labels:
        if twin.name in named:
            continue
        found = [n for n in named if n in by_name and _build(by_name[n]) == _build(twin)
                 and _declared_twin(twin, n)]
        if found:
            out[twin.name] = max(found, key=len)  # base-again twins base, not b
    return out


def override(suite: Suite, refs: dict[str, str], pins: dict[str, str]) -> Suite:
    """The suite with `--pin` and `--ref` applied to its (selected) labels; a label's A/A twin
    given no flag of its own gets its label's. The runner calls this first for every new run,
    so what the suite needs that no build provides is refused here, before anything starts:
    flame graphs without py-spy."""
    profile.check(suite)
    known = [x.name for x in suite.labels]
    for flag, given in (("--pin", pins), ("--ref", refs)):
        for name in given:
            if name not in known:
                raise PerfpagesError(f"this run has no label {name!r}", key=flag,
                                     fix=f"choose among: {', '.join(known)}")
    follows = twins(suite, set(pins) | set(refs))
    pins = {**pins, **{t: pins[x] for t, x in follows.items() if x in pins}}
    refs = {**refs, **{t: refs[x] for t, x in follows.items() if x in refs}}
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
