"""Lift: an aggregate whose parameters change from query to query is computed once at a
finer grain, and every query of it is then a roll-up of the cached groups.

An Aggregate that filters its input by parameters (ranges or IN lists on columns it does not
group by: TPC-H Q1's ship date, Q4's order date) is lifted when the QTree has seen the same
aggregate under other values of them, and of them alone (its other conditions stay in the
lifted result, so a template that varies those too would never be served by it): Criss
computes it grouped also by those columns, without their conditions, caches that, and
serves this query from it by an aggregate roll-up with the parameters as a filter on the
cached groups (``criss.qtree.subsume``). The user's action computes the lifted result, into
Spark's cache on the way to the query's own rows, and Criss writes it after the action as it
writes a first-seen result (``criss.planner.spark_cache``); where the action cannot (caching
in the action off, write-through steps on, no listener), a job of its own computes it in
place of the query's own computation of the aggregate. A lifted result that comes out
larger than ``LIFT_MAX_ROWS`` (it is then dropped), or that cannot serve the query, is not
tried again for that aggregate (QTree meta ``lift.refused:<key>:<grouping and outputs>``).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from typing import TYPE_CHECKING

from criss.planner.match import CacheView, match
from criss.planner.materialize import materialize
from criss.planner.serve import ServedReuses
from criss.planner.spark_cache import (
    builds_spark_cache_in_action,
    prepare_cached,
    release_cached,
)
from criss.planner.workspace import Workspace
from criss.policies.decisions import CACHE, Decision
from criss.policies.lifting import (
    LiftFacts,
    decide_lift,
    lift_cost_ratio,
    refused_lift,
    work_ratio,
)
from criss.qtree.plan import PlanNode, within
from criss.qtree.rewrite import Reuse, result_node, storable
from criss.qtree.subsume import (
    Derivation,
    LiftSite,
    Shape,
    aggregate_identity,
    derive,
    lift_sites,
    only_lifted_conditions,
    parameter_columns,
    subsumption_key,
    undecomposed_output,
    varies_only_in,
)
from criss.records import Served
from criss.tables import table_rows

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from criss.bridge.spark_cache import CachedResult
    from criss.policies.decisions import CachingRules
    from criss.qtree.tree import NodeStats, QTree

log = logging.getLogger("criss")

LIFT_REFUSED = "lift.refused:"
#: A lifted aggregate larger than this is dropped and not tried again.
LIFT_MAX_ROWS = 200_000
#: Lifting multiplies an aggregate's groups by the values each lifted column it does not
#: group by already takes in each group (a date column: hundreds to thousands). An aggregate
#: whose measured groups times ``LIFT_GROWTH`` per such column exceed ``LIFT_MAX_ROWS`` is
#: not lifted: the lifted result would be refused, after a job over the unfiltered input
#: (TPC-H Q10 at SF 1: 12 s and 190 MB for 37,047 groups; Q6: 5.5 s for one group over
#: three columns).
LIFT_GROWTH = 100
#: Operators that run fused into a scan, join or aggregate next to them (whole-stage code
#: generation): they weigh nothing of their own in a lift's ratio of rows.
_FUSED = ("Filter", "Project")


def lift(work: Workspace, view: CacheView, served: ServedReuses, rules: CachingRules) -> None:
    """Lift the aggregates of this query that qualify, serving each from its lifted result
    (added to ``served``)."""
    options = work.session.options
    if options.reuse_scope != "operators" or options.lift_aggregates == "off":
        return
    for node in highest_outside(work.matched.tree, served, lambda n: n.op == "Aggregate"):
        done = _lift_one(work, view, node, rules, _served_below(node, served))
        if done is not None:
            served[node.path] = done


def highest_outside(
    tree: PlanNode, served: ServedReuses, wanted: Callable[[PlanNode], bool]
) -> list[PlanNode]:
    """The highest operators ``wanted`` accepts outside the served subtrees (one served
    from a finer result serves what is under it too)."""

    def visit(node: PlanNode):
        if within(node.path, served):
            return
        if storable(node) and wanted(node):
            yield node
            return
        for child in node.children:
            yield from visit(child)

    return list(visit(tree))


def _served_below(node: PlanNode, served: ServedReuses) -> list[tuple[int, ...]]:
    """The highest subtrees under ``node`` that the cache serves in this query."""
    depth = len(node.path)
    below = [p for p in served if len(p) > depth and p[:depth] == node.path]
    return [p for p in below if not any(len(q) < len(p) and p[: len(q)] == q for q in below)]


def _lift_one(
    work: Workspace,
    view: CacheView,
    node: PlanNode,
    rules: CachingRules,
    served_below: list[tuple[int, ...]],
) -> tuple[Reuse, Served] | None:
    session, qtree = work.session, work.session.qtree
    keyed = subsumption_key(node)
    columns = None if keyed is None else parameter_columns(keyed[1])
    if keyed is None or columns is None:
        return None
    key, shape = keyed
    siblings = [
        fp
        for fp, sibling in qtree.subsumers(key)
        if fp != node.fingerprint and varies_only_in(shape, sibling, columns)
    ]
    if not siblings:
        # no evidence yet that the template recurs with other values of what is lifted,
        # and only those: a lifted result keeps the query's other conditions
        return None
    refusal = LIFT_REFUSED + aggregate_identity(key, shape)
    try:
        decision = _weigh(work, node, shape, columns, served_below, siblings, refusal, rules)
    except Exception as exc:  # any type: weighing it is Criss's own; the query runs unlifted
        log.info("aggregate %s not weighed for lifting: %s", node.fingerprint[:12], exc)
        return None
    work.record.note_weighed(node, decision)
    if decision.action != CACHE:
        if decision.reason == "lift_not_decomposable":
            work.counters["lifts_not_decomposable"] += 1
        return None
    placed = serve_from_finer(
        work,
        view,
        node,
        lambda: session.bridge.lifted_aggregate(
            work.captured.node_at(node.path), lift_sites(node, columns)
        ),
        (key, shape, refusal),
        LIFT_MAX_ROWS,
    )
    if placed is None:
        return None
    if placed[1].by_action:
        work.counters["aggregates_lifted_in_action"] += 1
    work.counters["aggregates_lifted"] += 1
    _note(work, placed[0].fingerprint, decision)
    return placed


def _note(work: Workspace, fingerprint: str, decision: Decision) -> None:
    """Remember a placed lift for learning what lifts cost, once it is measured."""
    numbers = decision.numbers
    # only a lift weighed at the prior teaches it: a bound or a ratio of rows decided others
    learn = numbers.get("cost_basis") in ("measured", "estimate")
    try:
        work.session.learning.note_lift(
            fingerprint, numbers["texec"], learn=learn, rows_ratio=numbers.get("rows_ratio")
        )
    except Exception as exc:  # the lift is placed: failing to note it only costs learning
        log.info("lift of %s not noted for learning: %s", fingerprint[:12], exc)


def serve_from_finer(
    work: Workspace,
    view: CacheView,
    node: PlanNode,
    build: Callable[[], DataFrame],
    keyed: tuple[str, Shape, str],
    max_rows: int,
) -> tuple[Reuse, Served] | None:
    """Cache what ``build`` makes (a DataFrame holding ``node``'s rows and more: a lifted
    aggregate, a widened selection) and serve ``node`` from it. ``keyed``: ``node``'s
    subsumption key and shape, and the QTree meta key under which a failure, or a result
    that cannot serve or exceeds ``max_rows`` rows, is refused for good. None where it is:
    the query then runs as it would have."""
    key, shape, refusal = keyed
    pending = len(work.lease.caches)
    try:
        found = _cache_finer(work, view, build(), node, shape, key, refusal, max_rows)
        if found is None:
            return None
        fingerprint, derivation, cached = found
        _serve_finer(work, node, fingerprint, derivation, cached)
    except Exception as exc:  # any type: the query runs as it would have
        log.info("%s at %s not served from a finer result: %s", node.op, node.path, exc)
        work.session.qtree.set_meta(refusal, str(exc)[:200])
        for unused in work.lease.caches[pending:]:  # prepared, but read by nothing
            release_cached(unused)
        del work.lease.caches[pending:]
        return None
    entry = view.entries.get(fingerprint)
    total = entry.num_partitions if entry is not None else 0
    return Reuse(node.path, fingerprint, derivation.rule, derivation=derivation), Served(
        0, total, total, 0, by_action=cached is not None
    )


def _weigh(
    work: Workspace,
    node: PlanNode,
    shape: Shape,
    columns: tuple[str, ...],
    served_below: list[tuple[int, ...]],
    siblings: list[str],
    refusal: str,
    rules: CachingRules,
) -> Decision:
    """Whether lifting ``node`` (of ``shape``) over ``columns`` pays, from what its template
    measured under the other values (``siblings``) less the subtrees the cache serves under
    it (``served_below``), and what earlier lifts cost."""
    qtree, learning = work.session.qtree, work.session.learning
    refused = qtree.meta(refusal)
    if refused is not None:
        return refused_lift("lift_refused", why=refused)
    undecomposed = undecomposed_output(shape)
    if undecomposed is not None:  # it recurs under other values, but cannot be rolled up
        return refused_lift("lift_not_decomposable", why=undecomposed)
    measured = {fp: s for fp, s in qtree.get_many(siblings).items() if s.texec and s.size_bytes}
    texecs = [_texec_now(qtree, fp, s.texec, node, served_below) for fp, s in measured.items()]
    if not texecs or max(texecs) < rules.min_texec:
        texec = max(texecs, default=0.0)
        return refused_lift("lift_cheap", texec=texec, min_texec=rules.min_texec)
    groups = max(s.rows or 0 for s in measured.values())
    new_columns = len([c for c in columns if c not in shape.grouping])
    growth = LIFT_GROWTH**new_columns
    if groups * growth > LIFT_MAX_ROWS:
        why = _too_large(groups, new_columns)
        qtree.set_meta(refusal, why)
        return refused_lift("lift_too_large", why=why)
    try:
        sites = lift_sites(node, columns)
    except LookupError as exc:  # a condition lies where its column does not reach the top
        qtree.set_meta(refusal, str(exc)[:200])
        return refused_lift("lift_refused", why=str(exc)[:200])
    learning.learn_lift_costs()
    ratio, source, rows_ratio, bound = _cost_ratio(work, node, sites, siblings, columns)
    lifted_rows = min(groups * growth, LIFT_MAX_ROWS)
    decision = decide_lift(
        LiftFacts(
            texec=sum(texecs) / len(texecs),
            parameter_values=len(siblings),
            expected_values=learning.expected_parameter_values(len(siblings) + 1, node.fingerprint),
            cost_ratio=ratio,
            cost_source=source,
            lifted_bytes=_lifted_bytes(work, node, sites, lifted_rows),
            bandwidth=rules.load_bandwidth,
            fixed_seconds=rules.stage_seconds,
            write_bandwidth=rules.store_bandwidth,
            lifted_rows=lifted_rows,
            rows_ratio=rows_ratio,
            growth_bound=bound,
        )
    )
    if decision.action != CACHE and work.session.options.lift_aggregates == "eager":
        return Decision(CACHE, "lift_eager", decision.numbers, decision.source)
    return decision


def _too_large(groups: int, new_columns: int) -> str:
    return (
        f"too large: {groups:,} groups measured under other parameters, "
        f"x{LIFT_GROWTH} for each of {new_columns} lifted columns > {LIFT_MAX_ROWS:,} rows"
    )


def _texec_now(
    qtree: QTree, sibling: str, texec: float, node: PlanNode, served_below: list[tuple[int, ...]]
) -> float:
    """A sibling's measured Texec less that of its subtrees the cache serves in this query:
    they are read, lifted or not (TPC-H Q17's parameter-free per-part average, computed
    by its first statement: 2.6 s measured there, 0.65-0.83 s once it is served), so neither
    what a later value saves nor what lifting adds counts them."""
    depth, spared = len(node.path), 0.0
    for path in served_below:
        below = _descend(qtree, sibling, path[depth:])
        stats = None if below is None else qtree.get(below)
        if stats is not None and stats.texec:
            spared += stats.texec
    return max(texec - spared, 0.0)


def _lifted_bytes(work: Workspace, node: PlanNode, sites: list[LiftSite], rows: float) -> float:
    """Bytes of ``rows`` lifted rows: Spark's width of one at the Parquet ratio learned from
    the results written. Not a sibling's bytes per row: a small result's are mostly its
    file's own overhead (TPC-H Q5's five rows: 180 B a row, its lifted result's 10 B)."""
    width = work.session.bridge.lifted_row_width(work.captured.node_at(node.path), sites)
    return rows * width * work.session.learning.parquet_ratio


def _cost_ratio(
    work: Workspace,
    node: PlanNode,
    sites: list[LiftSite],
    siblings: list[str],
    columns: tuple[str, ...],
) -> tuple[float, str, float | None, float | None]:
    """The lifted aggregate's Texec ÷ the aggregate's and its source
    (``criss.policies.lifting.lift_cost_ratio``): the ratio of the rows its operators take
    in without and with the lifted conditions times what lifts cost beyond their rows, or
    where those rows are unknown, what the lifts so far measured; bounded by how many more
    rows the lifted filters pass. The rows are as measured in a sibling's execution, and
    the ratio of rows and the bound are returned too (None where not measured)."""
    learning, qtree = work.session.learning, work.session.qtree
    found = _site_growths(qtree, node, sites, siblings)
    bound = work_rows = None
    if found is not None:
        sibling, growths = found
        bound = math.prod(growths)
        if all(only_lifted_conditions(node, site, columns) for site in sites):
            work_rows = _work_ratio(qtree, node, sibling, sites, growths)
    prior, overhead = learning.lift_cost_ratio, learning.lift_rows_overhead
    ratio, source = lift_cost_ratio(prior, overhead, bound, work_rows)
    return ratio, source, work_rows, bound


def _site_growths(
    qtree: QTree, node: PlanNode, sites: list[LiftSite], siblings: list[str]
) -> tuple[str, list[float]] | None:
    """How many times more rows each filter holding lifted conditions passes without them
    (its rows in ÷ its rows out, at least 1), as measured in the execution of the first
    sibling that measured them all, and that sibling (None where none did)."""
    for sibling in siblings:
        growths: list[float] = []
        for relative, _ in sites:
            above = _descend(qtree, sibling, relative[:-1])
            below = [] if above is None else qtree.children(above)
            filtered = below[relative[-1]] if relative[-1] < len(below) else None
            rows_in = _input_rows(qtree, filtered, node.at(relative))
            rows_out = _output_rows(qtree, filtered, above, node.at(relative[:-1]))
            if rows_in is None or not rows_out:
                break
            growths.append(max(rows_in / rows_out, 1.0))
        else:
            return sibling, growths
    return None


def _work_ratio(
    qtree: QTree, node: PlanNode, sibling: str, sites: list[LiftSite], growths: list[float]
) -> float | None:
    """The rows the operators under ``node`` take in without the lifted conditions ÷ with
    them (``criss.policies.lifting.work_ratio``), from ``sibling``'s measured rows: a
    scan takes in its table, any other operator but a filter or projection (which run
    fused into their neighbours) the rows out of its inputs, and an operator on the path
    from a lifted filter up outputs that filter's growth times more. None where the rows
    of an input weighed are unknown."""
    rows = _measured_rows(qtree, node, sibling)
    if rows is None:
        return None
    on_path = [(path, g) for (path, _), g in zip(sites, growths, strict=True)]
    taken_in: list[tuple[float, float]] = []
    for relative in rows:
        here = node.at(relative)
        if here.op in _FUSED:
            continue
        for input_at in [(*relative, i) for i in range(len(here.children))] or [relative]:
            count = rows[input_at]
            if count is None:
                return None
            grows = math.prod(g for path, g in on_path if path[: len(input_at)] == input_at)
            taken_in.append((float(count), grows))
    return work_ratio(taken_in)


def _measured_rows(
    qtree: QTree, node: PlanNode, sibling: str
) -> dict[tuple[int, ...], int | None] | None:
    """The rows out of each operator under ``node`` as ``sibling`` (recorded for the same
    plan under other parameter values) measured them, by relative path; None where the
    QTree does not hold ``sibling``'s operators as ``node`` has them."""
    at: dict[tuple[int, ...], str] = {}
    pending = [((), sibling)]
    while pending:
        relative, fingerprint = pending.pop()
        here, children = node.at(relative), qtree.children(fingerprint)
        if len(children) != len(here.children):
            return None
        at[relative] = fingerprint
        pending.extend(((*relative, i), child) for i, child in enumerate(children))
    stats = qtree.get_many(at.values())
    rows = {r: _rows_of(node.at(r), stats.get(fp)) for r, fp in at.items()}
    for relative in sorted(rows, key=len, reverse=True):  # a Project has its input's rows
        if rows[relative] is None and node.at(relative).op == "Project":
            rows[relative] = rows.get((*relative, 0))
    for relative in sorted(rows, key=len):  # a Filter fused into a scan: the Project's
        parent = node.at(relative[:-1]) if relative else None
        if rows[relative] is None and parent is not None and parent.op == "Project":
            rows[relative] = rows[relative[:-1]]
    return rows


def _rows_of(here: PlanNode, stats: NodeStats | None) -> int | None:
    """An operator's measured rows out: recorded, or a Parquet table's for a file scan."""
    if stats is not None and stats.rows is not None:
        return stats.rows
    if not here.children:
        return table_rows(here.relation)
    return None


def _descend(qtree: QTree, fingerprint: str, relative: tuple[int, ...]) -> str | None:
    """The fingerprint at ``relative`` under a recorded operator (None if not recorded)."""
    for index in relative:
        children = qtree.children(fingerprint)
        if index >= len(children):
            return None
        fingerprint = children[index]
    return fingerprint


def _output_rows(
    qtree: QTree, filtered: str | None, above: str | None, above_here: PlanNode
) -> int | None:
    """Rows out of a recorded filter: its own, or those of the Project right above it
    (Spark plans a Filter over a scan as part of the Project above, and its rows are that
    Project's)."""
    at = [filtered, above if above_here.op == "Project" else None]
    for stats in (qtree.get(fp) for fp in at if fp is not None):
        if stats is not None and stats.rows:
            return stats.rows
    return None


def _input_rows(qtree: QTree, filtered: str | None, filter_here: PlanNode) -> int | None:
    """Rows into a filter: its table's (from the Parquet footers) when it reads one, else
    those measured for its input in the recorded query."""
    if filtered is None or not filter_here.children:
        return None
    child = filter_here.children[0]
    if not child.children:
        return table_rows(child.relation)
    children = qtree.children(filtered)
    stats = qtree.get(children[0]) if children else None
    return None if stats is None else stats.rows


def _serve_finer(
    work: Workspace,
    node: PlanNode,
    fingerprint: str,
    derivation: Derivation,
    cached: CachedResult | None,
) -> None:
    """Put in ``node``'s place its roll-up of the lifted result: from the cached files, or
    from the relation of Spark's cache the user's action fills."""
    if cached is None:
        work.place_derived(node.path, fingerprint, derivation)
        return
    work.replacements[node.path] = work.session.bridge.derived_plan(
        work.captured.node_at(node.path), cached.positional_frame(), derivation
    )


def _cache_finer(
    work, view, lifted, node, shape, key, refusal, max_rows
) -> tuple[str, Derivation, CachedResult | None] | None:
    """Cache ``lifted`` (a planned query of its own, recorded in the QTree): its
    fingerprint, how it serves ``node`` (of ``shape``), and the relation of Spark's cache the user's
    action fills with it (None: a job computed and wrote it here, where the action cannot).
    None if it cannot serve or has more than ``max_rows`` rows (meta ``refusal`` set: not
    tried again)."""
    session = work.session
    captured = session.bridge.capture(lifted)
    tree = session.canonical_tree(captured)
    top = result_node(tree)
    keyed = subsumption_key(top)
    derivation = None if keyed is None or keyed[0] != key else derive(shape, keyed[1], node)
    if derivation is None:
        session.qtree.set_meta(refusal, "cannot serve")
        return None
    sub = Workspace(
        session,
        captured,
        match(session, tree, view, record=True),
        work.record,
        work.lease,
        df=lifted,
    )
    if builds_spark_cache_in_action(session):
        # the user's action computes it on the way to this query's rows: no job of its own
        cached = prepare_cached(
            sub, top, top.path, query_result=False, max_rows=max_rows, refusal=refusal
        )
        return top.fingerprint, derivation, cached
    materialize(sub, top, query_result=False)
    work.sources.update(sub.sources)
    stats = session.qtree.get(top.fingerprint)
    if stats is not None and (stats.rows or 0) > max_rows:
        session.qtree.set_meta(refusal, "too large")
        _drop(work, top.fingerprint)
        return None
    view.is_cached(top.fingerprint)
    return top.fingerprint, derivation, None


def _drop(work: Workspace, fingerprint: str) -> None:
    """Forget a lifted result that will not serve: it only takes room."""
    work.sources.pop(fingerprint, None)
    if fingerprint in work.lease.pinned:
        work.lease.pinned.remove(fingerprint)
        work.session.cache.unpin([fingerprint])
    work.session.cache.delete(fingerprint)
