"""Differences between two EXPLAIN (FORMAT JSON) plans of one statement, as short lines a
reader takes in at a glance: "Seq Scan on pgbench_accounts → Index Scan using
pgbench_accounts_pkey on pgbench_accounts". Only the plan's shape is compared (node types,
relations, indexes, join types, strategies), never its costs or row estimates: those move
with the statistics, the shape is what a release or a setting changed.
"""

from __future__ import annotations

import difflib
from typing import Any

MAX_LINES = 6  # a rewritten plan would list every node: the first few say what happened

# How EXPLAIN's text format names a node from its JSON fields (explain.c).
_STRATEGY = {("Aggregate", "Hashed"): "HashAggregate", ("Aggregate", "Sorted"): "GroupAggregate",
             ("Aggregate", "Mixed"): "MixedAggregate", ("SetOp", "Hashed"): "HashSetOp"}
_JOINS = ("Nested Loop", "Hash Join", "Merge Join")


def _root(plan: Any) -> dict[str, Any] | None:
    """The top node of an EXPLAIN (FORMAT JSON) result: `[{"Plan": {...}}]`."""
    top = plan[0] if isinstance(plan, list) and plan else plan
    node = top.get("Plan") if isinstance(top, dict) else None
    return node if isinstance(node, dict) else None


def describe(node: dict[str, Any]) -> str:
    """One node as EXPLAIN's text format names it, without costs: "Hash Left Join",
    "Index Scan using t_pkey on t", "HashAggregate", "Insert on t"."""
    kind = str(node.get("Node Type", "?"))
    name = _STRATEGY.get((kind, str(node.get("Strategy", ""))), kind)
    if kind == "ModifyTable" and node.get("Operation"):
        name = str(node["Operation"])
    join = node.get("Join Type")
    if kind in _JOINS and join and join != "Inner":
        name = (f"Nested Loop {join} Join" if kind == "Nested Loop"
                else f"{kind.removesuffix(' Join')} {join} Join")
    if node.get("Index Name"):
        name += f" using {node['Index Name']}"
    for key in ("Relation Name", "Function Name", "CTE Name"):
        if node.get(key):
            return f"{name} on {node[key]}"
    return name


def shape(plan: Any) -> list[str]:
    """The plan's nodes described, depth first (an empty list when it is not a plan)."""
    out: list[str] = []

    def walk(node: dict[str, Any]) -> None:
        out.append(describe(node))
        for child in node.get("Plans") or []:
            if isinstance(child, dict):
                walk(child)

    root = _root(plan)
    if root is not None:
        walk(root)
    return out


def differences(base: Any, head: Any, limit: int = MAX_LINES) -> list[str]:
    """What changed from the base plan to the head plan, one short line each: "A → B" for a
    node replaced, "+ B" for one added, "− A" for one gone; [] when the shapes agree."""
    a, b = shape(base), shape(head)
    lines: list[str] = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        if op == "equal":
            continue
        old, new = a[i1:i2], b[j1:j2]
        pairs = min(len(old), len(new))
        lines += [f"{x} → {y}" for x, y in zip(old[:pairs], new[:pairs], strict=True)]
        lines += [f"− {x}" for x in old[pairs:]] + [f"+ {y}" for y in new[pairs:]]
    if len(lines) > limit:
        lines = [*lines[: limit - 1], f"… and {len(lines) - limit + 1} more"]
    return lines
