"""perfpages: performance documentation as code.

The one import for suite authors and readers of archives::

    from perfpages import Suite, LabelSpec, DataSet, BlockSpec, Script      # pgbench suites
    from perfpages import Placement                                         # CPU sets
    from perfpages import Secret, Public         # a label's env value: secret, or not
    from perfpages import HttpBlockSpec, HttpCase, Service, ServiceSpec, Load, Request  # HTTP
    from perfpages import Instructions          # an HTTP block counted under callgrind
    from perfpages import load, open_run                                    # reading runs

The package reads as the data path: `run/` (replaying suites) → `loadgen/` (HTTP load) →
`archive/` (the run directory) → `analysis/` (the decision rule, reports) → `site/` (MkDocs
pages, claims) and `cli/` (the commands); see docs/guide/architecture.md.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from perfpages._version import __version__ as __version__

if TYPE_CHECKING:
    from perfpages.analysis.rows import load
    from perfpages.archive.reader import Run, open_run
    from perfpages.archive.secrets import Public, Secret
    from perfpages.errors import PerfpagesError
    from perfpages.loadgen.spec import Load, Request
    from perfpages.run.pgbench import Script
    from perfpages.run.placement import Placement
    from perfpages.run.service import ServiceSpec
    from perfpages.run.suite import (
        BlockSpec,
        DataSet,
        HttpBlockSpec,
        HttpCase,
        HttpTurn,
        Instructions,
        LabelSpec,
        Service,
        Suite,
    )

# Public name -> the module that defines it. Imported on first use, so a process that needs
# one module (a spawned load generator process, `perfpages --list`) does not pay for pandas.
_PUBLIC = {
    "Suite": "perfpages.run.suite", "LabelSpec": "perfpages.run.suite",
    "DataSet": "perfpages.run.suite", "BlockSpec": "perfpages.run.suite",
    "HttpBlockSpec": "perfpages.run.suite", "HttpCase": "perfpages.run.suite",
    "HttpTurn": "perfpages.run.suite", "Service": "perfpages.run.suite",
    "Instructions": "perfpages.run.suite",
    "Placement": "perfpages.run.placement",
    "Secret": "perfpages.archive.secrets", "Public": "perfpages.archive.secrets",
    "ServiceSpec": "perfpages.run.service", "Script": "perfpages.run.pgbench",
    "Load": "perfpages.loadgen.spec", "Request": "perfpages.loadgen.spec",
    "PerfpagesError": "perfpages.errors",
    "Run": "perfpages.archive.reader", "open_run": "perfpages.archive.reader",
    "load": "perfpages.analysis.rows",
}

__all__ = [  # the same names as _PUBLIC (a test checks), spelled out for type checkers
    "BlockSpec", "DataSet", "HttpBlockSpec", "HttpCase", "HttpTurn", "Instructions", "LabelSpec",
    "Load",
    "PerfpagesError", "Placement", "Public", "Request", "Run", "Script", "Secret", "Service",
    "ServiceSpec", "Suite", "__version__", "load", "open_run",
]


def __getattr__(name: str) -> Any:
    if name in _PUBLIC:
        return getattr(import_module(_PUBLIC[name]), name)
    raise AttributeError(f"module 'perfpages' has no attribute {name!r}")
