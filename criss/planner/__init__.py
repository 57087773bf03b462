"""One query's trip through Criss, in phases that pass values:

capture (plan, canonical tree, join rewrites) → match (what the QTree and the cache hold)
→ serve (read matched entries, recompute their missing partitions) → decide (pure
functions in ``criss.policies.decisions``, worded by ``criss.policies.reasons``) →
write-through (the user's action will write what was chosen) or materialize (a job writes
it now) → rewrite (the plan with cached reads in place) → the query's record.

>>> record, lease = QueryRecord(sql), Lease(session.cache)              # doctest: +SKIP
>>> planned = plan_query(session, spark.sql(sql), record, lease)        # doctest: +SKIP
>>> [(o.op, o.decision.action, o.decision.reason) for o in record.operators]  # doctest: +SKIP
[('Aggregate', 'cache', 'eager_result'), ('Project', 'skip', 'table_copy_unmeasured'), ...]
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from criss.planner.capture import capture_query
from criss.planner.decide import (
    caching_rules,
    chosen_paths,
    decide_operators,
    learn_recurrences,
    learn_rereads,
    operator_records,
    rolled_up_result,
)
from criss.planner.lift import lift
from criss.planner.match import CacheView, match
from criss.planner.materialize import materialize
from criss.planner.serve import serve, would_serve
from criss.planner.spark_cache import cache_in_action
from criss.planner.widen import widen
from criss.planner.workspace import Lease, Workspace
from criss.planner.writethrough import write_through
from criss.qtree.plan import PlanNode
from criss.records import QueryRecord

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from criss.engine import CrissSession

__all__ = ["Lease", "QueryRecord", "plan_query"]


def plan_query(
    session: CrissSession, df: DataFrame, record: QueryRecord, lease: Lease
) -> DataFrame:
    """``df`` with what the cache holds read in place of the operators it serves, and what
    is worth caching cached; ``record`` gets every decision, ``lease`` what the result holds.
    """
    view = CacheView(session)
    capture = capture_query(session, df, view, record)
    record.captured = capture.captured
    with record.timed("match"):
        # statistics of this query's operators, from actions that ran before it, are in first
        session.settle_harvests({n.fingerprint for n in capture.tree.walk()}, drain=False)
        matched = match(session, capture.tree, view, record=not record.dry_run)
    rules = caching_rules(session)
    if record.dry_run:
        served = {} if capture.stale else would_serve(view, matched.reuses)
        decisions = decide_operators(matched, served, rules)
        record.operators = operator_records(
            matched, decisions, served, rules, record.counters, True
        )
        return capture.df
    work = Workspace(session, capture.captured, matched, record, lease, df=capture.df)
    session.bridge.local_read_values = session.learning.local_read_values
    with record.timed("serve"):
        served = serve(work, view)
    with record.timed("lift"):
        lift(work, view, served, rules)
        widen(work, view, served, rules)
    for values, seconds in session.bridge.take_local_reads():
        session.learning.learn_local_read(values, seconds)
    with record.timed("decide"):
        decisions = decide_operators(matched, served, rules)
        rolled_up = rolled_up_result(work, served, rules)
        learn_recurrences(session, matched)
        learn_rereads(session, matched, decisions, served)
    work.served = tuple(served)
    nodes = {node.path: node for node in matched.tree.walk()}
    chosen = [nodes[path] for path in chosen_paths(decisions)]
    if rolled_up is not None:  # the highest: cached over the roll-up that serves it
        chosen.append(rolled_up)
    if chosen:
        # the user's action computes them; else a job of Criss's own, and the record says why
        record.job_reason = _cache_by_action(work, chosen)
        if record.job_reason is not None:
            for node in chosen:
                materialize(work, node)
    record.operators = operator_records(matched, decisions, served, rules, record.counters, False)
    if not work.replacements:
        return capture.df
    with record.timed("rewrite"):
        return session.bridge.dataframe_of(
            session.bridge.substitute(capture.captured, work.replacements)
        )


def _cache_by_action(work: Workspace, chosen: list[PlanNode]) -> str | None:
    """Let the user's action compute what was chosen: through write-through steps when
    they are on, else into Spark's cache. None, or why a job must write it instead."""
    if work.session.options.write_through:
        with work.record.timed("write-through"):
            return write_through(work, chosen)
    return cache_in_action(work, chosen)
