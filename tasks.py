"""invoke tasks: perfpages' task tree (`invoke --list`; the `perfpages` command runs the same)."""

from perfpages.cli.tasks import ns

__all__ = ["ns"]
