"""A DataFrame's Catalyst plans by phase, and plan comparisons for experiments and tests.

The handles returned are JVM objects: hand them back to the bridge, never persist them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from criss.errors import BridgeError

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

PHASES = ("analyzed", "optimized")


def query_execution(df: DataFrame) -> Any:
    """``df``'s QueryExecution (Spark plans each phase lazily, once)."""
    return df._jdf.queryExecution()


def analyzed_plan(df: DataFrame) -> Any:
    """``df``'s analyzed logical plan."""
    return query_execution(df).analyzed()


def optimized_plan(df: DataFrame) -> Any:
    """``df``'s optimized logical plan."""
    return query_execution(df).optimizedPlan()


def executed_plan(df: DataFrame) -> Any:
    """``df``'s physical plan (planning it if not done yet; nothing runs)."""
    return query_execution(df).executedPlan()


def planning_phases(df: DataFrame) -> dict[str, float]:
    """Seconds Spark spent on ``df``'s own parsing, analysis, optimization and physical
    planning so far (its QueryPlanningTracker), by phase: a DataFrame Criss rebuilt has no
    parsing, and a phase Spark has not run yet is missing."""
    phases = query_execution(df).tracker().phases().iterator()
    found = {}
    while phases.hasNext():
        pair = phases.next()
        found[str(pair._1())] = pair._2().durationMs() / 1000.0
    return found


def logical_plan(df: DataFrame, phase: str) -> Any:
    """``df``'s logical plan of ``phase`` (one of ``PHASES``)."""
    if phase == "analyzed":
        return analyzed_plan(df)
    if phase == "optimized":
        return optimized_plan(df)
    raise BridgeError(f"unknown plan phase {phase!r}; use one of {PHASES}")


def canonicalized(plan: Any) -> Any:
    """``plan`` with exprIds and cosmetic differences normalized (what ``sameResult`` uses)."""
    return plan.canonicalized()


def plan_json(plan: Any) -> str:
    """Catalyst's JSON of ``plan``."""
    return str(plan.toJSON())


def tree_string(plan: Any) -> str:
    """Catalyst's indented text of ``plan``."""
    return str(plan.treeString())


def subtree_semantic_hashes(df: DataFrame, phase: str = "analyzed") -> list[int]:
    """Catalyst's semantic hash of every operator subtree of ``df``'s plan, in pre-order.

    Equal hashes mean "same result" inside one JVM only: never persist them.
    """
    hashes: list[int] = []
    stack = [logical_plan(df, phase)]
    while stack:
        node = stack.pop()
        hashes.append(int(node.semanticHash()))
        children = node.children()
        stack.extend(children.apply(i) for i in reversed(range(children.size())))
    return hashes


def plan_overlap(original: DataFrame, variant: DataFrame, phase: str = "analyzed") -> float:
    """Share of ``variant``'s operators whose whole subtree also occurs in ``original``'s plan."""
    seen = set(subtree_semantic_hashes(original, phase))
    mine = subtree_semantic_hashes(variant, phase)
    return sum(h in seen for h in mine) / len(mine)


def conjuncts(condition: Any) -> list[Any]:
    """The conjuncts of a JVM condition (its ANDs taken apart)."""
    if str(condition.getClass().getSimpleName()) == "And":
        return conjuncts(condition.left()) + conjuncts(condition.right())
    return [condition]
