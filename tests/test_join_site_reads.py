"""The join optimizations read a join's condition and columns from the JVM only where a
decision needs them: plans of TPC-DS size hold hundreds of joins (q14a: 330), and each
read is a py4j round trip. Pure tests over stand-in join sites that record every read."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from criss.joins import JoinContext
from criss.joins.range import RangeJoin
from criss.joins.runtime import ancestors
from criss.qtree.plan import Expr, PlanNode
from criss.qtree.star import star_filters

_CATALYST = "org.apache.spark.sql.catalyst.expressions."


def _attribute(expr_id: int) -> Expr:
    return Expr(_CATALYST + "AttributeReference", (("exprId", (("id", expr_id),)),), ())


def _equal(left: int, right: int) -> Expr:
    return Expr(_CATALYST + "EqualTo", (), (_attribute(left), _attribute(right)))


@dataclass
class _Side:
    columns: tuple[tuple[str, Any, int], ...]


@dataclass
class _Site:
    """A join site that counts the reads a real one would ask the JVM for."""

    path: tuple[int, ...]
    join_type: str
    _condition: Expr | None
    _left: tuple[int, ...]
    _right: tuple[int, ...]
    reads: list[str] = field(default_factory=list)

    @property
    def condition(self) -> Expr | None:
        self.reads.append("condition")
        return self._condition

    @property
    def left(self) -> _Side:
        self.reads.append("left")
        return _Side(tuple(("c", "long", i) for i in self._left))

    @property
    def right(self) -> _Side:
        self.reads.append("right")
        return _Side(tuple(("c", "long", i) for i in self._right))


@dataclass
class _Plan:
    sites: list[_Site]


def _node(op: str, *children: PlanNode, path: tuple[int, ...] = (), **args: Any) -> PlanNode:
    return PlanNode(op, args, tuple(children), path)


def test_the_star_search_reads_no_join_above_the_first_it_cannot_pass():
    """fact ⋈ dim1 under an INNER join with dim2, under a LEFT OUTER join, under another
    INNER join: the search stops at the outer join, whose condition and columns, and those
    of every join above it, are never read."""
    top = _Site((), "INNER", _equal(1, 9), (1, 2, 3, 4), (9,))
    outer = _Site((0,), "LEFT OUTER", _equal(1, 8), (1, 2, 3), (8,))
    middle = _Site((0, 0), "INNER", _equal(2, 7), (1, 2), (7,))
    lowest = _Site((0, 0, 0), "INNER", _equal(1, 6), (1,), (6,))
    scan = _node("LogicalRelation", path=(0, 0, 0, 0))
    tree = _node(
        "Join",
        _node(
            "Join",
            _node(
                "Join",
                _node("Join", scan, _node("LogicalRelation"), path=(0, 0, 0)),
                _node("LogicalRelation"),
                path=(0, 0),
            ),
            _node("LogicalRelation"),
            path=(0,),
        ),
        _node("LogicalRelation"),
    )
    plan = _Plan([top, outer, middle, lowest])

    found = star_filters((0, 0, 0, 0), {1, 2}, ancestors(plan, (0, 0, 0), tree))

    assert {f.join_path for f in found} == {(0, 0, 0), (0, 0)}
    assert outer.reads == [] and top.reads == []
    assert lowest.reads and middle.reads


def test_the_range_join_reads_no_condition_its_canonical_form_shows_has_no_comparison():
    """An equi-join's canonical condition holds no ordering comparison: the range join
    passes it without reading the JVM's; one that compares anywhere (Spark's canonical
    form flattens ANDs into a MultiCommutativeOp) is read and examined."""
    equi = _Site((), "INNER", _equal(1, 2), (1,), (2,))
    flattened = Expr(
        _CATALYST + "MultiCommutativeOp",
        (),
        (
            Expr(_CATALYST + "GreaterThanOrEqual", (), (_attribute(1), _attribute(2))),
            Expr(_CATALYST + "LessThanOrEqual", (), (_attribute(1), _attribute(3))),
        ),
    )
    ranged = _Site((), "INNER", None, (1,), (2, 3))
    for site, canonical, read in ((equi, _equal(1, 2), []), (ranged, flattened, ["condition"])):
        inputs = (_node("LogicalRelation"), _node("LogicalRelation"))
        tree = _node("Join", *inputs, condition=canonical)
        context = JoinContext(session=None, counters=None, tree=tree)

        assert RangeJoin().apply(_Plan([site]), site, context) == (None, None)
        assert site.reads == read
