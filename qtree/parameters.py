"""Operators no parameter reaches: what recurs unchanged when a query's values change.

An analyst's next query is often the last one with other values: another date range,
another region. Every operator under a filter on those values is new to the QTree, but an
operator whose rows no value selects (TPC-H Q18's per-order sum over lineitem, Q17's
per-part average) is computed again, identical, by every query of that shape. A
*parameter-free* operator is one whose subtree selects rows by no literal: no literal in a
Filter's or a Join's condition, no limit, and no subquery (whose own filters are not looked
into). Literals in computed columns (``1 - l_discount``, ``0.2 * avg(l_quantity)``) choose
no rows and do not count.

Whether such operators do come back is measured, not assumed (``criss.planner.learning``):
this module only says which operators of a query they are.
"""

from __future__ import annotations

from collections.abc import Iterator

from criss.qtree.canonical import LITERAL, ROW_LIMITS, SCOPED
from criss.qtree.plan import Expr, PlanNode, highest
from criss.qtree.rewrite import result_node, storable, top_rows, top_rows_sort

#: Operators whose condition selects rows: a literal in it is a value the query chose.
SELECTING = frozenset({"Filter", "Join"})
#: Operators that keep a number (or a fraction) of rows the query chose.
LIMITING = ROW_LIMITS | {"Sample"}


def parameter_free_paths(tree: PlanNode) -> set[tuple[int, ...]]:
    """Paths of the operators of ``tree`` whose whole subtree is parameter-free."""
    free: set[tuple[int, ...]] = set()

    def visit(node: PlanNode) -> bool:
        children = [visit(child) for child in node.children]  # every child visited
        if all(children) and _selects_by_no_value(node):
            free.add(node.path)
            return True
        return False

    visit(tree)
    return free


def parameter_free_intermediates(tree: PlanNode) -> list[PlanNode]:
    """The highest parameter-free Aggregates (or Projects of one) under the query's result
    that could be cached (storable), top-down. The result itself is not one (a statement
    that computes it again is a repeat), nor what the Sort of its top rows ranks (the
    statement's repeats are served its top rows; only another limit would read it), nor is
    a join: its rows may outnumber its inputs', and nothing bounds what caching it would
    write before it ran (an aggregate's result is at most its input's, and the learned
    result ratio is one of aggregated results)."""
    free = parameter_free_paths(tree)
    results = {node.path for node in _results(result_node(tree))}

    def eligible(node: PlanNode) -> PlanNode | None:
        wanted = node.path in free and node.path not in results and storable(node)
        return node if wanted and _aggregated(node) else None

    return highest(tree, eligible)


def _results(result: PlanNode) -> Iterator[PlanNode]:
    """The result, and for top rows the operator their Sort ranks with Projects under it."""
    yield result
    if top_rows(result):
        yield from _through_projects(top_rows_sort(result).children[0])


def _aggregated(node: PlanNode) -> bool:
    """An Aggregate, or Projects of one."""
    return any(n.op == "Aggregate" for n in _through_projects(node))


def _through_projects(node: PlanNode) -> Iterator[PlanNode]:
    """``node``, and while it is a Project, the operator under it."""
    yield node
    while node.op == "Project" and len(node.children) == 1:
        node = node.children[0]
        yield node


def _selects_by_no_value(node: PlanNode) -> bool:
    if node.op in LIMITING:
        return False
    if any(expr.mentions(_is_scoped) for expr in _expressions(node)):
        return False
    condition = node.args.get("condition")
    return not (
        node.op in SELECTING and isinstance(condition, Expr) and condition.mentions(_is_literal)
    )


def _expressions(node: PlanNode) -> Iterator[Expr]:
    for value in node.args.values():
        if isinstance(value, Expr):
            yield value
        elif isinstance(value, (list, tuple)):
            yield from (v for v in value if isinstance(v, Expr))


def _is_literal(expr: Expr) -> bool:
    return expr.cls == LITERAL


def _is_scoped(expr: Expr) -> bool:
    return any(part in expr.cls for part in SCOPED)
