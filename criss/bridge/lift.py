"""A lifted aggregate: the query's Aggregate grouped also by the columns its parameters
filter, without those conditions (see ``criss.planner.lift``); a widened selection: a
table's selection without the conditions its template varies (``criss.planner.widen``).

Built from the optimized plan's own nodes: each Filter holding parameters loses its
conditions on the lifted columns, every Project between it and the Aggregate passes those
columns on, and the Aggregate becomes a DataFrame grouped by its grouping expressions and
the lifted columns, keeping its sums, counts, minima and maxima and splitting each average
into a sum and a count. Expressions keep their exprIds, so every reference still resolves.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from criss.bridge.plans import conjuncts
from criss.errors import BridgeError

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from criss.bridge.catalyst import CatalystBridge
    from criss.qtree.subsume import LiftSite

#: Conditions a lifted column's parameter may take (one column against literals).
_PARAMETER_CONDITIONS = frozenset(
    {
        "GreaterThan",
        "GreaterThanOrEqual",
        "LessThan",
        "LessThanOrEqual",
        "EqualTo",
        "In",
        "InSet",
    }
)
_KEPT_FUNCTIONS = frozenset({"Sum", "Count", "Min", "Max"})


def lifted_aggregate(bridge: CatalystBridge, aggregate: Any, sites: list[LiftSite]) -> DataFrame:
    """``aggregate`` (a JVM Aggregate) lifted over, for each site, the columns at its
    positions of the input of the Filter at its relative path under the aggregate."""
    from pyspark.sql import functions as F

    child, lifted = _rebuilt(bridge, aggregate.child(), (0,), dict(sites), _on_lifted)
    frame = bridge.dataframe_of(child)
    grouping = seq_items(aggregate.groupingExpressions())
    grouped = _grouped_ids(grouping)
    groups = [bridge.column(e) for e in grouping]
    groups += [bridge.column(a) for a in lifted if _id(a) not in grouped]
    measures = []
    for output in seq_items(aggregate.aggregateExpressions()):
        if _name(output) == "AttributeReference":
            continue  # a grouping column: groupBy outputs it
        # an expression over aggregates keeps each of them (see aggregate_parts)
        expressions = [output] if _aggregate_function(output) else aggregate_parts(output)
        for expression in expressions or [output]:
            function = _aggregate_function(expression)
            if function is None:
                raise BridgeError(f"cannot lift the aggregate output {output.sql()}")
            if _name(function) in _KEPT_FUNCTIONS:
                measures.append(bridge.column(expression))
            else:  # Average: a sum and a count of its argument
                argument = bridge.column(function.children().apply(0))
                measures += [F.sum(argument), F.count(argument)]
    return frame.groupBy(*groups).agg(*measures)


def aggregate_parts(output: Any) -> list[Any]:
    """The AggregateExpressions of an aggregate output (a JVM expression) in pre-order, as
    ``criss.qtree.lineage`` lists an expression's parts; one for an aggregate itself."""
    if _name(output) == "AggregateExpression":
        return [output]
    return [part for child in seq_items(output.children()) for part in aggregate_parts(child)]


def replace_parts(expression: Any, replacements: Any, bridge: CatalystBridge) -> Any:
    """``expression`` with each of its :func:`aggregate_parts`, in order, replaced by the next
    expression of the iterator ``replacements``."""
    if _name(expression) == "AggregateExpression":
        return next(replacements)
    children = seq_items(expression.children())
    if not children:
        return expression
    rebuilt = [replace_parts(child, replacements, bridge) for child in children]
    return expression.withNewChildren(bridge.seq(rebuilt))


def widened_selection(bridge: CatalystBridge, selection: Any, sites: list[LiftSite]) -> DataFrame:
    """``selection`` (a JVM Project or Filter over a scan) without the conditions its
    template's statements vary (see ``criss.qtree.widen``): at each site, every condition
    reading only the columns at its positions is dropped (their NOT NULLs too), and the
    Projects above pass those columns up."""
    widened, _ = _rebuilt(bridge, selection, (), dict(sites), _reads_only)
    return bridge.dataframe_of(widened)


def _reads_only(conjunct: Any, ids: set[int]) -> bool:
    """A condition whose columns are all among ``ids``."""
    columns = {_id(a) for a in seq_items(conjunct.references().toSeq())}
    return bool(columns) and columns <= ids


def lifted_row_width(aggregate: Any, sites: list[LiftSite]) -> int:
    """Spark's default width (bytes) of a row of ``aggregate`` lifted over ``sites``: its
    own output, each lifted column it does not group by already, and a count beside each
    average (the lifted result keeps a sum and a count for it)."""
    width = int(aggregate.schema().defaultSize())
    grouped = _grouped_ids(seq_items(aggregate.groupingExpressions()))
    for path, positions in sites:
        node = aggregate
        for index in path:
            node = node.children().apply(index)
        inputs = node.children().apply(0).output()
        for position in positions:
            column = inputs.apply(position)
            if _id(column) not in grouped:
                width += int(column.dataType().defaultSize())
                grouped.add(_id(column))
    for output in seq_items(aggregate.aggregateExpressions()):
        function = _aggregate_function(output)
        if function is not None and _name(function) == "Average":
            width += 8
    return width


def _grouped_ids(grouping: list[Any]) -> set[int]:
    """The exprIds of the plain columns among grouping expressions."""
    return {_id(e) for e in grouping if _name(e) == "AttributeReference"}


def _rebuilt(
    bridge: CatalystBridge,
    node: Any,
    path: tuple[int, ...],
    sites: dict[tuple[int, ...], list[int]],
    drops: Callable[[Any, set[int]], bool],
) -> tuple[Any, list[Any]]:
    """``node`` (at ``path`` under the aggregate) without the conditions on the columns of
    the sites at or under it that ``drops`` (conjunct, their exprIds) names, and the lifted
    columns it now passes up."""
    if not any(p[: len(path)] == path for p in sites):
        return node, []
    kids = [node.children().apply(i) for i in range(node.children().size())]
    lifted: list[Any] = []
    for index, kid in enumerate(kids):
        kids[index], below = _rebuilt(bridge, kid, path + (index,), sites, drops)
        lifted += below
    if path in sites:
        if _name(node) != "Filter":
            raise BridgeError(f"no Filter at {path} under the aggregate to lift")
        here = [kids[0].output().apply(p) for p in sites[path]]
        ids = {_id(a) for a in here}
        kept = [c for c in conjuncts(node.condition()) if not drops(c, ids)]
        lifted += here
        return _filtered(bridge, kept, kids[0]), lifted
    if _name(node) == "Project":
        items = seq_items(node.projectList())
        present = {_id(e) for e in items if _name(e) == "AttributeReference"}
        items += [a for a in lifted if _id(a) not in present]
        return bridge.project(bridge.seq(items), kids[0]), lifted
    return bridge.with_children(node, kids), lifted


def _filtered(bridge: CatalystBridge, conditions: list[Any], child: Any) -> Any:
    """``child`` under a Filter of ``conditions`` (none: ``child`` itself)."""
    if not conditions:
        return child
    condition = conditions[0]
    for conjunct in conditions[1:]:
        condition = bridge.static("org.apache.spark.sql.catalyst.expressions.And")(
            condition, conjunct
        )
    return bridge.static("org.apache.spark.sql.catalyst.plans.logical.Filter")(condition, child)


def _on_lifted(conjunct: Any, ids: set[int]) -> bool:
    """A comparison or IN of one lifted column with literals only."""
    if _name(conjunct) not in _PARAMETER_CONDITIONS:
        return False
    kids = seq_items(conjunct.children())
    columns = [k for k in kids if _name(k) == "AttributeReference"]
    literals = [k for k in kids if _name(k) == "Literal"]
    return (
        len(columns) == 1 and len(columns) + len(literals) == len(kids) and _id(columns[0]) in ids
    )


def _aggregate_function(output: Any) -> Any | None:
    """The function of ``Alias(AggregateExpression(f(x)))`` (or of the AggregateExpression)
    without DISTINCT or FILTER."""
    expression = output.child() if _name(output) == "Alias" else output
    if _name(expression) != "AggregateExpression" or expression.isDistinct():
        return None
    if expression.filter().isDefined():
        return None
    function = expression.aggregateFunction()
    if _name(function) not in _KEPT_FUNCTIONS | {"Average"} or function.children().size() != 1:
        return None
    return function


def seq_items(seq: Any) -> list[Any]:
    """The items of a Scala Seq (a JVM object), in order."""
    return [seq.apply(i) for i in range(seq.size())]


def _name(node: Any) -> str:
    return str(node.getClass().getSimpleName())


def _id(attribute: Any) -> int:
    return int(attribute.exprId().id())
