"""What an Aggregate computes, over the lineage of its filtered input
(``criss.qtree.lineage``): its grouping columns and each output, a grouping column, an
aggregate function over one argument, or an expression (over aggregates and literals
alone, or not). Subsumption (``criss.qtree.subsume``) decides from these which cached
aggregate rolls up into which.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from criss.qtree.canonical import ALIAS, ATTRIBUTE, LITERAL
from criss.qtree.lineage import (
    _column,
    _expr,
    _filtered,
    _key,
    _object_name,
    _ordinal,
    _Unsupported,
)
from criss.qtree.plan import Expr, PlanNode
from criss.qtree.predicates import Atom


@dataclass(frozen=True)
class AggregateOutput:
    """One output of an Aggregate: a grouping column (``group``, by lineage), an aggregate
    function over one argument (``function`` Catalyst's short class name, ``argument`` the
    canonical text of its input, ``distinct``), or another expression (``expression``).
    ``text`` is the output's canonical text over the input's lineage: equal texts compute
    the same value from the same groups."""

    kind: str
    text: str
    function: str = ""
    argument: str = ""
    distinct: bool = False
    #: Of an ``expression`` over aggregate functions and literals alone: those functions,
    #: in the order a pre-order walk of it meets them (a roll-up rebuilds each, then the
    #: expression over them); empty for any other expression.
    parts: tuple[AggregateOutput, ...] = ()

    def to_json(self) -> list[Any]:
        data = [self.kind, self.text, self.function, self.argument, self.distinct]
        return data + [[p.to_json() for p in self.parts]] if self.parts else data

    @classmethod
    def from_json(cls, data: list[Any]) -> AggregateOutput:
        parts = tuple(cls.from_json(p) for p in data[5]) if len(data) > 5 else ()
        return cls(*data[:5], parts=parts)


@dataclass(frozen=True)
class AggregateSignature:
    """An Aggregate as ``γ[grouping; outputs](σ[atoms](base))``."""

    base: str
    grouping: tuple[str, ...]
    outputs: tuple[AggregateOutput, ...]
    atoms: frozenset[Atom]


_AGGREGATE_EXPRESSION = "org.apache.spark.sql.catalyst.expressions.aggregate.AggregateExpression"


def _unscaled_sum(expr: Expr) -> Expr | None:
    """``x`` of ``MakeDecimal(sum(UnscaledValue(x)))``, Catalyst's exact sum of a decimal
    of at most 8 digits, else None."""
    if not expr.cls.endswith(".MakeDecimal") or len(expr.children) != 1:
        return None
    aggregate = expr.children[0]
    if aggregate.cls != _AGGREGATE_EXPRESSION or len(aggregate.children) != 1:
        return None
    function = aggregate.children[0]
    fields = dict(aggregate.fields)
    if not function.cls.endswith(".Sum") or fields.get("isDistinct") is True:
        return None
    if len(function.children) != 1 or not function.children[0].cls.endswith(".UnscaledValue"):
        return None
    return function.children[0].children[0] if function.children[0].children else None


def aggregate_signature(node: PlanNode) -> AggregateSignature | None:
    """``node`` (an Aggregate) as grouping and outputs over its filtered input, or None."""
    if node.op != "Aggregate" or len(node.children) != 1:
        return None
    try:
        child = _filtered(node.children[0])
        grouping = tuple(
            _column(e, child.columns) for e in node.args.get("groupingExpressions", [])
        )
        outputs = tuple(
            _aggregate_output(_expr(e), child.columns)
            for e in node.args.get("aggregateExpressions", [])
        )
    except _Unsupported:
        return None
    return AggregateSignature(child.base, grouping, outputs, child.atoms)


def _aggregate_output(expr: Expr, inputs: tuple[str, ...]) -> AggregateOutput:
    if expr.cls == ALIAS and len(expr.children) == 1:
        expr = expr.children[0]
    if expr.cls == ATTRIBUTE:
        return AggregateOutput("group", inputs[_ordinal(expr, inputs)])
    text = _key(expr, inputs)
    unscaled = _unscaled_sum(expr)
    if unscaled is not None:  # Catalyst's DecimalAggregates: a short decimal summed as a long
        return AggregateOutput("aggregate", text, "Sum", _key(unscaled, inputs))
    function = _aggregate_function(expr, inputs)
    if function is not None:
        return function
    return AggregateOutput("expression", text, parts=_aggregate_parts(expr, inputs) or ())


def _aggregate_function(expr: Expr, inputs: tuple[str, ...]) -> AggregateOutput | None:
    """``expr`` as one aggregate function over one argument (no FILTER), else None."""
    if expr.cls == _AGGREGATE_EXPRESSION and len(expr.children) == 1:
        fields = dict(expr.fields)
        function = expr.children[0]
        mode = _object_name(fields.get("mode"))
        if mode.endswith("Complete$") and len(function.children) == 1 and "filter" not in fields:
            return AggregateOutput(
                "aggregate",
                _key(expr, inputs),
                function.cls.rsplit(".", 1)[-1],
                _key(function.children[0], inputs),
                fields.get("isDistinct") is True,
            )
    return None


def _aggregate_parts(expr: Expr, inputs: tuple[str, ...]) -> list[AggregateOutput] | None:
    """The aggregate functions of an expression over them and literals, in pre-order
    (``AggregateOutput.parts``); None when it reads a column outside them, or holds an
    aggregate of another form (a FILTER clause, Catalyst's exact sum of short decimals)."""
    if expr.cls == _AGGREGATE_EXPRESSION:
        function = _aggregate_function(expr, inputs)
        return None if function is None else [function]
    if not expr.children:
        return [] if expr.cls == LITERAL else None  # a column, a subquery's value
    if _unscaled_sum(expr) is not None:
        return None
    parts: list[AggregateOutput] = []
    for child in expr.children:
        found = _aggregate_parts(child, inputs)
        if found is None:
            return None
        parts += found
    return parts
