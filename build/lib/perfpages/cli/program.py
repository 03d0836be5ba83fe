"""The `perfpages` command: an invoke Program over the same task tree as `invoke` here.

`perfpages bench.report` and `perfpages bench report` (a space, as people type it) are the same;
so are they under plain `invoke` with the tasks.py `perfpages init` writes.
"""

from __future__ import annotations

from invoke import Program

from perfpages import __version__
from perfpages.cli.names import spaced_names
from perfpages.cli.tasks import ns


class PerfpagesProgram(Program):
    def parse_tasks(self) -> None:
        self.core.unparsed = spaced_names(self.core.unparsed, self.collection)
        super().parse_tasks()


def main() -> None:
    PerfpagesProgram(name="perfpages", binary="perfpages", version=__version__,
                     namespace=ns).run()
