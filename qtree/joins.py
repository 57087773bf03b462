"""Join-condition patterns the join optimizations look for: pure functions over ``Expr`` trees.

A *range join* condition says that a point lies in an interval (``p BETWEEN s AND e``,
``s <= p AND p < e`` in any strict/non-strict mix and operand order) or that two intervals
overlap (``a.s <= b.e AND b.s <= a.e``), where each bound comes from one join input only.
Both are one pattern here: every input contributes an interval ``[lo, hi]`` (a point is
``lo = hi = p``) and the condition implies ``lo_left <= hi_right AND lo_right <= hi_left``.
Whatever else the condition says stays a residual; the rewrite always keeps the whole
original condition as its final filter, so detection only has to find *implied* bounds.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from criss.qtree.plan import Expr

_CATALYST = "org.apache.spark.sql.catalyst.expressions."
_AND = _CATALYST + "And"
_ATTRIBUTE = _CATALYST + "AttributeReference"
#: comparison class → (is the left child the lower one, strict)
_COMPARISONS = {
    _CATALYST + "LessThan": (True, True),
    _CATALYST + "LessThanOrEqual": (True, False),
    _CATALYST + "GreaterThan": (False, True),
    _CATALYST + "GreaterThanOrEqual": (False, False),
}


@dataclass(frozen=True)
class Bound:
    """``lower (<|<=) upper`` found in the condition; paths address the JVM sub-expressions."""

    lower: Expr
    upper: Expr
    lower_path: tuple[int, ...]
    upper_path: tuple[int, ...]
    lower_side: str  # "left" | "right"
    strict: bool


@dataclass(frozen=True)
class Endpoint:
    """One end of a side's interval: the expression and its path inside the condition."""

    expr: Expr
    path: tuple[int, ...]


@dataclass(frozen=True)
class RangeCondition:
    """A detected range join: each side's interval ends, and whether a side is a point."""

    kind: str  # "point" (one side is a point) or "overlap"
    #: side → (lo, hi); for a point side lo and hi are the same expression.
    ends: dict[str, tuple[Endpoint, Endpoint]]
    #: the side whose lo == hi ("left"/"right"), None for an overlap of two intervals
    point_side: str | None
    #: all comparisons used (for explain)
    bounds: tuple[Bound, ...]

    @property
    def interval_side(self) -> str:
        """The side to explode into buckets: the non-point side (for overlap: right)."""
        return "right" if self.point_side == "left" else "left" if self.point_side else "right"


def conjuncts(expr: Expr, path: tuple[int, ...] = ()) -> Iterator[tuple[Expr, tuple[int, ...]]]:
    """The AND-ed parts of ``expr`` with their paths (children in JVM order)."""
    if expr.cls == _AND:
        for i, child in enumerate(expr.children):
            yield from conjuncts(child, path + (i,))
    else:
        yield expr, path


def has_comparison(condition: Expr | None) -> bool:
    """Whether any conjunct is an ordering comparison (cheap: no side columns needed)."""
    return condition is not None and any(
        part.cls in _COMPARISONS for part, _ in conjuncts(condition)
    )


def mentions_comparison(condition: Expr | None) -> bool:
    """Whether an ordering comparison is anywhere in ``condition``: a necessary condition
    for :func:`has_comparison` that also holds in Spark's canonical form, which flattens
    ANDs into a ``MultiCommutativeOp``."""
    return condition is not None and condition.mentions(lambda e: e.cls in _COMPARISONS)


def attribute_ids(expr: Expr) -> set[int]:
    """exprIds of every attribute ``expr`` references."""
    found: set[int] = set()
    stack = [expr]
    while stack:
        node = stack.pop()
        if node.cls == _ATTRIBUTE:
            found.add(int(dict(dict(node.fields)["exprId"])["id"]))
        stack.extend(node.children)
    return found


def _side_of(expr: Expr, left_ids: set[int], right_ids: set[int]) -> str | None:
    ids = attribute_ids(expr)
    if not ids:
        return None  # literals: not a bound from either input
    if ids <= left_ids:
        return "left"
    if ids <= right_ids:
        return "right"
    return None


def _is_deterministic(expr: Expr) -> bool:
    nondeterministic = ("Rand", "Randn", "Uuid", "MonotonicallyIncreasingID", "Shuffle")
    stack = [expr]
    while stack:
        node = stack.pop()
        if node.cls.rsplit(".", 1)[-1] in nondeterministic or "PythonUDF" in node.cls:
            return False
        stack.extend(node.children)
    return True


def cross_bounds(condition: Expr, left_ids: set[int], right_ids: set[int]) -> list[Bound]:
    """Comparisons in the top-level conjuncts whose operands come from different inputs."""
    bounds = []
    for part, path in conjuncts(condition):
        if part.cls not in _COMPARISONS or len(part.children) != 2:
            continue
        left_lower, strict = _COMPARISONS[part.cls]
        a, b = part.children
        sa, sb = _side_of(a, left_ids, right_ids), _side_of(b, left_ids, right_ids)
        if sa is None or sb is None or sa == sb:
            continue
        if not (_is_deterministic(a) and _is_deterministic(b)):
            continue
        lower, upper = (a, b) if left_lower else (b, a)
        lower_path, upper_path = (path + (0,), path + (1,))
        if not left_lower:
            lower_path, upper_path = upper_path, lower_path
        lower_side = sa if left_lower else sb
        bounds.append(Bound(lower, upper, lower_path, upper_path, lower_side, strict))
    return bounds


def detect_range(
    condition: Expr | None, left_ids: set[int], right_ids: set[int]
) -> RangeCondition | None:
    """The range-join pattern implied by ``condition``, or None.

    Needs one bound with the left input below and one with the right input below:
    ``lo_L <= hi_R`` and ``lo_R <= hi_L``. When both bounds share the same expression on
    one side (``s <= p AND p <= e``), that side is a point.
    """
    if condition is None:
        return None
    bounds = cross_bounds(condition, left_ids, right_ids)
    left_below = [b for b in bounds if b.lower_side == "left"]
    right_below = [b for b in bounds if b.lower_side == "right"]
    best: RangeCondition | None = None
    for lb in left_below:  # lo_L = lb.lower, hi_R = lb.upper
        for rb in right_below:  # lo_R = rb.lower, hi_L = rb.upper
            ends = {
                "left": (Endpoint(lb.lower, lb.lower_path), Endpoint(rb.upper, rb.upper_path)),
                "right": (Endpoint(rb.lower, rb.lower_path), Endpoint(lb.upper, lb.upper_path)),
            }
            point = None
            if lb.lower == rb.upper:
                point = "left"
            elif rb.lower == lb.upper:
                point = "right"
            found = RangeCondition("point" if point else "overlap", ends, point, (lb, rb))
            if best is None or (best.point_side is None and point is not None):
                best = found
    return best


def one_sided(condition: Expr | None, left_ids: set[int], right_ids: set[int]) -> bool:
    """True when the condition only bounds one input from one direction (``p >= s``)."""
    if condition is None:
        return False
    bounds = cross_bounds(condition, left_ids, right_ids)
    return bool(bounds) and len({b.lower_side for b in bounds}) == 1


def one_sided_bound(
    condition: Expr | None, left_ids: set[int], right_ids: set[int]
) -> Bound | None:
    """The first bound of a one-sided condition (see ``one_sided``); other bounds and
    conjuncts stay in the residual."""
    if not one_sided(condition, left_ids, right_ids):
        return None
    return cross_bounds(condition, left_ids, right_ids)[0]  # type: ignore[arg-type]


def equi_keys(condition: Expr | None, left_ids: set[int], right_ids: set[int]) -> bool:
    """True when a top-level conjunct equates the two inputs (Spark plans a hash/sort join)."""
    if condition is None:
        return False
    for part, _ in conjuncts(condition):
        if part.cls.rsplit(".", 1)[-1] in ("EqualTo", "EqualNullSafe") and len(part.children) == 2:
            sides = {_side_of(c, left_ids, right_ids) for c in part.children}
            if sides == {"left", "right"}:
                return True
    return False


def signature(expr: Expr, columns: dict[int, int]) -> str:
    """A stable text for ``expr`` with attributes named by their position in their input
    (``columns``: exprId → position), so the same bound over the same input gives the same
    key in every query, across JVMs (exprIds differ per query)."""
    if expr.cls == _ATTRIBUTE:
        exprid = int(dict(dict(expr.fields)["exprId"])["id"])
        return f"#{columns.get(exprid, -1)}"
    skip = {"exprId", "qualifier", "metadata", "num-children"}
    fields: list[Any] = [
        f"{k}={v}" for k, v in expr.fields if k not in skip and not isinstance(v, int)
    ]
    inner = ",".join(signature(c, columns) for c in expr.children)
    return f"{expr.cls.rsplit('.', 1)[-1]}[{';'.join(map(str, fields))}]({inner})"
