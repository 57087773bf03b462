"""Capture: a query's plan from Spark, canonical and fingerprinted, its joins improved.

Stale entries (input files changed) are dropped first, so no later phase can serve them.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from criss.bridge import CapturedPlan
from criss.planner.match import REWRITTEN, CacheView, stale_relations
from criss.qtree.plan import PlanNode
from criss.qtree.rewrite import result_node, storable
from criss.records import QueryRecord

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from criss.engine import CrissSession

log = logging.getLogger("criss")


@dataclass(frozen=True)
class Capture:
    """The query as Criss plans it: the DataFrame (joins possibly rewritten), its JVM plan
    and its canonical tree."""

    df: DataFrame
    captured: CapturedPlan
    tree: PlanNode
    #: A dry run leaves stale entries in place: none of them may be reused.
    stale: bool = False


def capture_query(
    session: CrissSession, df: DataFrame, view: CacheView, record: QueryRecord
) -> Capture:
    with record.timed("capture"):
        captured = session.bridge.capture(df)
        tree = session.canonical_tree(captured)
        stale = stale_relations(session, tree)
    if stale and not record.dry_run:
        _invalidate(session, stale, record)
        stale = []
    # joins inside a subtree the cache serves as it is are left alone: rewriting them
    # would change its fingerprint and lose the reuse
    covered = [] if stale else [r.path for r in view.reuses(tree)]
    with record.timed("joins"):
        optimized = _optimize_joins(session, df, captured, tree, covered, record)
    if optimized is df:
        return Capture(df, captured, tree, bool(stale))
    # Criss caches and reuses the improved plan
    original = result_node(tree)
    with record.timed("capture"):
        captured = session.bridge.capture(optimized)
        rewritten = session.canonical_tree(captured)
    if not record.dry_run:
        _remember_rewrite(session, original, result_node(rewritten))
    return Capture(optimized, captured, rewritten, bool(stale))


def _invalidate(session: CrissSession, stale: list[str], record: QueryRecord) -> None:
    doomed = session.qtree.invalidate(stale)
    for fingerprint in doomed:
        session.cache.delete(fingerprint)
    record.counters["invalidated"] += len(doomed)


def _optimize_joins(
    session: CrissSession,
    df: DataFrame,
    captured: CapturedPlan,
    tree: PlanNode,
    covered: list[tuple[int, ...]],
    record: QueryRecord,
) -> Any:
    """Apply the join optimizations; a failure among them only costs their speed-up."""
    try:
        optimized, record.joins = session.joins.optimize(
            df, record.counters, captured, tree, covered
        )
        return optimized
    except Exception as exc:  # any type: the query still runs, only without the rewrite
        log.warning("join optimizations skipped for this query: %s", exc)
        record.counters["join_failures"] += 1
        return df


def _remember_rewrite(session: CrissSession, original: PlanNode, rewritten: PlanNode) -> None:
    """Note that the join optimizations turned the query whose result is ``original``
    into one whose result is ``rewritten``: the same rows, under another fingerprint."""
    if storable(original) and original.fingerprint != rewritten.fingerprint:
        session.qtree.set_meta(REWRITTEN + original.fingerprint, rewritten.fingerprint)
