"""Canonical form of an operator tree: an ordered tuple of small pure rules.

Catalyst's ``canonicalized`` plan already replaces attribute ids by their position in
the child's output; these rules remove what is still unstable across JVMs or
spellings of the same query (see ``RULES``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from criss.qtree.plan import Expr, PlanNode, expression_tree, is_expression_list

Rule = Callable[[PlanNode], PlanNode]

#: JSON keys that differ between JVMs or spellings but not in meaning.
NOISE_KEYS = frozenset({"jvmId", "originalRoot", "qualifier"})

_EXPR = "org.apache.spark.sql.catalyst.expressions."
COMMUTATIVE = frozenset(
    _EXPR + name
    for name in (
        "And",
        "Or",
        "EqualTo",
        "EqualNullSafe",
        "Add",
        "Multiply",
        "BitwiseAnd",
        "BitwiseOr",
        "BitwiseXor",
        "Greatest",
        "Least",
    )
)
MULTI_COMMUTATIVE = _EXPR + "MultiCommutativeOp"
FLIPPED_COMPARISON = {
    _EXPR + "GreaterThan": _EXPR + "LessThan",
    _EXPR + "LessThan": _EXPR + "GreaterThan",
    _EXPR + "GreaterThanOrEqual": _EXPR + "LessThanOrEqual",
    _EXPR + "LessThanOrEqual": _EXPR + "GreaterThanOrEqual",
}
EXISTENCE_JOIN = "org.apache.spark.sql.catalyst.plans.ExistenceJoin"
ALIAS = _EXPR + "Alias"
ATTRIBUTE = _EXPR + "AttributeReference"
PYTHON_UDF = _EXPR + "PythonUDF"
LITERAL = _EXPR + "Literal"
IN_SET = _EXPR + "InSet"
#: Parts of the class names of expressions over another plan (or a lambda's variables):
#: their attributes are not positions in the input of the operator holding them.
SCOPED = ("Subquery", "Exists", "ListQuery", "OuterReference", "LambdaVariable")

#: Operators whose own output is never worth storing (re-reading costs what they cost),
#: or whose row order matters to the query and is lost when cached partitions are read back
#: (but for the limit keeping a query's top rows, see ``mark_order_bound``).
NEVER_STORED = frozenset(
    {
        "LogicalRelation",
        "LocalRelation",
        "OneRowRelation",
        "Range",
        "Sort",
        "GlobalLimit",
        "LocalLimit",
        "Tail",
        "SubqueryAlias",
        "View",
        "ResolvedHint",
    }
)
#: Operators whose result is random even when Catalyst calls them deterministic.
NON_DETERMINISTIC_OPS = frozenset({"Sample"})
#: Leaves whose data identity Criss can establish.
KNOWN_LEAVES = frozenset({"LogicalRelation", "LocalRelation", "OneRowRelation", "Range"})


# --- rules over raw JSON values --------------------------------------------------------------


class _ArgsScan:
    """An operator's arguments without noise (``NOISE_KEYS``), and what one walk over
    them finds: the first field written as null that is not benign and the names of the
    Python UDFs, in document order. One walk, not one for each: TPC-DS plans hold ~100
    JSON values per operator, and three such walks were a third of a first sight's
    canonical form."""

    def __init__(self, op: str, args: dict[str, Any]) -> None:
        self.lost: str | None = None
        self.udfs: list[str] = []
        self.args = self._dict(args, op)

    def _dict(self, value: dict[str, Any], owner: str) -> dict[str, Any]:
        kind = value.get("class")
        if kind is not None:
            owner = kind
            if kind == PYTHON_UDF:
                self.udfs.append(str(value.get("name")))
        out = {}
        for key, item in value.items():
            if key in NOISE_KEYS:
                continue
            if item is None:
                if self.lost is None and (owner, key) not in BENIGN_NULLS:
                    self.lost = f"{owner.rsplit('.', 1)[-1]}.{key}"
            elif isinstance(item, dict):
                item = self._dict(item, owner)
            elif isinstance(item, list):
                item = self._list(item, owner)
            out[key] = item
        return out

    def _list(self, value: list[Any], owner: str) -> list[Any]:
        # a null element is not a field: nothing to name
        return [
            self._dict(item, owner)
            if isinstance(item, dict)
            else self._list(item, owner)
            if isinstance(item, list)
            else item
            for item in value
        ]


def existence_join_output(node: PlanNode) -> PlanNode:
    """An ExistenceJoin's ``exists`` column is its own new output, which Catalyst's
    canonical form leaves under the query's own attribute id (a per-JVM counter): without
    it, the same ``EXISTS ... OR ...`` query gets another fingerprint each time. Parents
    refer to the column by position, so its id and name say nothing of the computation."""
    join_type = node.args.get("joinType")
    if not isinstance(join_type, dict) or join_type.get("product-class") != EXISTENCE_JOIN:
        return node
    exists = [
        {k: v for k, v in attribute.items() if k not in ("exprId", "name")}
        if isinstance(attribute, dict)
        else attribute
        for attribute in join_type.get("exists", [])
    ]
    return node.with_(args={**node.args, "joinType": {**join_type, "exists": exists}})


#: Fields Catalyst's JSON may write as null without losing what the operator computes: a
#: join's hint (in the plan, or in a subquery's plan), a file relation's (its identity is
#: added apart, by ``relation_identity``), a NULL literal's value, a Python UDF's function
#: (known by name: only allow-listed ones are cached, see ``clean_args``). A file
#: relation inside a subquery expression is not here: the bridge fills in its identity.
BENIGN_NULLS = frozenset(
    {
        ("Join", "hint"),
        ("org.apache.spark.sql.catalyst.plans.logical.Join", "hint"),
        ("LogicalRelation", "relation"),
        (LITERAL, "value"),
        (PYTHON_UDF, "func"),
    }
)


def clean_args(node: PlanNode, allowed_udfs: Iterable[str] = ()) -> PlanNode:
    """``node`` without JVM ids, ``originalRoot`` and ``qualifier`` in its arguments, and
    never cached where they still hold a null field (a value Catalyst cannot serialise,
    e.g. a Scala UDF's function: its fingerprint would not describe it) or call a Python
    UDF that is not allow-listed (Python UDFs claim to be deterministic; only allow-listed
    ones are trusted), in one walk over them."""
    scan = _ArgsScan(node.op, node.args)
    node = node.with_(args=scan.args)
    if node.uncacheable is not None:
        return node
    if scan.lost is not None:
        return node.with_(uncacheable=f"Catalyst's plan JSON omits {scan.lost}")
    allowed = set(allowed_udfs)
    names = [name for name in scan.udfs if name not in allowed]
    if names:
        return node.with_(uncacheable=f"Python UDF {names[0]!r} is not allow-listed")
    return node


def parse_expressions(node: PlanNode) -> PlanNode:
    """Turn Catalyst's flat expression lists into :class:`Expr` trees."""
    return node.with_(args={k: _parse(v) for k, v in node.args.items()})


def _parse(value: Any) -> Any:
    if is_expression_list(value):
        return expression_tree(value)
    if isinstance(value, list):
        return [_parse(v) for v in value]
    return value


# --- rules over expressions --------------------------------------------------------------------


def expression_key(expr: Expr) -> str:
    """A stable total order on expressions, independent of any JVM hash code."""
    return repr(_expr_tuple(expr))


def _expr_tuple(expr: Expr) -> tuple:
    return (expr.cls, expr.fields, tuple(_expr_tuple(c) for c in expr.children))


def unwrap_alias(expr: Expr) -> Expr:
    """``Alias(attr)`` means ``attr``: renaming a column must not break every ancestor's match."""
    if expr.cls == ALIAS and expr.children and expr.children[0].cls == ATTRIBUTE:
        return expr.children[0]
    return expr


def drop_alias_id(expr: Expr) -> Expr:
    """Catalyst numbers aliases in order, so one unwrapped alias renumbers the rest;
    parents refer to outputs by position anyway."""
    if expr.cls == ALIAS:
        return Expr(expr.cls, tuple(f for f in expr.fields if f[0] != "exprId"), expr.children)
    return expr


def is_commutative(cls: str) -> bool:
    """Whether the operands of an expression of class ``cls`` may be put in any order."""
    return cls in COMMUTATIVE or cls == MULTI_COMMUTATIVE


def sort_commutative(expr: Expr) -> Expr:
    """Order operands of commutative operators, and comparisons, by :func:`expression_key`."""
    if is_commutative(expr.cls):
        return Expr(expr.cls, expr.fields, tuple(sorted(expr.children, key=expression_key)))
    if expr.cls in FLIPPED_COMPARISON and len(expr.children) == 2:
        left, right = expr.children
        if expression_key(left) > expression_key(right):
            return Expr(FLIPPED_COMPARISON[expr.cls], expr.fields, (right, left))
    return expr


EXPRESSION_RULES: tuple[Callable[[Expr], Expr], ...] = (
    unwrap_alias,
    drop_alias_id,
    sort_commutative,
)


def canonical_expression(expr: Expr) -> Expr:
    """Apply every expression rule bottom-up."""
    if expr.children:
        expr = Expr(expr.cls, expr.fields, tuple(map(canonical_expression, expr.children)))
    for rule in EXPRESSION_RULES:
        expr = rule(expr)
    return expr


def normalize_expressions(node: PlanNode) -> PlanNode:
    return node.with_(args={k: _map_exprs(v, canonical_expression) for k, v in node.args.items()})


def _map_exprs(value: Any, fn: Callable[[Expr], Expr]) -> Any:
    if isinstance(value, Expr):
        return fn(value)
    if isinstance(value, list):
        return [_map_exprs(v, fn) for v in value]
    return value


# --- rules over operators ----------------------------------------------------------------------


#: Keys of a relation's facts (``criss.bridge.capture``) that are not part of its identity.
NOT_IDENTITY = frozenset({"fields"})


def relation_identity(node: PlanNode) -> PlanNode:
    """A file relation is identified by format, options and its current file listing."""
    if node.op != "LogicalRelation":
        return node
    if not node.relation:
        return node.with_(uncacheable="not a file-based relation (its data version is unknown)")
    args = dict(node.args)
    # the column names only help price a scan: the columns themselves are in the output
    args["relation"] = {k: v for k, v in node.relation.items() if k not in NOT_IDENTITY}
    return node.with_(args=args)


def mark_uncacheable(node: PlanNode) -> PlanNode:
    """Non-deterministic or unknown-source subtrees are never cached and never matched."""
    reason = node.uncacheable
    if reason is None and not node.deterministic:
        reason = "non-deterministic expression"
    if reason is None and node.op in NON_DETERMINISTIC_OPS:
        reason = f"{node.op} is random (sampling)"
    if reason is None and not node.children and node.op not in KNOWN_LEAVES:
        reason = f"leaf {node.op} has no data identity Criss can check"
    if reason is None:
        reason = next(
            (f"input {c.op}: {c.uncacheable}" for c in node.children if c.uncacheable), None
        )
    return node.with_(uncacheable=reason) if reason != node.uncacheable else node


#: Applied in this order to every operator, children before parents.
RULES: tuple[Rule, ...] = (
    clean_args,
    existence_join_output,
    parse_expressions,
    normalize_expressions,
    relation_identity,
    mark_uncacheable,
)


#: Operators that hand on only a number of their input's rows (a limit, an offset): what
#: is above them never receives the rest, and they may stop reading their input early.
ROW_LIMITS = frozenset({"GlobalLimit", "LocalLimit", "Offset", "Tail"})
#: Operators that hand their input's rows on in the same order.
ORDER_PASSING = frozenset(
    {"Project", "Filter", "SubqueryAlias", "View", "GlobalLimit", "LocalLimit", "Offset"}
)
#: Why an operator above a query's final ORDER BY is not cached: a read returns its rows
#: in file order, not in the order the query promises.
ORDER_BOUND = "its rows are in the order of the query's final ORDER BY"


#: ``extra`` key of the query's top rows: the ``GlobalLimit`` of an ``ORDER BY … LIMIT``.
TOP_ROWS = "top_rows"


def top_rows_limit(node: PlanNode, sort: PlanNode) -> bool:
    """Is ``node`` ``GlobalLimit(LocalLimit(sort))`` over a global ``sort``?"""
    return (
        node.op == "GlobalLimit"
        and node.children[0].op == "LocalLimit"
        and node.children[0].children[0] is sort
        and sort.args.get("global") is True
    )


def mark_order_bound(root: PlanNode) -> PlanNode:
    """Mark the operators between the root and a final global Sort as ``ORDER_BOUND``, all
    but the limit of an ``ORDER BY … LIMIT`` right over the Sort (``GlobalLimit(LocalLimit(
    Sort))``), which is the query's top rows (``extra[TOP_ROWS]``): a cached copy of them
    serves in the Sort's input, where ordering them again costs nothing, and keeping them
    costs a write of the rows the user receives rather than of every row the sort ranked."""
    chain = [root]
    while chain[-1].op in ORDER_PASSING and len(chain[-1].children) == 1:
        chain.append(chain[-1].children[0])
    if chain[-1].op != "Sort" or len(chain) == 1:
        return root
    node = chain[-1]
    for above in reversed(chain[:-1]):
        if top_rows_limit(above, chain[-1]):
            node = above.with_(children=(node,), extra={**above.extra, TOP_ROWS: True})
            continue
        reason = above.uncacheable or ORDER_BOUND
        node = above.with_(children=(node,), uncacheable=reason)
    return node


def canonicalize(root: PlanNode, rules: Iterable[Rule] = RULES) -> PlanNode:
    """Apply ``rules`` to every operator bottom-up, then mark what a final ORDER BY binds."""
    rules = tuple(rules)

    def visit(node: PlanNode) -> PlanNode:
        node = node.with_(children=tuple(visit(c) for c in node.children))
        for rule in rules:
            node = rule(node)
        return node

    return mark_order_bound(visit(root))
