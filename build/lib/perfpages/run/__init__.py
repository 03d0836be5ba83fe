"""Replaying a suite: the runner orders blocks × rounds × labels and hands each turn to a block
driver (pgbench or HTTP); pinned builds, PostgreSQL, pgbench, subject services, profiles and
the collection of server diagnostics live here. Writes through `perfpages.archive.writer`.
"""
