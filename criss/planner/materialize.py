"""Act, part two: write the operators the decisions chose, and learn from the job that did.

A written operator is measured exactly (the job's time, the files' bytes and rows); the
operators under it that ran in the same job get statistics read off its executed plan.
"""

from __future__ import annotations

import time
from collections.abc import Collection
from typing import TYPE_CHECKING

from criss.bridge import PartitionedResult
from criss.bridge.spark_cache import CachedResult
from criss.errors import StorageError
from criss.planner.executions import ExecutionFacts, statistics_from_metrics, wall_cache_reads
from criss.planner.workspace import Workspace
from criss.qtree.executed import PlannedQuery, planned_query, standing_in
from criss.qtree.plan import PlanNode, within
from criss.qtree.rewrite import result_node, storable
from criss.storage.catalog import EntryRecord

if TYPE_CHECKING:
    from criss.engine import CrissSession


def materialize(work: Workspace, node: PlanNode, query_result: bool = True) -> None:
    """Compute ``node``'s result partition by partition, cache it and read it in its place.
    ``query_result``: False for a result no user asked for (a lifted aggregate), whose
    size says nothing of what the user's queries return."""
    key = node.fingerprint
    if key in work.sources:
        # the same subtree occurs twice in this query: write once, read it at both places
        work.place_read(node.path, key)
        return
    session = work.session
    started = time.perf_counter()
    try:
        with work.record.timed("prepare"):  # the stages below the final one run here
            result = work.partitioned(node.path)
        indices = list(range(result.num_partitions))
        work.lease.pin(key)
        entry = _begin(work, node, result, started)
        with work.record.timed("write"):  # the final stage, written
            stored, staged = work.write(result, entry, indices, started)
        texec = time.perf_counter() - started
    finally:
        work.record.materialize_seconds += time.perf_counter() - started
    if entry is None:
        work.lease.leftover_dirs.append(staged)
    session.qtree.record_stats(key, texec=texec, size_bytes=stored.bytes, rows=stored.rows)
    session.learning.learn_scan_rate(node, texec, work.replacements)
    session.learning.learn_parquet_ratio(stored.rows, result.row_width, stored.bytes)
    scanned = query_result_input(work, node) if query_result else None
    if scanned is not None:
        session.learning.learn_result_ratio(stored.bytes, scanned)
    _learn_from_execution(work, result, node, texec)
    work.settle(key, result.schema_json, {}, stored, table=result.written_table)
    work.place_read(node.path, key)
    work.counters["operators_cached"] += 1


def _begin(
    work: Workspace, node: PlanNode, result: PartitionedResult, started: float
) -> EntryRecord | None:
    """Open the entry to write, or None if another application is reading an old one."""
    try:
        return work.session.cache.begin(
            node.fingerprint,
            op=node.op,
            schema_json=result.schema_json,
            num_partitions=result.num_partitions,
            layout=result.layout,
            texec=time.perf_counter() - started,
            total_bytes=0,
        )
    except StorageError:
        return None


def _learn_from_execution(
    work: Workspace, result: PartitionedResult, node: PlanNode, wall: float
) -> None:
    """Statistics for the operators under ``node`` that ran in its job but were not stored.

    The paper collects statistics where they are missing; writing an operator just
    to measure it costs more than it saves for big intermediates. Instead each one gets
    its rows from the executed plan's metrics, Texec as its share of the job's measured
    time (by the task time of its physical operators) and size as rows × row width ×
    the learned Parquet ratio, recorded as source "executed plan" (a real write later
    replaces them; a faster run later, the Texec). Read in the background.
    """
    wanted = computed_below(work, node)
    if not wanted:
        return
    session = work.session

    planned = planned_below(work, node)

    def read(parquet_ratio: float) -> ExecutionFacts:
        return result_facts(session, result, wanted, wall, parquet_ratio, planned)

    session.learning.harvest_later(read)


def query_result_input(work: Workspace, node: PlanNode) -> int | None:
    """The table bytes the query reads for ``node`` if it is the query's result computed
    from its tables alone, else None. A result over what the cache serves teaches no result
    bytes per input byte: its size comes from the cached rows, and its few table bytes
    (Q8 over a cached join reads only nation) once made the learned ratio 4.0, so the next
    first sights were weighed as tens of MB."""
    if node.path != result_node(work.matched.tree).path:
        return None
    if any(within(path, (node.path,)) for path in work.served):
        return None
    return node.scanned_bytes


def unmeasured(work: Workspace, fingerprints: frozenset[str]) -> frozenset[str]:
    """Those of ``fingerprints`` (matched by this query) that had no statistics."""
    observations = work.matched.observations
    return frozenset(fp for fp in fingerprints if not observations[fp].stats.has_stats)


def computed_below(work: Workspace, node: PlanNode) -> frozenset[str]:
    """The storable operators under ``node`` that this query matched and computes (not
    those the cache serves): its run measures each, again if measured before (the fastest
    run measured is kept)."""
    observations = work.matched.observations
    return frozenset(
        n.fingerprint
        for n in node.walk()
        if n is not node
        and storable(n)
        and n.fingerprint in observations
        and not within(n.path, work.served)
    )


def result_facts(
    session: CrissSession,
    result: PartitionedResult | CachedResult,
    wanted: Collection[str],
    wall: float,
    parquet_ratio: float,
    planned: PlannedQuery | None = None,
) -> ExecutionFacts:
    """Statistics of ``wanted`` operators off the physical operators ``result`` ran (those
    above what the cache served under their ``planned`` fingerprints), and its reads of
    cached entries."""
    metrics = result.operator_metrics()
    # the plan and file listings it ran with: no second optimization, no re-listing
    captured = session.bridge.capture_plan(result.optimized_plan(), refresh_listings=False)
    executed = session.canonical_tree(captured)
    renamed = None if planned is None else standing_in(executed, planned)
    read_bytes, read_seconds = wall_cache_reads(session, executed, metrics)
    return ExecutionFacts(
        statistics_from_metrics(executed, metrics, wanted, wall, parquet_ratio, renamed),
        cache_read_bytes=read_bytes,
        cache_read_seconds=read_seconds,
    )


def planned_below(work: Workspace, node: PlanNode) -> PlannedQuery | None:
    """The query's operators under ``node`` as planned and the paths the cache served
    there, from ``node`` (None when it served nothing there)."""
    return planned_query(node, work.served)
