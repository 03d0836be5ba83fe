"""The commands: `perfpages` / `invoke` tasks (bench.*, docs.*) as thin wrappers over the console
functions, which turn user errors into one line and an exit code.
"""
