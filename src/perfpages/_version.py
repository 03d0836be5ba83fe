"""The package's version: a leaf that the facade, the machine fingerprint and the CLI read
(pyproject.toml takes it from here)."""

__version__ = "0.1.0"
