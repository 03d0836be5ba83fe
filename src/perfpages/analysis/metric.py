"""What each metric means: its unit, which direction is better, and how to print it."""

from __future__ import annotations

from dataclasses import dataclass

from perfpages.archive.histogram import PERCENTILES
from perfpages.archive.manifest import Manifest


@dataclass(frozen=True)
class MetricInfo:
    name: str
    title: str
    unit: str  # as printed after the number: "ms", "/s", "" …
    higher_is_better: bool | None  # None: no direction (a count to show, not to judge)

    def better(self, ratio: float) -> bool | None:
        """Whether a ratio of medians (other ÷ base) is an improvement."""
        if self.higher_is_better is None or ratio == 1 or ratio != ratio:
            return None
        return (ratio > 1) == self.higher_is_better


LATENCY_METRICS = (*PERCENTILES, "mean", "min", "max")
# What a call costs (perfpages.run.cost; bytes from the load generator): tabled per block.
COST_METRICS = ("cpu_ms", "pg_cpu_ms", "statements", "buffers_hit", "buffers_read",
                "connections", "sent_bytes", "received_bytes", "instructions",
                "pg_instructions")

# A transcribed summary (perfpages import) stores the min and max its source gives beside a
# metric's median as METRIC.min and METRIC.max: shown, never judged, never taken for rounds.
GIVEN_BOUNDS = ("min", "max")

_KNOWN: dict[str, MetricInfo] = {
    "throughput": MetricInfo("throughput", "throughput", "/s", True),
    "tps": MetricInfo("tps", "transactions", "/s", True),
    "requests": MetricInfo("requests", "requests", "", None),
    "errors": MetricInfo("errors", "errors", "", False),
    "non_2xx": MetricInfo("non_2xx", "non-2xx responses", "", False),
    "error_rate": MetricInfo("error_rate", "error rate", "%", False),
    "failed_windows": MetricInfo("failed_windows", "failed windows", "", False),
    "drops": MetricInfo("drops", "dropped requests", "", False),
    "achieved_rate": MetricInfo("achieved_rate", "achieved rate", "/s", True),
    # Across a delay to the database (perfpages.run.delay): per call, and what the proxy added.
    "round_trips": MetricInfo("round_trips", "round trips per call", "", False),
    "statements": MetricInfo("statements", "statements per call", "", False),
    "added_rtt_ms": MetricInfo("added_rtt_ms", "added round-trip time", "ms", None),
    # A share of samples or of time (a profile's CPU shares): shown and bounded, not judged.
    "share": MetricInfo("share", "share", "%", None),
    # Cost per call (perfpages.run.cost): work a call takes, which the machine's speed barely moves.
    "cpu_ms": MetricInfo("cpu_ms", "subject CPU per call", "ms", False),
    "pg_cpu_ms": MetricInfo("pg_cpu_ms", "PostgreSQL CPU per call", "ms", False),
    "buffers_hit": MetricInfo("buffers_hit", "shared buffers hit per call", "", False),
    "buffers_read": MetricInfo("buffers_read", "shared buffers read per call", "", False),
    # Counted under valgrind's callgrind (perfpages.run.callgrind): the subject's processes' own
    # instructions, the machine's speed cannot move them (waits, I/O, cache misses not in them).
    "instructions": MetricInfo("instructions", "instructions", "per call", False),
    # The subject's instructions per second without calls (its timers), taken off the above.
    "idle_instructions": MetricInfo("idle_instructions", "idle instructions", "/s", None),
    # The same of every PostgreSQL server process (`Instructions(postgres=True)`).
    "pg_instructions": MetricInfo("pg_instructions", "PostgreSQL instructions", "per call", False),
    "pg_idle_instructions": MetricInfo("pg_idle_instructions", "PostgreSQL idle instructions",
                                       "/s", None),
    # PostgreSQL sessions a call opens (pg_stat_database.sessions): 1 without a pool, ~0 with.
    "connections": MetricInfo("connections", "connections per call", "", False),
    # HTTP bytes per answered request (the load generator's count): shown, not judged.
    "sent_bytes": MetricInfo("sent_bytes", "bytes sent per call", "B", None),
    "received_bytes": MetricInfo("received_bytes", "bytes received per call", "B", None),
    **{name: MetricInfo(name, f"{name} latency", "ms", False) for name in LATENCY_METRICS},
}

# Human titles of the parameters suites commonly sweep, as (name, unit) for an axis title; a
# page overrides them (chart(…, x_title="…")), and others are spelled from their name.
PARAMETERS: dict[str, tuple[str, str]] = {
    "share_pct": ("offered load", "% of capacity"),
    "rate": ("offered rate", "per second"),
    "clients": ("concurrent clients", ""),
    "callers": ("concurrent callers", ""),
    "threads": ("threads per worker", ""),
    "workers": ("workers", ""),
    "scale": ("scale factor", ""),
    "delay_ms": ("delay to PostgreSQL each way", "ms"),
}
_SUFFIXES = {"_pct": "%", "_ms": "ms", "_s": "s", "_mb": "MB", "_per_s": "per second"}
_UNIT_WORDS = {"/s": "per second"}


def info(name: str) -> MetricInfo:
    """Known metrics by name; `*_ms` metrics are latencies; anything else has no direction."""
    if name in _KNOWN:
        return _KNOWN[name]
    base, _, bound = name.rpartition(".")
    if bound in GIVEN_BOUNDS and base in _KNOWN:  # a transcribed summary's given min or max
        known = _KNOWN[base]
        return MetricInfo(name, f"{known.title}, given {bound}", known.unit, None)
    if name.endswith("_ms"):
        return MetricInfo(name, name[:-3].replace("_", " "), "ms", False)
    if name.endswith("_per_s"):
        return MetricInfo(name, name[:-6].replace("_", " "), "/s", True)
    return MetricInfo(name, name, "", None)


def known(name: str) -> bool:
    """A metric perfpages has a unit and a direction for (what `perfpages import` accepts)."""
    return name in _KNOWN


def titled(name: str, unit: str) -> str:
    """An axis title: "p99 latency, ms", "offered load, % of capacity", "threads per worker"."""
    unit = _UNIT_WORDS.get(unit, unit)
    return f"{name}, {unit}" if unit else name


def parameter(name: str) -> tuple[str, str]:
    """A parameter's human name and unit: `share_pct` → ("offered load", "% of capacity")."""
    if name in PARAMETERS:
        return PARAMETERS[name]
    for suffix, unit in _SUFFIXES.items():
        if name.endswith(suffix) and len(name) > len(suffix):
            return name[: -len(suffix)].replace("_", " "), unit
    return name.replace("_", " "), ""


def metrics_title(metrics: list[str]) -> str:
    """What several metrics are, in words: "throughput", "p50 and p99 latency"."""
    if len(metrics) > 1 and all(m in LATENCY_METRICS for m in metrics):
        return _and(metrics) + " latency"
    return _and([info(m).title for m in metrics])


def axis_title(shown: dict[str, str]) -> str:
    """The value axis of metrics, each shown in its unit: "p99 latency, ms", "latency, ms"."""
    units = set(shown.values())
    if len(shown) > 1 and len(units) == 1 and all(info(m).unit == "ms"
                                                   and info(m).title.endswith("latency")
                                                   for m in shown):
        return titled("latency", units.pop())
    return " / ".join(titled(info(m).title, unit) for m, unit in shown.items())


def _and(words: list[str]) -> str:
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]


def format_number(value: float, digits: int | None = None) -> str:
    """Three significant figures by default, thousands separated: 786, 1,012, 8.3, 1.36, 0.043."""
    if value != value:  # NaN
        return "n/a"
    if digits is None:
        digits = default_digits(value)
    return f"{value:,.{digits}f}"


def default_digits(value: float) -> int:
    """The decimals `format_number` prints by default (three significant figures)."""
    size = abs(value)
    return 0 if size >= 100 or (value == int(value) and size >= 10) else (
        1 if size >= 10 else 2 if size >= 0.1 else 3)


def format_value(value: float, unit: str = "", digits: int | None = None) -> str:
    text = format_number(value, digits)
    if not unit:
        return text
    return f"{text}{unit}" if unit in ("%", "/s", "×") else f"{text} {unit}"


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


# What a reader is told beside every table of instructions (the report, the run page): what a
# count can and cannot show, said where the count is read.
INSTRUCTIONS_NOTE = (
    "Instructions per call count the work the subject's processes executed under valgrind's "
    "callgrind, which the machine's speed cannot move; they are not time: waits, round trips "
    "to PostgreSQL, locks, I/O and cache misses are not in them, nor is PostgreSQL's own work "
    "unless the block counts it (pg_instructions). Read them beside the same labels' "
    "wall-clock metrics (throughput, latency, CPU per call), never instead of them (the "
    "method: instructions per call)")

