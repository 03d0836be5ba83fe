"""QueryAPIGate across its releases, 0.35.0 to 0.43.0: one block, every release as shipped.

The history behind the queryapigate suite's 0.42.0-vs-0.43.0 question: did any release before
them change the speed of a saved-query call, and is 0.43.0's step the only one? Each label is
one PyPI release, every release from 0.35.0 to 0.43.0 that installs (all ten do), in release
order, so that the page's history chart and its change points read the labels as a series.
The run interleaves them like any comparison: round r measures every release before round r+1.

Everything else is the queryapigate suite's (its data set, store, configuration, keys and
subject command, imported from benchmarks/queryapigate.py): one gunicorn gthread worker with 8
threads, logging as each release ships it. 0.35.0 to 0.42.0 log a request and a query line per
call and have no switch; 0.43.0's defaults add gunicorn's access line (the queryapigate suite
measures what that costs). So a step at 0.43.0 is the release as a deployment gets it.

A new release is one more name at the end of RELEASES; the history page pins
`latest:queryapigate-history` and grows with the next archived run.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

from perfpages import DataSet, HttpBlockSpec, LabelSpec, Service, Suite

RELEASES = ("0.35.0", "0.35.1", "0.36.0", "0.37.0", "0.38.0", "0.39.0", "0.40.0", "0.41.0",
            "0.42.0", "0.43.0")


def _sibling(name: str) -> ModuleType:
    """The suite module beside this one (its helpers are shared, not copied)."""
    module_name = f"perfpages_suite_{name}"
    if module_name not in sys.modules:
        spec = importlib.util.spec_from_file_location(module_name,
                                                      Path(__file__).with_name(f"{name}.py"))
        assert spec and spec.loader
        module = importlib.util.module_from_spec(spec)
        sys.modules[module_name] = module
        spec.loader.exec_module(module)
    return sys.modules[module_name]


qag = _sibling("queryapigate")


def labels() -> tuple[LabelSpec, ...]:
    """One label per release; 0.43.0's two logging switches set to its defaults, explicitly."""
    return tuple(LabelSpec(v, package=f"{qag.EXTRAS}=={v}",
                           env=qag.SHIPPED if v == "0.43.0" else {},
                           description=f"QueryAPIGate {v} as shipped")
                 for v in RELEASES)


def suite(quick: bool) -> Suite:
    rows = 100_000 if quick else 1_000_000
    calls = ("lookup-plain", "lookup-governed")
    return Suite(
        name="queryapigate-history",
        title=("QueryAPIGate " + RELEASES[0] + " to " + RELEASES[-1] + ", release by release "
               f"({rows:,} accounts, one worker, 32 callers"
               + (", quick sizes: 2 rounds of 2 s windows)" if quick else ", 8 s windows)")),
        labels=labels(),
        blocks=(HttpBlockSpec("releases", tuple(qag.closed(c, 32, rows) for c in calls),
                              title="Release by release: one worker, 32 callers",
                              description="closed loop, 32 callers, each call for one window",
                              metrics=("throughput", "p50", "p99")),),
        dataset=DataSet("pgbench-tables", rows=rows, load=qag.load_pgbench_tables, seed=0),
        service=Service(spec=qag.spec, prepare=qag.prepare),
        rounds=2 if quick else 5, warmup_s=1.0 if quick else 3.0,
        window_s=2.0 if quick else 8.0, floor_s=2.0 if quick else 4.0,
        min_rounds=2 if quick else 5, scope="quick" if quick else "full",
        notes=("subject: gunicorn, 1 gthread worker, 8 threads; logging as each release ships "
               "it: 0.35.0-0.42.0 a request and a query line per call (no switch), 0.43.0 "
               "(QUERYAPIGATE_LOG_REQUESTS=on, QUERYAPIGATE_ACCESS_LOG=on, its defaults) the "
               "same two lines plus gunicorn's access line."),
    )
