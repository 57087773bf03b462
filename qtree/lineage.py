"""Which rows an operator produces, apart from which of their columns it keeps.

Column pruning puts a different Project under each join input for every set of columns a
query reads, so two queries joining the same filtered tables differ in every operator
from the scans up, although their joins produce the same rows. A :class:`RowSignature`
names those rows without the Projects (a Project maps rows one to one), and each output
column by its *lineage*: where it comes from, not where it sits. An operator whose rows
equal a cached one's and whose columns are a subset of its columns is served by reading
the cached result and keeping those columns (the Project-subset rewrite, widened to
joins and filters).

Signatures cover Projects, Filters and Joins over any other operators, which count as
opaque inputs known by fingerprint and output width. Canonical attribute ids are
positions in an operator's input (the children's outputs, concatenated), which is what
lets a lineage be looked up here.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from criss.qtree.canonical import (
    ALIAS,
    ATTRIBUTE,
    FLIPPED_COMPARISON,
    LITERAL,
    SCOPED,
    is_commutative,
)
from criss.qtree.plan import Expr, PlanNode
from criss.qtree.predicates import MIRRORED, Atom

#: Operators a signature looks through (the rest are opaque inputs).
ROW_OPERATORS = frozenset({"Project", "Filter", "Join"})
#: Join types and which inputs' columns come out, and whether a side's values may be
#: NULL-extended (a column that can be NULL-extended is another column).
_JOIN_OUTPUT = {
    "Inner$": (True, True, False, False),
    "Cross$": (True, True, False, False),
    "LeftOuter$": (True, True, False, True),
    "RightOuter$": (True, True, True, False),
    "FullOuter$": (True, True, True, True),
    "LeftSemi$": (True, False, False, False),
    "LeftAnti$": (True, False, False, False),
}


class _Unsupported(Exception):
    """The subtree holds something a signature cannot describe."""


@dataclass(frozen=True)
class RowSignature:
    """``rows`` names the multiset of rows; ``columns`` the lineage of each output column;
    ``inputs`` the fingerprints of the opaque inputs it reads."""

    rows: str
    columns: tuple[str, ...]
    inputs: frozenset[str]


#: Signatures by fingerprint (a subtree's signature depends on nothing outside it), so
#: a query's operators share their subtrees' work; None marks an unsupported subtree.
_KNOWN: OrderedDict[str, RowSignature | None] = OrderedDict()
_KNOWN_LIMIT = 4096


def row_signature(node: PlanNode) -> RowSignature | None:
    """The signature of a Project, Filter or Join, or None (another operator, an input
    whose width or expressions it cannot follow, or one input read twice: a self-join's
    two scans would have the same column lineages)."""
    if node.op not in ROW_OPERATORS:
        return None
    try:
        return _signature(node)
    except _Unsupported:
        return None


def _signature(node: PlanNode) -> RowSignature:
    if node.op not in ROW_OPERATORS:
        return _opaque(node)
    if node.fingerprint in _KNOWN:
        known = _KNOWN[node.fingerprint]
        if known is None:
            raise _Unsupported(node.op)
        return known
    try:
        signature = _row_operator(node)
    except _Unsupported:
        _keep(_KNOWN, node.fingerprint, None)
        raise
    _keep(_KNOWN, node.fingerprint, signature)
    return signature


def _row_operator(node: PlanNode) -> RowSignature:
    if node.op == "Join":
        return _join(node)
    if len(node.children) != 1:
        raise _Unsupported(node.op)
    child = _signature(node.children[0])
    if node.op == "Project":
        columns = tuple(_column(e, child.columns) for e in node.args.get("projectList", []))
        return RowSignature(child.rows, columns, child.inputs)
    condition = _key(_expr(node.args.get("condition")), child.columns)
    return RowSignature(_digest("Filter", condition, child.rows), child.columns, child.inputs)


def _join(node: PlanNode) -> RowSignature:
    kind = _object_name(node.args.get("joinType"))
    shape = _join_shape(kind)
    if shape is None or len(node.children) != 2:
        raise _Unsupported(kind)
    keep_left, keep_right, null_left, null_right = shape
    left = _signature(node.children[0])
    right = _signature(node.children[1])
    if left.inputs & right.inputs:
        raise _Unsupported("one input read twice")
    condition = node.args.get("condition")
    inputs_columns = left.columns + right.columns
    condition_key = "" if condition is None else _key(_expr(condition), inputs_columns)
    sides = (left.rows, right.rows)
    if kind.endswith(("Inner$", "Cross$")):
        # an inner join's rows do not depend on which input is on the left (its columns'
        # order does, and columns are compared by lineage, not position)
        sides = tuple(sorted(sides))
    rows = _digest("Join", kind, condition_key, *sides)
    columns = (_nullable(left.columns, null_left) if keep_left else ()) + (
        _nullable(right.columns, null_right) if keep_right else ()
    )
    return RowSignature(rows, columns, left.inputs | right.inputs)


def _opaque(node: PlanNode) -> RowSignature:
    """An input known by fingerprint and width."""
    width = output_width(node)
    if width is None or not node.fingerprint:
        raise _Unsupported(node.op)
    rows = _digest("input", node.fingerprint)
    columns = tuple(_digest(node.fingerprint, i) for i in range(width))
    return RowSignature(rows, columns, frozenset({node.fingerprint}))


def output_width(node: PlanNode) -> int | None:
    """How many columns ``node`` outputs, from its canonical arguments (None if unknown)."""
    args, op = node.args, node.op
    if op in ("LogicalRelation", "LocalRelation"):
        return _length(args.get("output"))
    if op == "Project":
        return _length(args.get("projectList"))
    if op == "Aggregate":
        return _length(args.get("aggregateExpressions"))
    if op in (
        "Filter",
        "Sort",
        "GlobalLimit",
        "LocalLimit",
        "Sample",
        "Distinct",
        "Deduplicate",
        "RepartitionByExpression",
        "Repartition",
        "SubqueryAlias",
    ):
        return output_width(node.children[0]) if len(node.children) == 1 else None
    if op == "Window":
        child = output_width(node.children[0]) if node.children else None
        windows = _length(args.get("windowExpressions"))
        return None if child is None or windows is None else child + windows
    if op == "Union":
        return output_width(node.children[0]) if node.children else None
    if op == "Join" and len(node.children) == 2:
        shape = _join_shape(_object_name(args.get("joinType")))
        left, right = (output_width(c) for c in node.children)
        if shape is None or left is None or right is None:
            return None
        return (left if shape[0] else 0) + (right if shape[1] else 0)
    return None


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
        limit = _literal(expr) if isinstance(expr, Expr) else None
        inner = max_rows(node.children[0]) if len(node.children) == 1 else None
        if limit is not None and limit[1].isdigit():
            return int(limit[1]) if inner is None else min(int(limit[1]), inner)
        return inner
    elif op in _ROW_BOUNDED_BY_INPUT and len(node.children) == 1:
        return max_rows(node.children[0])
    return None


def join_shape(kind: str) -> tuple[bool, bool, bool, bool] | None:
    """Which inputs' columns a join of ``kind`` outputs, and which may be NULL-extended."""
    return _join_shape(kind)


def object_name(value: Any) -> str:
    """The Scala object a canonical argument names (``...Inner$``)."""
    return _object_name(value)


def _join_shape(kind: str) -> tuple[bool, bool, bool, bool] | None:
    return next((shape for name, shape in _JOIN_OUTPUT.items() if kind.endswith(name)), None)


def _length(value: Any) -> int | None:
    return len(value) if isinstance(value, list | tuple) else None


def _column(expr: Any, inputs: tuple[str, ...]) -> str:
    expr = _expr(expr)
    if expr.cls == ATTRIBUTE:
        return inputs[_ordinal(expr, inputs)]
    if expr.cls == ALIAS and len(expr.children) == 1:
        expr = expr.children[0]
        if expr.cls == ATTRIBUTE:
            return inputs[_ordinal(expr, inputs)]
    return _digest("computed", _key(expr, inputs))


def _key(expr: Expr, inputs: tuple[str, ...]) -> str:
    """``expr`` as text with every attribute replaced by its lineage: equal for the same
    computation over the same columns wherever those columns sit."""
    if any(part in expr.cls for part in SCOPED):
        raise _Unsupported(expr.cls)
    if expr.cls == ATTRIBUTE:
        return f"col:{inputs[_ordinal(expr, inputs)]}"
    children = [_key(c, inputs) for c in expr.children]
    fields = [f for f in expr.fields if f[0] not in ("exprId", "name", "num-children")]
    if is_commutative(expr.cls):
        children.sort()
    elif expr.cls in FLIPPED_COMPARISON and len(children) == 2 and children[1] < children[0]:
        return repr((FLIPPED_COMPARISON[expr.cls], fields, children[::-1]))
    return repr((expr.cls, fields, children))


def _ordinal(attribute: Expr, inputs: tuple[str, ...]) -> int:
    ordinal = attribute.attribute_id
    if not isinstance(ordinal, int) or not 0 <= ordinal < len(inputs):
        raise _Unsupported("an attribute outside the operator's input")
    return ordinal


def _nullable(columns: tuple[str, ...], extended: bool) -> tuple[str, ...]:
    return tuple(_digest("null-extended", c) for c in columns) if extended else columns


def _expr(value: Any) -> Expr:
    if not isinstance(value, Expr):
        raise _Unsupported(f"not an expression: {type(value).__name__}")
    return value


def _object_name(value: Any) -> str:
    if isinstance(value, dict):
        return str(value.get("object", value))
    if isinstance(value, tuple):  # a frozen dict
        return str(dict(value).get("object", value))
    return str(value)


def _digest(*parts: Any) -> str:
    return hashlib.sha256(repr(parts).encode()).hexdigest()[:24]


# --- filters apart: the rows before them, and the conditions they apply ----------------------

#: Catalyst's comparison classes and their operators.
_COMPARISONS = {
    "GreaterThan": ">",
    "GreaterThanOrEqual": ">=",
    "LessThan": "<",
    "LessThanOrEqual": "<=",
    "EqualTo": "=",
}
_AND = "org.apache.spark.sql.catalyst.expressions.And"
_MULTI = "org.apache.spark.sql.catalyst.expressions.MultiCommutativeOp"


@dataclass(frozen=True)
class FilteredSignature:
    """The rows of a Project, Filter or Join as ``σ[atoms](base)``: ``base`` names the rows
    with the filters that commute to the top taken out (those over inner joins, and over
    the preserved side of semi, anti and outer joins), ``atoms`` their conjuncts over column
    lineage; ``columns`` and ``inputs`` as in :class:`RowSignature`."""

    base: str
    columns: tuple[str, ...]
    atoms: frozenset[Atom]
    inputs: frozenset[str]


_FILTERED: OrderedDict[str, FilteredSignature | None] = OrderedDict()


def filtered_signature(node: PlanNode) -> FilteredSignature | None:
    """``node``'s rows with its liftable filters apart (see :class:`FilteredSignature`), or
    None where a row signature is (another operator, or one a signature cannot follow)."""
    if node.op not in ROW_OPERATORS:
        return None
    try:
        return _filtered(node)
    except _Unsupported:
        return None


def _filtered(node: PlanNode) -> FilteredSignature:
    if node.op not in ROW_OPERATORS:
        opaque = _opaque(node)
        return FilteredSignature(opaque.rows, opaque.columns, frozenset(), opaque.inputs)
    known = _FILTERED.get(node.fingerprint, False) if node.fingerprint else False
    if known is None:
        raise _Unsupported(node.op)
    if known is not False:
        return known
    try:
        found = _filtered_operator(node)
    except _Unsupported:
        _keep(_FILTERED, node.fingerprint, None)
        raise
    _keep(_FILTERED, node.fingerprint, found)
    return found


def _keep(memo: OrderedDict, fingerprint: str, value: Any) -> None:
    """Remember ``value`` (a signature, or None: unsupported) for ``fingerprint``; the
    oldest go beyond ``_KNOWN_LIMIT``."""
    if fingerprint:
        memo[fingerprint] = value
        while len(memo) > _KNOWN_LIMIT:
            memo.popitem(last=False)


def _filtered_operator(node: PlanNode) -> FilteredSignature:
    if node.op == "Join":
        return _filtered_join(node)
    if len(node.children) != 1:
        raise _Unsupported(node.op)
    child = _filtered(node.children[0])
    if node.op == "Project":
        columns = tuple(_column(e, child.columns) for e in node.args.get("projectList", []))
        return FilteredSignature(child.base, columns, child.atoms, child.inputs)
    atoms = condition_atoms(_expr(node.args.get("condition")), child.columns)
    return FilteredSignature(child.base, child.columns, child.atoms | atoms, child.inputs)


#: Join types whose rows from a side are only those matching the other side's: a NULL
#: join key there never matches, so IS NOT NULL on it removes no row of the join.
_MATCHED_ONLY = {
    "Inner$": (True, True),
    "Cross$": (True, True),
    "LeftSemi$": (True, True),
    "LeftAnti$": (False, True),
    "LeftOuter$": (False, True),
    "RightOuter$": (True, False),
}


def _filtered_join(node: PlanNode) -> FilteredSignature:
    kind = _object_name(node.args.get("joinType"))
    shape = _join_shape(kind)
    if shape is None or len(node.children) != 2:
        raise _Unsupported(kind)
    keep_left, keep_right, null_left, null_right = shape
    left, right = (_filtered(child) for child in node.children)
    if left.inputs & right.inputs:
        raise _Unsupported("one input read twice")
    condition = node.args.get("condition")
    inputs = left.columns + right.columns
    condition_key = "" if condition is None else _key(_expr(condition), inputs)
    keys = _equi_join_columns(condition, inputs)
    matched = next((m for name, m in _MATCHED_ONLY.items() if kind.endswith(name)), (False, False))
    left, right = (
        _without_key_checks(side, keys) if only else side
        for side, only in zip((left, right), matched, strict=True)
    )
    # a side whose rows can be NULL-extended (or that only decides which rows stay) keeps
    # its filters: filtering it before the join is not filtering the join's rows
    if null_left:
        left = _exact(left)
    if not keep_right or null_right:
        right = _exact(right)
    sides = (left.base, right.base)
    if kind.endswith(("Inner$", "Cross$")):
        sides = tuple(sorted(sides))
    columns = (_nullable(left.columns, null_left) if keep_left else ()) + (
        _nullable(right.columns, null_right) if keep_right else ()
    )
    return FilteredSignature(
        _digest("Join", kind, condition_key, *sides),
        columns,
        left.atoms | right.atoms,
        left.inputs | right.inputs,
    )


def _equi_join_columns(condition: Any, inputs: tuple[str, ...]) -> frozenset[str]:
    """The columns (lineage) ``condition`` compares with ``=`` to another column."""
    if not isinstance(condition, Expr):
        return frozenset()
    found = set()
    for conjunct in _conjuncts(condition):
        kids = conjunct.children
        if conjunct.cls.endswith(".EqualTo") and all(k.cls == ATTRIBUTE for k in kids):
            found.update(inputs[_ordinal(k, inputs)] for k in kids)
    return frozenset(found)


def _without_key_checks(side: FilteredSignature, keys: frozenset[str]) -> FilteredSignature:
    """``side`` without its IS NOT NULL conditions on join keys (Catalyst infers them, or
    not, depending on the rest of the plan: they do not change the join's rows)."""
    atoms = frozenset(a for a in side.atoms if not (a.kind == "notnull" and a.column in keys))
    return FilteredSignature(side.base, side.columns, atoms, side.inputs)


def _exact(side: FilteredSignature) -> FilteredSignature:
    """A join input whose filters stay in its rows: they name them with its base."""
    text = sorted(a.identity() for a in side.atoms)
    return FilteredSignature(
        _digest("exact", side.base, text), side.columns, frozenset(), side.inputs
    )


def condition_atoms(condition: Expr, inputs: tuple[str, ...]) -> frozenset[Atom]:
    """``condition``'s conjuncts as atoms over the lineage of its input's columns."""
    return frozenset(_atom(conjunct, inputs) for conjunct in _conjuncts(condition))


def _conjuncts(expr: Expr) -> list[Expr]:
    if expr.cls == _AND or (expr.cls == _MULTI and dict(expr.fields).get("opCls") == _AND):
        return [c for child in expr.children for c in _conjuncts(child)]
    return [expr]


def _atom(expr: Expr, inputs: tuple[str, ...]) -> Atom:
    name = expr.cls.rsplit(".", 1)[-1]
    kids = expr.children
    if name in _COMPARISONS and len(kids) == 2:
        op = _COMPARISONS[name]
        if kids[0].cls == LITERAL and kids[1].cls == ATTRIBUTE:
            kids, op = kids[::-1], MIRRORED[op]
        literal = _literal(kids[1]) if kids[0].cls == ATTRIBUTE else None
        if literal is not None:
            return Atom.compare(inputs[_ordinal(kids[0], inputs)], op, *literal)
    elif name == "In" and kids and kids[0].cls == ATTRIBUTE:
        literals = [_literal(k) for k in kids[1:]]
        if literals and all(lit is not None for lit in literals):
            types = {lit[0] for lit in literals}
            if len(types) == 1:
                column = inputs[_ordinal(kids[0], inputs)]
                return Atom.one_of(column, types.pop(), [lit[1] for lit in literals])
    elif name == "InSet" and len(kids) == 1 and kids[0].cls == ATTRIBUTE:
        fields = dict(kids[0].fields)
        values = dict(expr.fields).get("hset")
        if (
            isinstance(values, tuple)
            and all(isinstance(v, str) for v in values)  # a NULL (None) among them: opaque
            and isinstance(fields.get("dataType"), str)
        ):
            return Atom.one_of(inputs[_ordinal(kids[0], inputs)], fields["dataType"], values)
    elif name == "IsNotNull" and len(kids) == 1 and kids[0].cls == ATTRIBUTE:
        return Atom.not_null(inputs[_ordinal(kids[0], inputs)])
    return Atom.opaque(_key(expr, inputs), reads=(inputs[o] for o in expr.attribute_ids()))


def _literal(expr: Expr) -> tuple[str, str] | None:
    """(data type, value text) of a non-NULL literal of a simple type, else None."""
    if expr.cls != LITERAL:
        return None
    fields = dict(expr.fields)
    value, data_type = fields.get("value"), fields.get("dataType")
    if not isinstance(value, str) or not isinstance(data_type, str):
        return None
    return data_type, value


# --- aggregates: grouping, and what each output computes ----------------------------------------


def output_lineage(node: PlanNode) -> tuple[str, ...] | None:
    """The lineage of each output column of ``node``, or None where it cannot be followed."""
    try:
        return _filtered(node).columns
    except _Unsupported:
        return None
