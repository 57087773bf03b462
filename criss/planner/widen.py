"""Widen: a table's selection whose conditions drift is copied once under the conditions
its statements share, and each statement of it is then filtered from that copy.

A Project or Filter over one table's scan that the QTree has seen twice before with the
same columns under other conditions, all sharing some beyond NOT NULLs
(``criss.qtree.widen``), is widened at that third sight (two statements may share a value
by chance): Criss computes it without the conditions that differ, with the columns those
read, caches that, and serves this statement from it by filter
subsumption (the statement's own conditions as the residual, ``criss.qtree.subsume``); every
later statement sharing those conditions is served the same way by the match phase. Like a
lifted aggregate (``criss.planner.lift``, whose caching it shares) the user's action
computes the copy into Spark's cache on the way to its own rows, and Criss writes it after
the action; where the action cannot, a job does.

The benefit model weighs it on the lift's terms (``criss.policies.lifting.decide_widening``):
the new parameter values expected times what reading the copy saves on the selection's
Texec, against writing the copy. The selection's Texec is what its statements measured: its
own, or, where Spark ran it inside the stage of the operator above it (a scan streamed into
a join), that operator's less its other inputs'. The copy's rows are estimated before it is
built: the earlier statement's measured rows with the conditions the copy drops divided out,
at the share of the table those keep by its files' column ranges (Parquet row groups'
minimum and maximum, ``criss.qtree.selectivity``). A copy estimated to hold more rows than
read back in less than that Texec is not built; one that comes out larger once computed
is dropped and not tried again (QTree meta ``widen.refused:<key>:<digest>``).
"""

from __future__ import annotations

import hashlib
import json
import logging
from typing import TYPE_CHECKING

from criss.planner.lift import LIFT_MAX_ROWS, highest_outside, serve_from_finer
from criss.planner.match import CacheView
from criss.planner.serve import ServedReuses
from criss.planner.workspace import Workspace
from criss.policies.decisions import CACHE, SKIP, Decision
from criss.policies.lifting import LiftFacts, decide_widening, refused_lift
from criss.policies.reasons import ESTIMATE
from criss.qtree.lineage import output_lineage
from criss.qtree.plan import PlanNode
from criss.qtree.rewrite import Reuse
from criss.qtree.selectivity import kept_share
from criss.qtree.subsume import Shape, subsumption_key
from criss.qtree.widen import (
    Widening,
    selection_sites,
    selects_one_table,
    shared_selection,
)
from criss.records import Served
from criss.tables import column_ranges, table_rows

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from criss.policies.decisions import CachingRules
    from criss.qtree.tree import QTree

log = logging.getLogger("criss")

WIDEN_REFUSED = "widen.refused:"


def widen(work: Workspace, view: CacheView, served: ServedReuses, rules: CachingRules) -> None:
    """Widen the selections of this query that qualify, serving each from its copy (added
    to ``served``)."""
    options = work.session.options
    if options.reuse_scope != "operators" or options.lift_aggregates == "off":
        return
    for node in highest_outside(work.matched.tree, served, selects_one_table):
        done = _widen_one(work, view, node, rules)
        if done is not None:
            served[node.path] = done


def _widen_one(
    work: Workspace, view: CacheView, node: PlanNode, rules: CachingRules
) -> tuple[Reuse, Served] | None:
    session = work.session
    keyed = subsumption_key(node)
    if keyed is None:
        return None
    key, shape = keyed
    siblings = [(fp, s) for fp, s in session.qtree.subsumers(key) if fp != node.fingerprint]
    widening = shared_selection(shape, siblings)
    if widening is None:
        return None  # no earlier statement of this selection under other conditions
    refusal = WIDEN_REFUSED + _identity(key, shape, widening)
    try:
        decision, max_rows, frame = _weigh(
            work, node, widening, dict(siblings).get(widening.sibling), refusal, rules
        )
    except Exception as exc:  # any type: weighing it is Criss's own; the query runs as is
        log.info("selection %s not weighed for widening: %s", node.fingerprint[:12], exc)
        return None
    work.record.note_weighed(node, decision, "selection")
    if decision.action != CACHE or frame is None:
        return None
    placed = serve_from_finer(
        work,
        view,
        node,
        lambda: frame,
        (key, shape, refusal),
        max_rows,
    )
    if placed is not None:
        work.counters["selections_widened"] += 1
    return placed


def _identity(key: str, shape: Shape, widening: Widening) -> str:
    """One widened selection: what it reads, with a digest of its columns and the shared
    conditions it keeps."""
    what = json.dumps(
        [list(shape.columns), sorted(a.to_json() for a in widening.shared)], sort_keys=True
    )
    return f"{key}:{hashlib.sha256(what.encode()).hexdigest()[:16]}"


def _weigh(
    work: Workspace,
    node: PlanNode,
    widening: Widening,
    sibling_shape: Shape | None,
    refusal: str,
    rules: CachingRules,
) -> tuple[Decision, int, DataFrame | None]:
    """Whether widening pays, the most rows its copy may have to pay (beyond them it is
    dropped once computed), and the copy's DataFrame (None where not built), from what the
    earlier statement measured."""
    session = work.session
    refused = session.qtree.meta(refusal)
    if refused is not None:
        return refused_lift("widen_refused", why=refused), 0, None
    texec = selection_texec(session.qtree, widening.sibling)
    if texec is None:
        return refused_lift("widen_unmeasured"), 0, None
    if texec < rules.min_texec:
        return refused_lift("widen_cheap", texec=texec, min_texec=rules.min_texec), 0, None
    sibling = session.qtree.get(widening.sibling)
    measured_rows = float(sibling.rows or 0) if sibling is not None else 0.0
    rows, kept = estimated_copy_rows(node, widening, sibling_shape, measured_rows)
    frame = session.bridge.widened_selection(
        work.captured.node_at(node.path), selection_sites(node, widening.columns)
    )
    row_bytes = session.bridge.row_width(frame) * session.learning.parquet_ratio
    max_rows = row_bound(texec, rules, row_bytes)
    eager = session.options.lift_aggregates == "eager"
    if rows > max_rows and not eager:  # it would be dropped once computed: not computed
        numbers = {"rows": rows, "kept_share": kept, "max_rows": max_rows, "texec": texec}
        return Decision(SKIP, "widen_too_large", numbers, ESTIMATE), 0, None
    decision = decide_widening(
        LiftFacts(
            texec=texec,
            parameter_values=1,
            expected_values=session.learning.expected_parameter_values(),
            cost_ratio=1.0,
            cost_source="scan",
            lifted_bytes=rows * row_bytes,
            bandwidth=rules.load_bandwidth,
            fixed_seconds=rules.stage_seconds,
            write_bandwidth=rules.store_bandwidth,
            lifted_rows=rows,
        )
    )
    if eager:  # whatever the numbers say, to the lift's bound
        max_rows = max(max_rows, LIFT_MAX_ROWS)
        if decision.action != CACHE:
            decision = Decision(CACHE, "widen_eager", decision.numbers, decision.source)
    decision.numbers["max_rows"] = max_rows
    decision.numbers["kept_share"] = kept
    return decision, max_rows, frame


def estimated_copy_rows(
    node: PlanNode, widening: Widening, sibling: Shape | None, sibling_rows: float
) -> tuple[float, float]:
    """The copy's rows, estimated, and the share of the table's rows the conditions it
    drops keep: the earlier statement's measured rows with those conditions divided out,
    at the share their columns' ranges in the table's files give them
    (``criss.qtree.selectivity``), at most the table's rows. Where nothing can be counted,
    the earlier statement's rows (a bound from below: the copy holds them all)."""
    scan = next(node.leaves())
    lineage = output_lineage(scan) or ()
    dropped = [a for a in (sibling.atoms if sibling else ()) if a not in widening.shared]
    ranges = {}
    for column in {a.column for a in dropped if a.kind in ("compare", "in")}:
        found = column_ranges(scan.relation, lineage.index(column)) if column in lineage else None
        if found:
            ranges[column] = found
    kept = kept_share(dropped, ranges)
    if kept <= 0:  # the earlier statement's values lie outside the files' ranges
        return sibling_rows, 1.0
    table = table_rows(scan.relation)
    estimate = sibling_rows / kept
    return (min(estimate, float(table)) if table else estimate), kept


def row_bound(texec: float, rules: CachingRules, row_bytes: float) -> int:
    """The most rows a copy may have and still be read back in less than the selection's
    Texec (Spark's fixed cost of a stage, then its bytes at the disk tier's bandwidth)."""
    return int(max(texec - rules.stage_seconds, 0.0) * rules.load_bandwidth / max(row_bytes, 1.0))


def selection_texec(qtree: QTree, fingerprint: str) -> float | None:
    """The Texec a recorded selection measured: its own, or where Spark ran it within the
    stage of the operator above it (measured as 0 or not at all), the nearest measured
    ancestor's less the Texec of that ancestor's other inputs, each measured in a stage of
    its own. None where neither is (the selection's share of a stage is not known)."""
    stats = qtree.get(fingerprint)
    if stats is not None and stats.texec:
        return stats.texec
    below = fingerprint
    for _ in range(8):  # Spark fuses a selection with a few operators above it at most
        parents = qtree.parents(below)
        if not parents:
            return None
        above = qtree.get(parents[0])
        if above is not None and above.texec:
            others = [c for c in qtree.children(parents[0]) if c != below]
            measured = qtree.get_many(others)
            if any(c not in measured or not measured[c].texec for c in others):
                return None  # another input ran in the same stage: whose time is whose?
            left = above.texec - sum(measured[c].texec or 0.0 for c in others)
            return left if left > 0 else None
        below = parents[0]
    return None
