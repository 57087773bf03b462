"""Join access: a plan's Join operators in plain Python, and their inputs as DataFrames
that join optimizations (``criss.joins``) rebuild the plan from."""

from __future__ import annotations

import json
from functools import cached_property
from typing import TYPE_CHECKING, Any

from criss.bridge.capture import file_relation_identity, node_at
from criss.bridge.plans import analyzed_plan, optimized_plan
from criss.bridge.rewrite import with_replacements
from criss.qtree.plan import Expr, expression_tree

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

    from criss.bridge.catalyst import CatalystBridge


class JoinSide:
    """One input of a join: its output columns and what Spark estimates it to be (each
    fetched from the JVM on first use)."""

    def __init__(self, plan: Any) -> None:
        self._plan = plan

    @cached_property
    def columns(self) -> tuple[tuple[str, Any, int], ...]:
        """(name, Spark SQL type as JSON, exprId) per output attribute, in order."""
        output = self._plan.output()
        return tuple(
            (str(a.name()), json.loads(a.dataType().json()), int(a.exprId().id()))
            for a in (output.apply(i) for i in range(output.size()))
        )

    @cached_property
    def estimated_bytes(self) -> int:
        """Catalyst's pre-execution size estimate (reliable for scans, not for joins)."""
        return int(str(self._plan.stats().sizeInBytes()))


class JoinSite:
    """A Join operator of an optimized plan, in plain Python for ``qtree``/``policies``.

    Its fields are fetched from the JVM on first use (every query's joins are listed, few
    are of interest to any optimization).
    """

    def __init__(self, plan: JoinPlan, path: tuple[int, ...], node: Any) -> None:
        self.path = path
        self._plan, self._node = plan, node

    @cached_property
    def join_type(self) -> str:
        """Catalyst's JoinType.sql: "INNER", "LEFT OUTER", "LEFT SEMI", ..."""
        return str(self._node.joinType().sql())

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
        return JoinSide(self._node.left())

    @cached_property
    def right(self) -> JoinSide:
        return JoinSide(self._node.right())

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

    def __init__(self, bridge: CatalystBridge, df: DataFrame, root: Any = None) -> None:
        self.bridge = bridge
        self.root = root if root is not None else optimized_plan(df)
        self.sites = self._find_joins()
        #: path → JVM plan replacing the subtree there (see ``put``).
        self.replaced: dict[tuple[int, ...], Any] = {}

    def _find_joins(self) -> list[JoinSite]:
        sites: list[JoinSite] = []
        stack: list[tuple[tuple[int, ...], Any]] = [((), self.root)]
        while stack:
            path, node = stack.pop()
            kids = node.children()
            stack.extend((path + (i,), kids.apply(i)) for i in reversed(range(kids.size())))
            if node.nodeName() == "Join":
                sites.append(JoinSite(self, path, node))
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
        return node_at(self.root, path)

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
        return with_replacements(self.bridge, self.root, self.replaced, at)


def operator_names(plan: JoinPlan, path: tuple[int, ...]) -> list[str]:
    """Class simple names of the operators from the root down to ``path`` (inclusive)."""
    node, names = plan.root, [str(plan.root.getClass().getSimpleName())]
    for index in path:
        node = node.children().apply(index)
        names.append(str(node.getClass().getSimpleName()))
    return names
