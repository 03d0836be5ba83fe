"""The `perfpages` command: an invoke Program over the same task tree as `invoke` here.

`perfpages bench.report` and `perfpages bench report` (a space, as people type it) are the same;
so are they under plain `invoke` with the tasks.py `perfpages init` writes. Both print invoke's
parse errors as one `error:` line (perfpages.cli.names, whose Program subclass this runs).
"""

from __future__ import annotations

import os
import sys

from perfpages.cli.interrupts import interruptible


def main() -> None:
    # The imports go inside: a signal while they load (seconds on a busy machine) is one line.
    with interruptible("perfpages", "while it started (nothing was done)"):
        from perfpages._version import __version__
        from perfpages.cli.names import Program
        from perfpages.cli.tasks import ns

        try:
            Program(name="perfpages", binary="perfpages", version=__version__,
                    namespace=ns).run()
        except BrokenPipeError:  # `perfpages … | head` stopped reading: Python's own recipe
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            sys.exit(1)
