"""invoke tasks: perfpages' own task tree (the `perfpages` command runs the same; `inv --list`)."""

from perfpages.cli.tasks import ns

__all__ = ["ns"]
