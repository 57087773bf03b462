"""Patterns for filter-based join optimizations: equi-join keys and star (LIP) filters.

Pure functions over the plain expression trees the bridge hands over (``qtree.plan.Expr``
with the JVM's child order, so an expression path found here addresses the same JVM
sub-expression). Nothing here knows Spark: the bridge turns paths back into Columns.

>>> from criss.qtree.plan import Expr
>>> a = Expr("x.AttributeReference", (("exprId", (("id", 1),)),), ())
>>> b = Expr("x.AttributeReference", (("exprId", (("id", 2),)),), ())
>>> equi_keys(Expr("x.EqualTo", (), (b, a)), {1}, {2})
(EquiKey(left=(1,), right=(0,)),)
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from criss.qtree.plan import Expr, PlanNode
from criss.qtree.rewrite import scan_only

#: Expression classes whose value is not a function of their inputs: never filter on them.
NONDETERMINISTIC = frozenset(
    {"Rand", "Randn", "Uuid", "Shuffle", "MonotonicallyIncreasingID", "SparkPartitionID"}
)
#: Operators a fact table's rows may pass between its scan and a join above without the
#: join's key filter changing the result when applied at the scan.
TRANSPARENT = frozenset({"Project", "Filter"})

Path = tuple[int, ...]


@dataclass(frozen=True)
class EquiKey:
    """One ``a = b`` conjunct of a join condition: the path (inside the condition) of the
    operand over the left input and of the operand over the right input."""

    left: Path
    right: Path


def conjuncts(expr: Expr, path: Path = ()) -> Iterator[tuple[Path, Expr]]:
    """The conjuncts of ``expr`` (``And`` split recursively) with their paths."""
    if expr.cls.endswith(".And") or expr.cls == "And":
        for i, child in enumerate(expr.children):
            yield from conjuncts(child, path + (i,))
    else:
        yield path, expr


def attribute_ids(expr: Expr) -> set[int]:
    """exprIds of every attribute referenced by ``expr``."""
    found: set[int] = set()
    stack = [expr]
    while stack:
        node = stack.pop()
        if node.cls.endswith("AttributeReference"):
            found.add(int(dict(dict(node.fields)["exprId"])["id"]))
        stack.extend(node.children)
    return found


def deterministic(expr: Expr) -> bool:
    return all(n.cls.rsplit(".", 1)[-1] not in NONDETERMINISTIC for n in _walk(expr))


def _walk(expr: Expr) -> Iterator[Expr]:
    yield expr
    for child in expr.children:
        yield from _walk(child)


def has_equality(condition: Expr | None) -> bool:
    """Whether ``condition`` has an ``EqualTo`` conjunct (cheap, before sides are known)."""
    if condition is None:
        return False
    if condition.cls.endswith(".And") or condition.cls == "And":
        return any(has_equality(c) for c in condition.children)
    return condition.cls.endswith(".EqualTo") or condition.cls == "EqualTo"


def equi_keys(
    condition: Expr | None, left_ids: set[int], right_ids: set[int]
) -> tuple[EquiKey, ...]:
    """The ``EqualTo`` conjuncts comparing an expression over the left input only with one
    over the right input only (NULL never equals anything, so rows with a NULL key never
    match: a key filter may drop them). ``<=>`` and other conjuncts are left out: a key
    filter built from the equi-keys alone keeps a superset of the matching rows."""
    if condition is None:
        return ()
    keys = []
    for path, expr in conjuncts(condition):
        if not expr.cls.endswith(".EqualTo") and expr.cls != "EqualTo":
            continue
        if not deterministic(expr):
            continue
        ids = [attribute_ids(c) for c in expr.children]
        if not ids[0] or not ids[1]:
            continue
        if ids[0] <= left_ids and ids[1] <= right_ids:
            keys.append(EquiKey(path + (0,), path + (1,)))
        elif ids[0] <= right_ids and ids[1] <= left_ids:
            keys.append(EquiKey(path + (1,), path + (0,)))
    return tuple(keys)


@dataclass(frozen=True)
class Ancestor:
    """One operator above a join input, as the star search needs it."""

    op: str  # Catalyst class simple name: "Join", "Project", "Filter", ...
    path: Path
    join_type: str | None = None
    condition: Expr | None = None
    left_ids: frozenset[int] = frozenset()
    right_ids: frozenset[int] = frozenset()


@dataclass(frozen=True)
class StarFilter:
    """A key filter for the fact input: at the join ``join_path``, the ``dim_side`` input's
    values of the condition operand ``dim_operand`` restrict the fact rows whose operand
    ``fact_operand`` (an expression over the fact input's attributes only) must equal one."""

    join_path: Path
    dim_side: str
    fact_operand: Path
    dim_operand: Path


def star_filters(
    fact_path: Path, fact_ids: set[int], ancestors: Iterable[Ancestor]
) -> list[StarFilter]:
    """Every join key filter that may be applied at the fact input at ``fact_path``.

    ``ancestors`` are the operators from the fact input's parent up to the root (taken
    one at a time: those past the first it cannot pass are never asked for). The walk
    goes up through Projects, Filters and INNER joins (where dropping a fact row that has
    no partner changes nothing above) and stops at anything else. At each inner join, an
    equi-key whose one operand reads only fact attributes and whose other reads only the
    join's other input gives a filter (Lookahead Information Passing: every dimension's
    filter reaches the fact scan, not only the adjacent join's).
    """
    found: list[StarFilter] = []
    for node in ancestors:
        if node.op in TRANSPARENT:
            continue
        if node.op != "Join" or node.join_type != "INNER":
            break
        fact_left = fact_path[: len(node.path) + 1] == node.path + (0,)
        dim_side = "right" if fact_left else "left"
        for key in equi_keys(node.condition, set(node.left_ids), set(node.right_ids)):
            fact_operand, dim_operand = (
                (key.left, key.right) if fact_left else (key.right, key.left)
            )
            operand = _at(node.condition, fact_operand)
            if operand is not None and attribute_ids(operand) <= fact_ids:
                found.append(StarFilter(node.path, dim_side, fact_operand, dim_operand))
    return found


def _at(expr: Expr | None, path: Path) -> Expr | None:
    for index in path:
        if expr is None:
            return None
        expr = expr.children[index]
    return expr


def row_source(node: PlanNode) -> PlanNode:
    """The operator whose rows ``node`` passes on unchanged: ``node`` without the Projects
    on top that only select columns of a scan. Rows and key counts measured on it hold
    for every such projection (TPC-H queries read lineitem through a dozen of them)."""
    while (
        node.op == "Project"
        and len(node.children) == 1
        and all(_is_attribute(e) for e in node.args.get("projectList", []))
        and scan_only(node.children[0])
    ):
        node = node.children[0]
    return node


def key_source(node: PlanNode) -> PlanNode:
    """The operator whose measured rows and distinct keys stand for ``node``'s: the
    relation itself for a whole table (NULL keys never join and are not counted as
    distinct), else the row source."""
    if whole_table(node):
        return next(node.leaves())
    return row_source(node)


def whole_table(node: PlanNode) -> bool:
    """A scan that keeps every row of its table with non-NULL values: Projects and Filters
    whose conjuncts are all ``IsNotNull`` (Catalyst infers those from join keys) over a
    relation. Its key set is the whole key column, so as a star join's dimension it drops
    no fact row that has a partner anywhere: only filtered dimensions make LIP filters."""
    if not node.children:
        return node.op == "LogicalRelation"
    if node.op == "Filter":
        condition = node.args.get("condition")
        if not isinstance(condition, Expr) or any(
            not c.cls.endswith(".IsNotNull") for _, c in conjuncts(condition)
        ):
            return False
    elif node.op != "Project":
        return False
    return len(node.children) == 1 and whole_table(node.children[0])


def _is_attribute(expr: object) -> bool:
    return isinstance(expr, Expr) and expr.cls.endswith(".AttributeReference")


def operand_label(expr: Expr) -> str:
    """A stable text for a key expression without exprIds (same across queries and JVMs),
    to key measured statistics of that key together with its input's fingerprint."""
    name = dict(expr.fields).get("name")
    short = expr.cls.rsplit(".", 1)[-1]
    if short == "AttributeReference":
        return str(name)
    if short == "Literal":
        return repr(dict(expr.fields).get("value"))
    return f"{short}({','.join(operand_label(c) for c in expr.children)})"


def operand(expr: Expr | None, path: Path) -> Expr | None:
    """The sub-expression of ``expr`` at ``path``."""
    return _at(expr, path)
