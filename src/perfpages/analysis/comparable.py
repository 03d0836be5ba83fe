"""Whether runs may share a table or a claim: their machines and harnesses compared, and a
machine named as a reader tells it apart."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from perfpages.archive.manifest import Manifest
from perfpages.errors import ComparabilityError

# The machine fingerprint keys that must match before two runs share a table or a claim.
FINGERPRINT_KEYS = ("cpu", "cores", "memory_gib", "kernel", "python", "postgresql")
# What tells two VM builds under one CPU name apart: compared only when both runs record it
# (runs before did not), so an older run stays comparable with a newer one of its machine.
BUILD_KEYS = ("kernel_version", "cpu_flags", "microcode", "hypervisor")


def machine_text(machine: Mapping[str, Any]) -> str:
    """"AMD EPYC 7B13, 2 cores, 24 GiB": what a reader needs to tell two machines apart."""
    parts = [str(machine.get("cpu") or "an unknown CPU")]
    if machine.get("cores"):
        parts.append(f"{machine['cores']} core{'s' * (machine['cores'] != 1)}")
    if isinstance(machine.get("memory_gib"), int | float):
        parts.append(f"{machine['memory_gib']:g} GiB")
    return ", ".join(parts)


def machine_name(machine: Mapping[str, Any]) -> str:
    """"AMD EPYC, 2 cores, 23.5 GiB, kernel 6.18.44-fc-v1272, CPU flags ecfefe": `machine_text`,
    the kernel release (which names a VM build) and, in runs that record them, the start of the
    CPU flags' hash (two builds under one kernel name that expose different instruction sets)."""
    parts = [machine_text(machine)]
    if machine.get("kernel"):
        parts.append(f"kernel {machine['kernel']}")
    flags = str(machine.get("cpu_flags") or "")
    if "sha256 " in flags:
        parts.append(f"CPU flags {flags.rpartition('sha256 ')[2][:6]}")
    return ", ".join(parts)


def machine_differences(a: Mapping[str, Any], b: Mapping[str, Any],
                        keys: Iterable[str] = FINGERPRINT_KEYS) -> list[str]:
    """What tells two recorded machines apart: the fingerprint `keys`, and the build keys both
    record (one decision: comparability and the name a page header groups runs under)."""
    diffs = [f"machine.{key} {a.get(key)!r} ≠ {b.get(key)!r}" for key in keys
             if a.get(key) != b.get(key)]
    return diffs + [f"machine.{key} {a[key]!r} ≠ {b[key]!r}" for key in BUILD_KEYS
                    if key in a and key in b and a[key] != b[key]]


# The keys of the machine itself (the fingerprint's others are its software).
HARDWARE_KEYS = ("cpu", "cores", "memory_gib", "kernel")


def same_machine(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """Whether two runs' records allow them one machine (a run that predates a build key is
    not told apart by it)."""
    return not machine_differences(a, b, HARDWARE_KEYS)


def fingerprint_differences(a: Manifest, b: Manifest) -> list[str]:
    diffs = []
    if a.format_version != b.format_version:
        diffs.append(f"format_version {a.format_version} ≠ {b.format_version}")
    if a.harness.get("version") != b.harness.get("version"):
        diffs.append(f"harness {a.harness.get('version')} ≠ {b.harness.get('version')}")
    return diffs + machine_differences(a.machine, b.machine)


def check_comparable(manifests: Iterable[Manifest], allow: bool = False) -> list[str]:
    """Differences between the first run and each other; raise unless the caller allows them."""
    items = list(manifests)
    found = []
    for other in items[1:]:
        for diff in fingerprint_differences(items[0], other):
            found.append(f"{items[0].id} vs {other.id}: {diff}")
    if found and not allow:
        raise ComparabilityError(
            "runs are not comparable: " + "; ".join(found),
            fix="compare runs from one machine and harness, or allow it (--allow-mixed)")
    return found
