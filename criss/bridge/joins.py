"""Join access: a plan's Join operators in plain Python, and their inputs as DataFrames
that join optimizations (``criss.joins``) rebuild the plan from."""

from __future__ import annotations

import json
import re
from functools import cached_property
from typing import TYPE_CHECKING, Any

from criss.bridge.capture import PlanNodes, file_relation_identity
from criss.bridge.plans import analyzed_plan, optimized_plan
from criss.bridge.rewrite import with_replacements
from criss.qtree.plan import Expr, expression_tree

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

    from criss.bridge.catalyst import CatalystBridge
    from criss.qtree.plan import PlanNode


#: Separates attributes in one ``mkString`` of a plan's output (never in a column name).
_ATTRIBUTE_SEPARATOR = "\u0001"
#: What follows "name#" in an attribute's toString: its exprId, then a type suffix.
_EXPR_ID = re.compile(r"(\d+)")


class JoinSide:
    """One input of a join: its output columns and what Spark estimates it to be (each
    fetched from the JVM on first use)."""

    def __init__(self, plan: Any) -> None:
        self._plan = plan

    @cached_property
    def columns(self) -> tuple[tuple[str, Any, int], ...]:
        """(name, Spark SQL type as JSON, exprId) per output attribute, in order.

        Four py4j calls whatever the width (the schema's JSON and the attributes' strings,
        "name#exprId<suffix>"), instead of three per attribute; an attribute string of
        another shape is asked for attribute by attribute.
        """
        output = self._plan.output()
        fields = json.loads(self._plan.schema().json())["fields"]
        texts = str(output.mkString(_ATTRIBUTE_SEPARATOR)).split(_ATTRIBUTE_SEPARATOR)
        ids = [_expr_id(text, f["name"]) for text, f in zip(texts, fields, strict=False)]
        if len(texts) != len(fields) or None in ids:
            return tuple(
                (str(a.name()), json.loads(a.dataType().json()), int(a.exprId().id()))
                for a in (output.apply(i) for i in range(output.size()))
            )
        return tuple((f["name"], f["type"], i) for f, i in zip(fields, ids, strict=True))

    @cached_property
    def estimated_bytes(self) -> int:
        """Catalyst's pre-execution size estimate (reliable for scans, not for joins)."""
        return int(str(self._plan.stats().sizeInBytes()))


def _expr_id(text: str, name: str) -> int | None:
    """The exprId in ``text``, an attribute's toString, if it is "``name``#<id>..."."""
    if not text.startswith(name + "#"):
        return None
    found = _EXPR_ID.match(text, len(name) + 1)
    return int(found[1]) if found else None


#: Catalyst's JoinType objects (as the plan's JSON names them) → JoinType.sql.
_JOIN_TYPES = {
    "org.apache.spark.sql.catalyst.plans.Inner$": "INNER",
    "org.apache.spark.sql.catalyst.plans.Cross$": "CROSS",
    "org.apache.spark.sql.catalyst.plans.LeftOuter$": "LEFT OUTER",
    "org.apache.spark.sql.catalyst.plans.RightOuter$": "RIGHT OUTER",
    "org.apache.spark.sql.catalyst.plans.FullOuter$": "FULL OUTER",
    "org.apache.spark.sql.catalyst.plans.LeftSemi$": "LEFT SEMI",
    "org.apache.spark.sql.catalyst.plans.LeftAnti$": "LEFT ANTI",
}


class JoinSite:
    """A Join operator of an optimized plan, in plain Python for ``qtree``/``policies``.

    Its fields are fetched from the JVM on first use (every query's joins are listed, few
    are of interest to any optimization); ``args``, the join's arguments from the plan's
    JSON when known, answer ``join_type`` without a call.
    """

    def __init__(
        self, plan: JoinPlan, path: tuple[int, ...], args: dict[str, Any] | None = None
    ) -> None:
        self.path = path
        self._plan, self._args = plan, args or {}

    @cached_property
    def _node(self) -> Any:
        return self._plan.node_at(self.path)

    @cached_property
    def join_type(self) -> str:
        """Catalyst's JoinType.sql: "INNER", "LEFT OUTER", "LEFT SEMI", ...; "EXISTENCE" for
        the ExistenceJoin of an EXISTS under OR, whose ``sql`` throws."""
        kind = self._args.get("joinType") or {}
        known = _JOIN_TYPES.get(kind.get("object", ""))
        if known is None and kind.get("product-class", "").endswith(".ExistenceJoin"):
            known = "EXISTENCE"
        if known is not None:
            return known
        jvm_type = self._node.joinType()  # arguments unknown: ask the JVM
        if str(jvm_type.getClass().getSimpleName()) == "ExistenceJoin":
            return "EXISTENCE"
        return str(jvm_type.sql())

    @cached_property
    def condition(self) -> Expr | None:
        """The join condition as a plain expression tree (non-canonical: child order and
        exprIds are the JVM's, so a path into it addresses the same JVM sub-expression)."""
        condition = self._node.condition()
        if not condition.isDefined():
            return None
        return expression_tree(json.loads(condition.get().toJSON()))

    @cached_property
    def left(self) -> JoinSide:
        return JoinSide(self._plan.node_at(self.path + (0,)))

    @cached_property
    def right(self) -> JoinSide:
        return JoinSide(self._plan.node_at(self.path + (1,)))

    def side(self, which: str) -> JoinSide:
        """The ``"left"`` or ``"right"`` input."""
        return self.left if which == "left" else self.right

    @cached_property
    def label(self) -> str:
        return str(self._node.simpleString(200))

    def __repr__(self) -> str:
        return f"JoinSite({self.path}, {self.label[:60]!r})"


class JoinPlan:
    """An optimized plan whose joins may be replaced by DataFrames built from their inputs.

    Join optimizations build a replacement with the DataFrame API over ``side()`` frames,
    whose columns keep the join inputs' exprIds, so the join's original condition
    (``condition_column()``) still resolves against them; ``replace()`` puts the
    replacements back under the original ancestors.
    """

    def __init__(
        self,
        bridge: CatalystBridge,
        df: DataFrame,
        nodes: PlanNodes | None = None,
        tree: PlanNode | None = None,
    ) -> None:
        """``nodes`` holds the optimized plan's root (a capture's, shared with it), and
        ``tree``, its plain-Python tree (same paths), lists the joins without walking the
        JVM plan."""
        self.bridge = bridge
        #: JVM nodes fetched so far, by path.
        self._nodes = nodes if nodes is not None else PlanNodes(optimized_plan(df))
        self.root = self._nodes.root
        self.sites = (
            [JoinSite(self, n.path, n.args) for n in tree.walk() if n.op == "Join"]
            if tree is not None
            else self._find_joins()
        )
        #: path → JVM plan replacing the subtree there (see ``put``).
        self.replaced: dict[tuple[int, ...], Any] = {}

    def _find_joins(self) -> list[JoinSite]:
        sites: list[JoinSite] = []
        stack: list[tuple[tuple[int, ...], Any]] = [((), self.root)]
        while stack:
            path, node = stack.pop()
            self._nodes.remember(path, node)
            kids = node.children()
            stack.extend((path + (i,), kids.apply(i)) for i in reversed(range(kids.size())))
            if node.nodeName() == "Join":
                sites.append(JoinSite(self, path))
        return sites

    def relations(self, path: tuple[int, ...], which: str) -> list[dict[str, Any]]:
        """Identities (with fresh file listings) of the file relations under one join input.

        Key artifacts built from an input (key sets, filters, indexes) by these, so an
        artifact is never served for files that have since changed.
        """
        join = self.node_at(path)
        leaves = (join.left() if which == "left" else join.right()).collectLeaves()
        found = (
            file_relation_identity(leaf)
            for leaf in (leaves.apply(i) for i in range(leaves.size()))
            if leaf.getClass().getSimpleName() == "LogicalRelation"
        )
        return [identity for identity in found if identity is not None]

    def node_at(self, path: tuple[int, ...]) -> Any:
        """The original plan's JVM node at ``path`` (replacements do not change it)."""
        return self._nodes.at(path)

    def side(self, path: tuple[int, ...], which: str) -> DataFrame:
        """The join's ``left`` or ``right`` input as a DataFrame (same exprIds), including
        any replacement already ``put`` below it."""
        child = path + ((0,) if which == "left" else (1,))
        return self.bridge.dataframe_of(self._rebuild(child))

    def condition_column(self, path: tuple[int, ...], expr_path: tuple[int, ...] = ()) -> Column:
        """The join condition, or its sub-expression at ``expr_path``, as a Column."""
        return self.bridge.column(self.condition_expression(path, expr_path))

    def condition_expression(self, path: tuple[int, ...], expr_path: tuple[int, ...] = ()) -> Any:
        """The join condition's JVM sub-expression at ``expr_path`` (the whole condition
        for ``()``)."""
        expr = self.node_at(path).condition().get()
        for index in expr_path:
            expr = expr.children().apply(index)
        return expr

    def attribute_column(self, path: tuple[int, ...], which: str, index: int) -> Column:
        """Output attribute ``index`` of the join's ``which`` input, as a Column."""
        join = self.node_at(path)
        side = join.left() if which == "left" else join.right()
        return self.bridge.column(side.output().apply(index))

    def put(self, path: tuple[int, ...], frame: DataFrame) -> None:
        """Replace the subtree at ``path`` by ``frame``.

        ``frame`` must output every attribute of the subtree it replaces (same exprIds;
        extra columns are dropped by a Project of the original output), so ancestors and
        their conditions still resolve.
        """
        original = self.node_at(path)
        self.replaced[path] = self.bridge.project(original.output(), analyzed_plan(frame))

    def result(self) -> DataFrame:
        """The whole plan with every replacement in place."""
        return self.bridge.dataframe_of(self._rebuild(()))

    def _rebuild(self, at: tuple[int, ...]) -> Any:
        return with_replacements(self.bridge, self._nodes, self.replaced, at)


def operator_names(plan: JoinPlan, path: tuple[int, ...]) -> list[str]:
    """Class simple names of the operators from the root down to ``path`` (inclusive)."""
    node, names = plan.root, [str(plan.root.getClass().getSimpleName())]
    for index in path:
        node = node.children().apply(index)
        names.append(str(node.getClass().getSimpleName()))
    return names
