"""`python -m perfpages` is the `perfpages` command."""

from perfpages.cli.program import main

main()
