"""What each metric means: its unit, which direction is better, and how to print it."""

from __future__ import annotations

from dataclasses import dataclass

from perfpages.archive.histogram import PERCENTILES


@dataclass(frozen=True)
class MetricInfo:
    name: str
    title: str
    unit: str  # as printed after the number: "ms", "/s", "" …
    higher_is_better: bool | None  # None: no direction (a count to show, not to judge)

    def better(self, ratio: float) -> bool | None:
        """Whether a ratio of medians (other ÷ base) is an improvement."""
        if self.higher_is_better is None or ratio == 1:
            return None
        return (ratio > 1) == self.higher_is_better


LATENCY_METRICS = (*PERCENTILES, "mean", "max")

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
    **{name: MetricInfo(name, name, "ms", False) for name in LATENCY_METRICS},
}


def info(name: str) -> MetricInfo:
    """Known metrics by name; `*_ms` metrics are latencies; anything else has no direction."""
    if name in _KNOWN:
        return _KNOWN[name]
    if name.endswith("_ms"):
        return MetricInfo(name, name[:-3], "ms", False)
    if name.endswith("_per_s"):
        return MetricInfo(name, name[:-6], "/s", True)
    return MetricInfo(name, name, "", None)


def format_number(value: float, digits: int | None = None) -> str:
    """Three significant figures by default, thousands separated: 786, 1,012, 8.3, 1.36, 0.043."""
    if value != value:  # NaN
        return "n/a"
    if digits is None:
        size = abs(value)
        digits = 0 if size >= 100 or (value == int(value) and size >= 10) else (
            1 if size >= 10 else 2 if size >= 0.1 else 3)
    return f"{value:,.{digits}f}"


def format_value(value: float, unit: str = "", digits: int | None = None) -> str:
    text = format_number(value, digits)
    if not unit:
        return text
    return f"{text}{unit}" if unit in ("%", "/s", "×") else f"{text} {unit}"
