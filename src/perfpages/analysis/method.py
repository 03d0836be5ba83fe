"""The method over a run's frame: cells and changes selected from it, how changes print, and
whether runs may be compared. What counts as clear is decided in `perfpages.analysis.decision`."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from decimal import Decimal
from math import isfinite
from typing import TYPE_CHECKING, Any

from perfpages.analysis.decision import RANGES, Cell, Change, Rule
from perfpages.analysis.metric import format_value
from perfpages.archive.manifest import Manifest
from perfpages.errors import AnalysisError, ComparabilityError

if TYPE_CHECKING:  # pandas is imported where a frame is used: a site build may need none
    import pandas as pd

# The machine fingerprint keys that must match before two runs share a table or a claim.
FINGERPRINT_KEYS = ("cpu", "cores", "memory_gib", "kernel", "python", "postgresql")
# What tells two VM builds under one CPU name apart: compared only when both runs record it
# (runs before did not), so an older run stays comparable with a newer one of its machine.
BUILD_KEYS = ("kernel_version", "cpu_flags", "microcode", "hypervisor")


def _sign(value: float) -> str:
    return "+" if value > 0 else "−" if value < 0 else "±"


def format_percent(value: float, digits: int | None = None) -> str:
    """A change in percent: whole from 10 %, one decimal below, or `digits` decimals; a change
    from 0 ("+∞ %") and one without a value ("n/a") print as such, never as a traceback."""
    if value != value:
        return "n/a"
    if not isfinite(value):
        return f"{_sign(value)}∞ %"
    if digits is None:
        digits = 0 if abs(value) >= 10 else 1
    return f"{_sign(value)}{abs(value):.{digits}f} %"


MAX_PLACES = 6  # decimals a claim's message goes to before it stops telling values apart


def places(text: str) -> int:
    """The decimals a printed number shows: "+12 %" 0, "1.36 ms" 2."""
    digits = text.split()[0].lstrip("+−±")
    return len(digits.partition(".")[2])


def typed_places(value: float) -> int:
    """The decimals a bound was typed with: 19 → 0, 12.5 → 1, 0.05 → 2."""
    exponent = Decimal(repr(float(value))).normalize().as_tuple().exponent
    return min(-exponent, MAX_PLACES) if isinstance(exponent, int) and exponent < 0 else 0


def telling(value: float, bounds: Sequence[float], start: int) -> int:
    """The fewest decimals from `start` at which `value` compares with every bound as its raw
    value does: a claim's message never shows "+13.5 %" for a change of +13.52 % that fails
    a bound of 13.5, nor "+10 %" for +9.96 % under a bound of 10."""
    def side(x: float, b: float) -> int:
        return (x > b) - (x < b)

    for digits in range(start, MAX_PLACES + 1):
        if all(side(round(value, digits), b) == side(value, b) for b in bounds):
            return digits
    return max(start, MAX_PLACES)


def format_change(change: Change, digits: int | None = None, verdict: str | None = None) -> str:
    """A change as every report and page prints it. Under an exact rule the Hodges–Lehmann
    shift with its exact interval, "+8.1 % (+5.0…+11.2 %, clear gain)" (the interval's ends
    with the shift's decimals); under ranges apart the ratio of medians, "+8.5 % (clear gain)".
    `verdict` is the verdict as the caller words it; without one, none is printed."""
    head = format_percent(change.percent, digits)
    interval = change.interval
    shown = [] if verdict is None else [verdict]
    if interval is not None and all(isfinite(v) for v in interval):
        places = digits if digits is not None else 0 if abs(change.percent) >= 10 else 1
        low, high = (f"{_sign(v)}{abs(v):.{places}f}" for v in interval)
        shown.insert(0, f"{low}…{high} %")
    return f"{head} ({', '.join(shown)})" if shown else head


def drifted(before: float, percent: float) -> str:
    """How a warning says a floor moved: "drifted −12 %"; a floor that measured nothing before
    its block has no drift to state."""
    if before > 0:
        return f"drifted {format_percent(percent)}"
    return "measured nothing before the block"


def format_resolution(value: float) -> str:
    """The smallest change a comparison resolves: "7.9 %", "15 %"; "—" where the rule states
    none (ranges apart), "none (too few rounds)" where its sizes cannot reach α."""
    if value != value:  # nan: the ranges rule
        return "—"
    if not isfinite(value):
        return "none (too few rounds)"
    return f"{value:.{0 if value >= 10 else 1}f} %"


def format_p(value: float | None) -> str:
    """A p-value: two significant digits, "< 0.0001" below; "—" without one."""
    if value is None:
        return "—"
    return "< 0.0001" if value < 1e-4 else f"{value:.2g}"


def format_range(changes: Sequence[Change], digits: int | None = None) -> str:
    """The range of several changes as a page prints it, each end signed: "+6 % to +10 %",
    "−2 % to 0 %", "−3.0 % to +5.0 %", "+8 %"."""
    if not changes:
        raise AnalysisError("no changes to summarise")
    return _span([c.percent for c in changes], "%", digits)


def format_difference(value: float, unit: str = "", digits: int | None = None) -> str:
    """An absolute difference with its sign: "+0.05 ms", "−12/s"."""
    return _sign(value) + format_value(abs(value), unit, digits)


def format_differences(values: Sequence[float], unit: str = "",
                       digits: int | None = None) -> str:
    """The range of several absolute differences: "+0.04 ms to +0.06 ms", "−0.01 ms to +0.03 ms"."""
    if not values:
        raise AnalysisError("no differences to summarise")
    return _span(list(values), unit, digits)


def _span(values: list[float], unit: str, digits: int | None) -> str:
    """One value or the range of several, signed, in percent (`unit` "%") or a unit."""
    def one(v: float) -> str:
        return format_percent(v, digits) if unit == "%" else format_difference(v, unit, digits)

    values = [v for v in values if v == v] or [float("nan")]  # NaN: "n/a", never a range end
    lo, hi = min(values), max(values)
    if not (isfinite(lo) and isfinite(hi)):  # a change from 0 (±∞) or none: no rounding
        return one(lo) if one(lo) == one(hi) else f"{one(lo)} to {one(hi)}"
    if unit == "%" and digits is None:  # the percent rule: whole numbers across a range
        if round(lo) == round(hi):
            return one(lo) if len(values) == 1 else one((lo + hi) / 2)
        if lo >= 0 or hi <= 0:  # each end signed: "−8 % to −7 %", never "−7–8 %"
            return f"{_whole(lo)} to {_whole(hi)}"
        return f"{one(lo)} to {one(hi)}"
    if one(lo) == one(hi):
        return one(lo)
    return f"{one(lo)} to {one(hi)}"


def _whole(value: float) -> str:
    """A range end in whole percent, signed; one that rounds to zero is "0 %", never "−0 %"."""
    whole = round(value)
    return "0 %" if whole == 0 else f"{_sign(whole)}{abs(whole)} %"


def cells(frame: pd.DataFrame) -> pd.DataFrame:
    """median, min, max and n per (block, parameters, label, metric) of measured rounds."""
    data = frame[frame["kind"] == "measure"] if "kind" in frame else frame
    keys = ["block", "parameters", "label", "metric"]
    grouped = data.groupby(keys, sort=False)["value"]
    out = grouped.agg(["median", "min", "max", "count"]).rename(columns={"count": "n"})
    return out.reset_index()


def select(frame: pd.DataFrame, *, block: str | None = None, label: str | None = None,
           metric: str | None = None, kind: str = "measure",
           params: dict[str, Any] | None = None, run: str | None = None) -> pd.DataFrame:
    """Rows matching every given dimension; parameters match by their own columns."""
    import pandas as pd

    mask = pd.Series(True, index=frame.index)
    for column, value in (("kind", kind), ("block", block), ("label", label),
                          ("metric", metric), ("run", run)):
        if value is not None:
            mask &= frame[column] == value
    for name, value in (params or {}).items():
        if name not in frame:
            raise AnalysisError(f"no parameter {name!r} in the data", key=name)
        mask &= frame[name].astype(str) == str(value)
    return frame[mask]


def cell(frame: pd.DataFrame, *, block: str, label: str, metric: str,
         params: dict[str, Any] | None = None, run: str | None = None) -> Cell:
    rows = select(frame, block=block, label=label, metric=metric, params=params, run=run)
    if rows.empty:
        where = ", ".join(f"{k}={v}" for k, v in (params or {}).items())
        raise AnalysisError(
            f"no data for block {block!r}, label {label!r}, metric {metric!r}"
            + (f" at {where}" if where else ""),
            fix="check the names against `invoke bench.report`")
    if rows["parameters"].nunique() > 1:
        choices = "; ".join(sorted(rows["parameters"].unique())[:4])
        raise AnalysisError(f"several parameter sets match ({choices})",
                            fix="name the parameters that pick one")
    ordered = rows.sort_values("round")
    return Cell(tuple(ordered["value"].tolist()), tuple(int(r) for r in ordered["round"]))


def change(frame: pd.DataFrame, *, block: str, base: str, other: str, metric: str,
           params: dict[str, Any] | None = None, rule: Rule = RANGES) -> Change:
    return Change(metric, cell(frame, block=block, label=base, metric=metric, params=params),
                  cell(frame, block=block, label=other, metric=metric, params=params), rule)


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


def fingerprint_differences(a: Manifest, b: Manifest) -> list[str]:
    diffs = []
    if a.format_version != b.format_version:
        diffs.append(f"format_version {a.format_version} ≠ {b.format_version}")
    if a.harness.get("version") != b.harness.get("version"):
        diffs.append(f"harness {a.harness.get('version')} ≠ {b.harness.get('version')}")
    for key in FINGERPRINT_KEYS:
        if a.machine.get(key) != b.machine.get(key):
            diffs.append(f"machine.{key} {a.machine.get(key)!r} ≠ {b.machine.get(key)!r}")
    for key in BUILD_KEYS:
        if key in a.machine and key in b.machine and a.machine[key] != b.machine[key]:
            diffs.append(f"machine.{key} {a.machine[key]!r} ≠ {b.machine[key]!r}")
    return diffs


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


DEFAULT_METRICS = ("throughput", "tps", "p50", "p99")  # a block that declares none


def block_metrics(manifest: Manifest, block: str, present: set[str]) -> list[str]:
    """The metrics a block's tables show: its declared ones, else the defaults it has."""
    declared = list(manifest.block(block).metrics)
    if declared:  # a block whose every window failed has none of them: show what there is
        return [m for m in declared if m in present] or sorted(present)
    chosen = [m for m in DEFAULT_METRICS if m in present]
    if "throughput" in chosen and "tps" in chosen:
        chosen.remove("tps")
    return chosen or sorted(present)
