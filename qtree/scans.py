"""Which columns of a table a query reads: what its input costs, in a columnar file.

Spark reads only the columns a query needs from a Parquet or ORC file: the Project that
column pruning puts over a relation, and the Filters between them, name them. A table's
file bytes overstate what a query over a few of its columns reads several times (TPC-H
Q20 reads four of lineitem's sixteen columns; partsupp's comment is most of partsupp), so
the input behind an estimated Texec, and the input rate learned from executions, count
the bytes of the columns read where those are known.

Canonical expressions refer to columns by their ordinal in the operator's input
(``criss.qtree.canonical``), so the ordinals a Project (over Filters) over a relation
refers to are positions in the relation's output. A relation read any other way (under a
join or an aggregate directly, or by a condition holding a subquery) counts whole.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from criss.qtree.canonical import ATTRIBUTE, SCOPED
from criss.qtree.plan import READ_BYTES, Expr, PlanNode


def read_positions(root: PlanNode) -> dict[tuple[int, ...], frozenset[int]]:
    """For each file relation of ``root`` read through a Project (over Filters), the
    positions of its output columns the query reads; relations read otherwise are absent."""
    return {leaf.path: positions for leaf, positions in _projected_scans(root)}


def _projected_scans(root: PlanNode) -> list[tuple[PlanNode, frozenset[int]]]:
    found: list[tuple[PlanNode, frozenset[int]]] = []
    for node in root.walk():
        if node.op != "Project" or len(node.children) != 1:
            continue
        expressions: list[Any] = [node.args.get("projectList")]
        below = node.children[0]
        while below.op == "Filter" and len(below.children) == 1:
            expressions.append(below.args.get("condition"))
            below = below.children[0]
        if below.op != "LogicalRelation" or not below.relation:
            continue
        positions = _ordinals(expressions)
        if positions is not None:
            found.append((below, frozenset(positions)))
    return found


def with_read_bytes(
    root: PlanNode, bytes_of: Callable[[PlanNode, frozenset[int]], int | None]
) -> PlanNode:
    """``root`` with each relation leaf read through a Project marked with the bytes of the
    columns read (``bytes_of`` the leaf and the positions; None: unknown, left unmarked)."""
    marks = {}
    for leaf, positions in _projected_scans(root):
        size = bytes_of(leaf, positions)
        if size is not None:
            marks[leaf.path] = size
    if not marks:
        return root

    # the operators on the way to a marked leaf: only they are rebuilt (a TPC-DS plan has
    # over a thousand operators and a hundred marked leaves)
    on_the_way = {path[:depth] for path in marks for depth in range(len(path))}

    def rebuilt(node: PlanNode) -> PlanNode:
        if node.path in marks:
            return node.with_(extra={**node.extra, READ_BYTES: marks[node.path]})
        if node.path not in on_the_way:
            return node
        return node.with_(children=tuple(rebuilt(c) for c in node.children))

    return rebuilt(root)


def _ordinals(values: Iterable[Any]) -> set[int] | None:
    """Ordinals of the attributes ``values`` (expressions, lists of them) refer to; None
    when one refers to another plan's columns."""
    found: set[int] = set()
    stack = list(values)
    while stack:
        value = stack.pop()
        if isinstance(value, list | tuple):
            stack.extend(value)
            continue
        if not isinstance(value, Expr):
            continue
        if any(part in value.cls for part in SCOPED):
            return None
        if value.cls == ATTRIBUTE:
            ordinal = value.attribute_id
            if not isinstance(ordinal, int):
                return None
            found.add(ordinal)
        stack.extend(value.children)
    return found
