"""What a node's shape alone bounds: at most how many rows it outputs (an aggregate without
grouping columns: one; a limit: its literal)."""

from __future__ import annotations

from criss.qtree.lineage import literal_of
from criss.qtree.plan import Expr, PlanNode

#: Operators whose output has at most as many rows as their single input.
_ROW_BOUNDED_BY_INPUT = frozenset({"Project", "Filter", "Sort", "SubqueryAlias", "Sample"})


def max_rows(node: PlanNode) -> int | None:
    """At most how many rows ``node`` outputs, from its shape alone (None if its shape
    does not bound them): an aggregate without grouping columns outputs one row, a limit at
    most its literal."""
    op = node.op
    if op == "Aggregate":
        if node.args.get("groupingExpressions") == []:
            return 1
    elif op in ("GlobalLimit", "LocalLimit"):
        expr = node.args.get("limitExpr")
        limit = literal_of(expr) if isinstance(expr, Expr) else None
        inner = max_rows(node.children[0]) if len(node.children) == 1 else None
        if limit is not None and limit[1].isdigit():
            return int(limit[1]) if inner is None else min(int(limit[1]), inner)
        return inner
    elif op in _ROW_BOUNDED_BY_INPUT and len(node.children) == 1:
        return max_rows(node.children[0])
    return None
