"""What an execution measured: the statistics of every operator an action ran, read off its
executed plan's SQL metrics, and what it read of cached entries. The learned rates are
:mod:`criss.planner.learning`'s.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from criss.policies.decisions import stages_of
from criss.qtree.canonical import ROW_LIMITS
from criss.qtree.executed import PlannedQuery, standing_in
from criss.qtree.plan import CACHE_SCAN, RDD_SCAN, PlanNode, within
from criss.qtree.rewrite import result_node, storable

if TYPE_CHECKING:
    from criss.bridge.listener import FinishedExecution
    from criss.engine import CrissSession

#: Operators whose output has as many rows as their single input.
_ROW_PRESERVING = ("Project",)


@dataclass
class ExecutionFacts:
    """What one execution taught: (Texec, size, rows) per operator fingerprint, and the
    run's totals behind the learned rates (absent for a run that measured no time)."""

    statistics: dict[str, tuple[float, int, int]] = field(default_factory=dict)
    seconds: float = 0.0
    compute_seconds: float = 0.0
    stages: int = 0
    scanned_bytes: int = 0
    result_bytes: int | None = None
    #: The action's write-through steps (criss.bridge.WrittenStep): what they wrote.
    written: list[Any] = field(default_factory=list)
    #: Partitions written from Spark's cache (criss.planner.spark_cache.CachedWrite).
    cached: list[Any] = field(default_factory=list)
    #: Join key measurements run after an action: meta key → {"rows", "ndv"}.
    measured: dict[str, Any] = field(default_factory=dict)
    #: Bytes of cached entries' files the action's scans read, and the seconds they took
    #: (their task time spread over the application's task slots).
    cache_read_bytes: int = 0
    cache_read_seconds: float = 0.0


def statistics_from_metrics(
    tree: PlanNode,
    metrics: dict[tuple[int, ...], Any],
    wanted: set[str],
    wall: float,
    parquet_ratio: float,
    stand_ins: Mapping[tuple[int, ...], str] | None = None,
) -> dict[str, tuple[float, int, int]]:
    """(Texec, size, rows) of the ``wanted`` operators of an executed ``tree``, by their
    fingerprint, or by the planned one of the operator they stand in for, by path
    (``stand_ins``: criss.qtree.executed.standing_in).

    Texec is the operator's subtree's share of the job's ``wall`` seconds by task time;
    size is rows × default row width × the Parquet ratio; a Project has its input's rows.
    """
    stand_ins = stand_ins or {}
    total = sum(m.task_seconds for m in metrics.values())
    if total <= 0:
        return {}

    def rows_of(n: PlanNode) -> int | None:
        m = metrics.get(n.path)
        if m is not None and m.rows is not None:
            return m.rows
        if n.op in _ROW_PRESERVING and len(n.children) == 1:
            return rows_of(n.children[0])
        return None

    estimates = {}
    for n in tree.walk():
        fingerprint = stand_ins.get(n.path, n.fingerprint)
        rows = rows_of(n) if fingerprint in wanted and n.path in metrics else None
        if rows is None:
            continue
        depth = len(n.path)
        inside = sum(m.task_seconds for p, m in metrics.items() if p[:depth] == n.path)
        size = rows * metrics[n.path].row_width * parquet_ratio
        texec = wall * inside / total
        known = estimates.get(fingerprint)
        # an operator twice in one plan (TPC-H Q11's subquery) may be computed once and
        # reused by Spark the second time: the instance that did the work counts
        if known is None or texec > known[0]:
            estimates[fingerprint] = (texec, int(size), rows)
    return estimates


def facts_from_execution(
    session: CrissSession,
    finished: FinishedExecution,
    parquet_ratio: float,
    wanted: Collection[str] | None = None,
    planned: PlannedQuery | None = None,
) -> ExecutionFacts | None:
    """What a finished action taught: statistics of every operator it computed in full
    (only of ``wanted`` fingerprints, if given; those above what the cache served under
    their ``planned`` fingerprints), and its totals for the learned rates (none where it
    read a relation of Spark's cache). None for Criss's own writes of a computed result
    (a scan of an RDD: nothing the QTree knows)."""
    captured, metrics = finished.statistics(session.bridge)
    tree = session.canonical_tree(captured)
    leaves = {leaf.op for leaf in tree.leaves()}
    if RDD_SCAN in leaves:
        return None
    partial = _read_partially(tree)
    renamed = {} if planned is None else standing_in(tree, planned)
    computed = {
        renamed.get(n.path, n.fingerprint)
        for n in tree.walk()
        if storable(n) and not within(n.path, partial)
    }
    wanted = computed if wanted is None else computed.intersection(wanted)
    statistics = statistics_from_metrics(
        tree, metrics, wanted, finished.seconds, parquet_ratio, renamed
    )
    result = result_node(tree)
    known = statistics.get(result.fingerprint)
    read_bytes, read_seconds = wall_cache_reads(session, tree, metrics)
    # a relation of Spark's cache was filled by a plan whose stages and task time this
    # one's metrics do not hold (for a first-seen result cached by its action: all of
    # them): its run teaches no per-stage seconds, which would be the whole action's
    whole = CACHE_SCAN not in leaves
    served = planned is not None  # (planned_query gives None where nothing was served)
    return ExecutionFacts(
        statistics,
        seconds=finished.seconds,
        compute_seconds=sum(m.task_seconds for m in metrics.values()) / session.bridge.parallelism,
        stages=stages_of(tree) if whole else 0,
        scanned_bytes=tree.scanned_bytes,
        # a result over cached entries says nothing of result bytes per table byte
        result_bytes=None if known is None or partial or served or read_bytes else known[1],
        cache_read_bytes=read_bytes,
        cache_read_seconds=read_seconds,
    )


def cache_read_facts(session: CrissSession, finished: FinishedExecution) -> ExecutionFacts:
    """What a finished action's reads of cached entries took, and nothing else (an action
    the cache served in full computed no operator of its own)."""
    captured, metrics = finished.statistics(session.bridge)
    tree = session.canonical_tree(captured)
    read_bytes, seconds = wall_cache_reads(session, tree, metrics)
    return ExecutionFacts(cache_read_bytes=read_bytes, cache_read_seconds=seconds)


def wall_cache_reads(
    session: CrissSession, tree: PlanNode, metrics: Mapping[tuple[int, ...], Any]
) -> tuple[int, float]:
    """``cache_reads`` of an executed plan with their task seconds spread over the task
    slots Spark had (the wall time reading took)."""
    read_bytes, seconds = cache_reads(tree, metrics, session.cache.locations())
    return read_bytes, (seconds / session.bridge.task_slots() if read_bytes else 0.0)


def cache_reads(
    tree: PlanNode, metrics: Mapping[tuple[int, ...], Any], locations: Collection[str]
) -> tuple[int, float]:
    """Bytes of cached entries' files an executed ``tree`` read and the task seconds its
    scans of them took: the scans (credited to the filter or projection over their file
    relation) whose every file relation has every root under one of the tiers'
    ``locations``. A scan Spark did not time (not vectorized) is left out."""
    nodes = {n.path: n for n in tree.walk()}
    read_bytes, seconds = 0, 0.0
    for path, found in metrics.items():
        node = nodes.get(path)
        if node is None or not found.file_bytes or found.scan_seconds <= 0:
            continue
        roots = [root for leaf in node.leaves() for root in (leaf.relation or {}).get("roots", ())]
        if roots and all(any(location in root for location in locations) for root in roots):
            read_bytes += found.file_bytes
            seconds += found.scan_seconds
    return read_bytes, seconds


def _read_partially(tree: PlanNode) -> list[tuple[int, ...]]:
    """Paths of subtrees an early-stopping limit may have read only in part (``show()``,
    ``first()``): their rows and time are not the operator's. A limit over a sort reads
    everything (the top rows are only known at the end)."""
    partial = []
    for node in tree.walk():
        if node.op in ROW_LIMITS and node.children:
            child = node.children[0]
            while child.op in ("Project", *ROW_LIMITS) and child.children:
                child = child.children[0]  # ORDER BY ... LIMIT: GlobalLimit(LocalLimit(Sort))
            if child.op != "Sort":
                partial.append(node.children[0].path)
    return partial
