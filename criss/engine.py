"""``criss.session(spark)``: the public entry point that plans queries through Criss.

A query's path: the bridge captures the optimized plan → ``qtree`` canonicalizes,
fingerprints and matches it → ``policies`` choose what to cache → ``storage`` serves
or stores results → the bridge builds the rewritten plan → Spark runs it.
"""

from __future__ import annotations

import logging
import time
import warnings
import weakref
from collections import Counter
from collections.abc import Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from criss.bridge import REMEMBERED_PLANS, CapturedPlan, CatalystBridge, PartitionedResult
from criss.config import CrissOptions
from criss.errors import CrissError, StorageError
from criss.history import COUNTERS, QueryHistory
from criss.joins import JoinChoice, JoinOptimizer
from criss.policies import get_policy
from criss.policies.selection import (
    Candidate,
    best_per_branch,
    collect_score,
    keeps_most_rows,
    measured_score,
)
from criss.qtree import QTree, canonicalize, fingerprint_tree
from criss.qtree.canonical import RULES, mark_python_udfs
from criss.qtree.plan import PlanNode
from criss.qtree.rewrite import (
    Relative,
    Reuse,
    SortKey,
    final_ordering,
    outside,
    plan_reuse,
    result_node,
    storable,
    table_copy,
    unprojected_scan,
)
from criss.qtree.tree import EXECUTED_PLAN, Observation
from criss.recent import RecentItems
from criss.space import open_cache
from criss.storage.cache import StoreResult, remove_staging, staged_bytes
from criss.storage.catalog import EntryRecord
from criss.storage.tiers import make_private_dir
from criss.tables import table_rows

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

log = logging.getLogger("criss")

#: Input bytes per second assumed before any materialization has been measured.
DEFAULT_SCAN_RATE = 64e6
#: Bytes of Parquet per byte of Spark's default row width (learned from every write; TPC-H
#: intermediates measured 0.1-0.3 at SF1).
DEFAULT_PARQUET_RATIO = 0.25
PARQUET_RATIO_MIN_BYTES = 1 << 20
#: Operators whose output has as many rows as their single input.
_ROW_PRESERVING = ("Project",)
#: QTree meta key prefix: result fingerprint of a query -> that of its join-optimized form.
REWRITTEN = "joins.rewritten:"


@dataclass
class OperatorDecision:
    """What Criss decided for one operator of one query (shown by ``explain``)."""

    path: tuple[int, ...]
    op: str
    fingerprint: str
    matched: bool = False
    #: False for an operator the QTree never holds (non-deterministic, above a final ORDER
    #: BY, over an unknown source): neither matched nor new.
    looked_up: bool = True
    reused: str | None = None
    #: How the reused entry serves the operator: exact, project-subset, exchange-repartition,
    #: join-rewrite (the result of this query as the join optimizations rewrote it).
    rule: str | None = None
    cached: str | None = None
    why_not: str | None = None
    benefit: float | None = None
    stats: str = ""
    #: Partition-level reuse, e.g. "8/8 reused" or "6/8 reused, 2 recomputed".
    partitions: str | None = None


@dataclass
class QueryRecord:
    sql: str | None
    operators: list[OperatorDecision] = field(default_factory=list)
    counters: Counter = field(default_factory=Counter)
    planning_seconds: float = 0.0
    materialize_seconds: float = 0.0
    fallback: str | None = None
    dry_run: bool = False
    #: The captured JVM plan, kept while the DataFrame lives so explain can label operators.
    captured: Any = None
    #: What each join optimization decided for each join (see criss.joins).
    joins: list[JoinChoice] = field(default_factory=list)


class CrissSession:
    """Plans queries of one SparkSession through Criss. Build it with :func:`criss.session`."""

    def __init__(self, spark: SparkSession, options: CrissOptions) -> None:
        self.spark = spark
        self.options = options
        self.home = options.home
        make_private_dir(self.home)  # catalogs and cached data are for this user only
        self.qtree = QTree(self.home / "catalog.db", timeout=options.catalog_timeout)
        self.policy = get_policy(options.policy)
        self.cache = open_cache(spark, options, self.home, self.qtree, self.policy)
        self.history = QueryHistory(self.home / "catalog.db", timeout=options.catalog_timeout)
        self.bridge = CatalystBridge(spark, local_read_bytes=options.local_read_bytes)
        self.joins = JoinOptimizer(self)
        self.counters: Counter = Counter({name: 0 for name in COUNTERS})
        self._records: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
        self._last: QueryRecord | None = None
        # the paper chooses what to cache assuming the worst case: it will sit on disk
        self.disk_bandwidth = float(self.cache.tiers["disk"].bandwidth or 1e8)
        self._scan_rate: float | None = None
        self._parquet_ratio: float | None = None
        self._harvester: ThreadPoolExecutor | None = None
        self._harvests: list[Future] = []
        #: Background seconds spent reading statistics off executed plans.
        self.harvest_seconds = 0.0
        #: memo key of a captured plan → its canonical tree (see ``canonical_tree``).
        self._canonical_trees = RecentItems(REMEMBERED_PLANS)
        self._rules = tuple(
            (lambda n: mark_python_udfs(n, options.allowed_udfs)) if r is mark_python_udfs else r
            for r in RULES
        )

    # --- public API ----------------------------------------------------------------------------

    def sql(self, query: str, *args: Any, **kwargs: Any) -> DataFrame:
        """Like ``spark.sql``, with repeated and overlapping work served from the cache."""
        df = self.spark.sql(query, *args, **kwargs)  # invalid SQL raises Spark's own error here
        return self._plan(df, sql=query)

    def dataframe(self, df: DataFrame) -> DataFrame:
        """Plan a DataFrame built with the DataFrame API through Criss."""
        return self._plan(df, sql=None)

    def explain(self, df: DataFrame) -> str:
        """Per operator: matched? reused (which entry)? cached? and why not."""
        record = self._records.get(df)
        if record is None:
            return "this DataFrame was not planned by this Criss session"
        return format_explain(record)

    def report(self) -> dict[str, Any]:
        """Counters, per-tier usage and traffic, and every entry with its bitmap (JSON-ready)."""
        self.settle_harvests()
        cache = self.cache.report()
        return {
            "counters": dict(self.counters),
            "tiers": cache["tiers"],
            "entries": cache["entries"],
            "faults": dict(self.cache.faults),
            "partitions_refused": cache["partitions_refused"],
            "qtree_operators": len(self.qtree),
            "harvest_seconds": round(self.harvest_seconds, 3),
            "policy": self.policy.name,
            "media": self.options.media,
            "granularity": self.options.granularity,
            "home": str(self.home),
        }

    def last_query_summary(self) -> dict[str, Any]:
        record = self._last
        if record is None:
            return {}
        return {
            **dict(record.counters),
            "planning_seconds": round(record.planning_seconds, 4),
            "materialize_seconds": round(record.materialize_seconds, 4),
            "fallback": record.fallback,
        }

    def clear(self, tier: str | None = None) -> None:
        """Drop every cached result and the QTree, or only what ``tier`` holds.

        Results a live DataFrame reads are kept.
        """
        if tier is not None and tier not in self.cache.tiers:
            raise StorageError(f"no tier {tier!r}; tiers: {', '.join(self.cache.tiers)}")
        if tier is None:
            self.settle_harvests()
            self.qtree.clear()
        self.cache.clear(tier)
        self.bridge.forget_reads()

    def close(self) -> None:
        self.settle_harvests()
        if self._harvester is not None:
            self._harvester.shutdown()
        self.history.close()
        self.cache.close()
        self.qtree.close()

    def __enter__(self) -> CrissSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- planning ------------------------------------------------------------------------------

    def _plan(self, df: DataFrame, sql: str | None) -> DataFrame:
        self.counters["queries"] += 1
        if not self.options.enabled:
            return df
        record = QueryRecord(sql, dry_run=self.options.dry_run)
        started = time.perf_counter()
        self.settle_harvests()
        planner = _Planner(self, df, record)
        try:
            planned = planner.run()
        except (CrissError, OSError, ValueError) as exc:
            planner.release()
            return self._fall_back(df, record, exc)
        except Exception as exc:  # a py4j/JVM failure inside Criss must not fail the query
            if type(exc).__module__.startswith(("py4j", "pyspark")):
                planner.release()
                return self._fall_back(df, record, exc)
            raise
        record.planning_seconds = time.perf_counter() - started - record.materialize_seconds
        self._finish(planned, record, planner)
        return planned

    def _fall_back(self, df: DataFrame, record: QueryRecord, exc: BaseException) -> DataFrame:
        message = f"Criss could not plan this query and runs it uncached: {exc}"
        warnings.warn(message, RuntimeWarning, stacklevel=4)
        log.warning(message)
        record.fallback = str(exc)
        self.counters["fallbacks"] += 1
        self._log(record)
        self._last = record
        self._remember(df, record)
        return df

    def _finish(self, df: DataFrame, record: QueryRecord, planner: _Planner) -> None:
        if not record.dry_run:  # a dry run's counters say what would have happened
            self.counters.update(record.counters)
        self._last = record
        self._remember(df, record)
        self._log(record)
        if planner.pinned or planner.leftover_dirs:
            # the entries (and uncached leftovers) this DataFrame reads live as long as it does
            weakref.finalize(df, planner.release)

    def _log(self, record: QueryRecord) -> None:
        if record.dry_run:
            return
        self.history.record(
            sql=record.sql,
            planning_seconds=record.planning_seconds,
            materialize_seconds=record.materialize_seconds,
            counters=dict(record.counters),
            fallback=record.fallback,
            explain=format_explain(record, labels=False),  # labels cost a py4j walk each
        )

    def _remember(self, df: DataFrame, record: QueryRecord) -> None:
        try:
            self._records[df] = record
        except TypeError:
            pass

    def canonical_tree(self, captured: CapturedPlan) -> PlanNode:
        """``captured``'s plan in canonical form with fingerprints (this session's rules);
        a repeated plan over unchanged files gets the tree computed last time."""
        key = captured.memo_key
        tree = None if key is None else self._canonical_trees.get(key)
        if tree is None:
            tree = fingerprint_tree(canonicalize(captured.tree, self._rules))
            if key is not None:
                self._canonical_trees.put(key, tree)
        return tree

    def estimated_texec(self, node: PlanNode, served: Iterable[tuple[int, ...]] = ()) -> float:
        """Seconds to compute ``node`` guessed from the table bytes it reads and the learned
        scan rate; subtrees at a path in ``served`` are read from the cache instead."""
        return node.scanned_bytes_outside(served) / self.scan_rate

    @property
    def scan_rate(self) -> float:
        if self._scan_rate is None:
            self._scan_rate = float(self.qtree.meta("scan_rate", DEFAULT_SCAN_RATE))
        return self._scan_rate

    @property
    def parquet_ratio(self) -> float:
        if self._parquet_ratio is None:
            self._parquet_ratio = float(self.qtree.meta("parquet_ratio", DEFAULT_PARQUET_RATIO))
        return self._parquet_ratio

    def learn_parquet_ratio(self, rows: int, row_width: int, size_bytes: int) -> None:
        """Blend in the Parquet bytes per default-width byte of a measured write (big
        enough that file footers do not dominate)."""
        if rows > 0 and row_width > 0 and size_bytes >= PARQUET_RATIO_MIN_BYTES:
            ratio = min(max(size_bytes / (rows * row_width), 0.02), 4.0)
            self._parquet_ratio = 0.7 * self.parquet_ratio + 0.3 * ratio
            self.qtree.set_meta("parquet_ratio", self._parquet_ratio)

    def harvest_later(self, result: PartitionedResult, wanted: set[str], wall: float) -> None:
        """Read statistics for ``wanted`` operators off ``result``'s executed plan in the
        background; ``settle_harvests`` stores them (before the next query is planned)."""
        if self._harvester is None:
            self._harvester = ThreadPoolExecutor(1, thread_name_prefix="criss-harvest")
        ratio = self.parquet_ratio
        self._harvests.append(self._harvester.submit(self._harvest, result, wanted, wall, ratio))

    def _harvest(
        self, result: PartitionedResult, wanted: set[str], wall: float, ratio: float
    ) -> tuple[dict[str, tuple[float, int, int]], float]:
        started = time.perf_counter()
        metrics = result.operator_metrics()
        executed = self.bridge.capture(result.df)
        tree = self.canonical_tree(executed)
        return statistics_from_metrics(tree, metrics, wanted, wall, ratio), (
            time.perf_counter() - started
        )

    def settle_harvests(self) -> None:
        """Store the statistics read in the background (waiting for reads still running)."""
        while self._harvests:
            future = self._harvests.pop(0)
            try:
                estimates, seconds = future.result()
            except (CrissError, OSError, ValueError) as exc:
                log.info("no statistics from an executed plan: %s", exc)
                continue
            self.qtree.record_estimates(estimates, source=EXECUTED_PLAN)
            self.counters["statistics_from_execution"] += len(estimates)
            self.harvest_seconds += seconds

    def learn_scan_rate(
        self, node: PlanNode, texec: float, served: Iterable[tuple[int, ...]] = ()
    ) -> None:
        """Blend in the input bytes per second of a measured materialization. Table bytes
        under ``served`` paths were not read (the cache stood in for them): counting them
        would inflate the rate, and every later estimate would fall below ``min_texec``."""
        scanned = node.scanned_bytes_outside(served)
        if scanned and texec > 0:
            self._scan_rate = 0.7 * self.scan_rate + 0.3 * (scanned / texec)
            self.qtree.set_meta("scan_rate", self._scan_rate)


class _Lease:
    """What one planned DataFrame holds: pinned entries and staged files the cache refused."""

    def __init__(self, cache) -> None:
        self.cache = cache
        self.pinned: list[str] = []
        self.leftover_dirs: list[str] = []

    def pin(self, key: str) -> None:
        self.cache.pin([key])
        self.pinned.append(key)

    def release(self) -> None:
        keys, self.pinned = self.pinned, []
        self.cache.unpin(keys)
        dirs, self.leftover_dirs = self.leftover_dirs, []
        for directory in dirs:
            remove_staging(directory)


class _Planner:
    """One query's trip through Criss (kept apart so the session stays small)."""

    def __init__(self, session: CrissSession, df: DataFrame, record: QueryRecord) -> None:
        self.s = session
        self.df = df
        self.record = record
        self.replacements: dict[tuple[int, ...], Any] = {}
        self.entries: dict[str, EntryRecord] = {}
        #: key → files this query reads for it, and the schema they were written with.
        self.files: dict[str, list[str]] = {}
        self.schemas: dict[str, str] = {}
        self.reuse_rules: dict[tuple[int, ...], Reuse] = {}
        self.partition_counts: dict[tuple[int, ...], _Served] = {}
        self.result_path: tuple[int, ...] | None = None
        self.lease = _Lease(session.cache)
        self.observations: dict[str, Observation] = {}
        #: The final ORDER BY over the query's result: the Sort's path and keys.
        self.ordering: tuple[tuple[int, ...], tuple[SortKey, ...]] | None = None

    @property
    def pinned(self) -> list[str]:
        return self.lease.pinned

    @property
    def leftover_dirs(self) -> list[str]:
        return self.lease.leftover_dirs

    def release(self) -> None:
        self.lease.release()

    def run(self) -> DataFrame:
        captured = self.s.bridge.capture(self.df)
        tree = self.s.canonical_tree(captured)
        if not self.record.dry_run:
            self._invalidate_stale(tree)  # before any lookup: stale entries are gone
        # joins inside a subtree the cache serves as it is are left alone: rewriting them
        # would change its fingerprint and lose the reuse
        covered = [] if self._stale(tree) else [r.path for r in self._reusable(tree)]
        optimized = self._optimize_joins(self.df, captured, tree, covered)
        if optimized is not self.df:  # Criss caches and reuses the improved plan
            original = result_node(tree)
            self.df = optimized
            captured = self.s.bridge.capture(self.df)
            tree = self.s.canonical_tree(captured)
            if not self.record.dry_run:
                self._remember_rewrite(original, result_node(tree))
        self.record.captured = captured
        if self.record.dry_run:
            return self._dry_run(tree)
        observations = self.observations = self.s.qtree.observe(tree)
        self.ordering = final_ordering(tree)
        for r in self._reusable(tree):
            if self._serve(captured, r):
                self.reuse_rules[r.path] = r
        reused = set(self.reuse_rules)
        chosen = self._choose(tree, observations, reused)
        for node in sorted(chosen, key=lambda n: -len(n.path)):
            self._materialize(captured, node)
        self._explain(tree, observations, reused, {n.path for n in chosen})
        if not self.replacements:
            return self.df
        bridge = self.s.bridge
        return bridge.dataframe_of(bridge.substitute(captured, self.replacements))

    def _optimize_joins(
        self,
        df: DataFrame,
        captured: CapturedPlan,
        tree: PlanNode,
        covered: list[tuple[int, ...]],
    ) -> DataFrame:
        """Apply the join optimizations; a failure among them only costs their speed-up."""
        try:
            optimized, self.record.joins = self.s.joins.optimize(
                df, self.record.counters, captured, tree, covered
            )
            return optimized
        except (CrissError, OSError, ValueError) as exc:
            failure = exc
        except Exception as exc:
            if not type(exc).__module__.startswith(("py4j", "pyspark")):
                raise
            failure = exc
        log.warning("join optimizations skipped for this query: %s", failure)
        self.record.counters["join_failures"] += 1
        return df

    def _stale(self, tree: PlanNode) -> bool:
        """Whether a relation ``tree`` reads has changed since the QTree saw it (a dry run
        leaves such entries in place; a real run has dropped them already)."""
        if not self.record.dry_run:
            return False
        relations = {n.relation["key"]: n.relation["version"] for n in tree.leaves() if n.relation}
        return bool(self.s.qtree.stale_relations(relations))

    def _dry_run(self, tree: PlanNode) -> DataFrame:
        """Decide as a real run would, without caching, pinning or recording anything."""
        observations = self.s.qtree.peek(tree)
        if not self._stale(tree):  # stale entries would be dropped first
            for r in self._reusable(tree):
                entry = self.entries[r.fingerprint]
                self.reuse_rules[r.path] = r
                self.partition_counts[r.path] = _Served(
                    len(entry.bitmap), len(entry.missing), entry.num_partitions, entry.bytes
                )
        reused = set(self.reuse_rules)
        chosen = self._choose(tree, observations, reused)
        self._explain(tree, observations, reused, {n.path for n in chosen})
        return self.df

    def _remember_rewrite(self, original: PlanNode, rewritten: PlanNode) -> None:
        """Note that the join optimizations turned the query whose result is ``original``
        into one whose result is ``rewritten``: the same rows, under another fingerprint."""
        if storable(original) and original.fingerprint != rewritten.fingerprint:
            self.s.qtree.set_meta(REWRITTEN + original.fingerprint, rewritten.fingerprint)

    def _rewritten_result(self, tree: PlanNode) -> Reuse | None:
        """The cached result of this query as the join optimizations rewrote it earlier,
        so a repeat reads it without optimizing (and measuring) its joins again."""
        result = result_node(tree)
        if not storable(result):
            return None
        rewritten = self.s.qtree.meta(REWRITTEN + result.fingerprint)
        if rewritten is None or not self._is_cached(rewritten):
            return None
        if not self.entries[rewritten].complete:  # its partitions follow the other plan
            return None
        return Reuse(result.path, rewritten, "join-rewrite")

    def _reusable(self, tree: PlanNode) -> list[Reuse]:
        rewritten = self._rewritten_result(tree)
        if rewritten is not None:
            return [rewritten]
        found = plan_reuse(tree, self._is_cached, self._cached_relatives)
        if self.s.options.reuse_scope == "results":  # an exact-result cache serves whole queries
            wanted = result_node(tree).path
            found = [r for r in found if r.path == wanted and r.rule == "exact"]
        return found

    def _read(
        self,
        captured: CapturedPlan,
        path: tuple[int, ...],
        key: str,
        columns: tuple[int, ...] | None = None,
        order: tuple[SortKey, ...] = (),
    ) -> Any | None:
        return self.s.bridge.cached_read_plan(
            captured.node_at(path),
            key,
            self.files[key],
            self.schemas[key],
            columns=columns,
            order=order,
        )

    def _place_read(
        self,
        captured: CapturedPlan,
        path: tuple[int, ...],
        key: str,
        columns: tuple[int, ...] | None = None,
    ) -> None:
        """Serve the operator at ``path`` from ``key``'s files. The query's result under a
        final ORDER BY on its columns, when small, stands in for the Sort as a local relation
        already in that order: Spark then runs no job for the query at all."""
        if self.ordering is not None and path == self.ordering[0] + (0,):
            sort_path, keys = self.ordering
            if columns is not None:  # keys name the result's columns; the files the entry's
                keys = tuple(replace(k, column=columns[k.column]) for k in keys)
            ordered = self._read(captured, sort_path, key, columns, order=keys)
            if ordered is not None:
                self.replacements[sort_path] = ordered
                self.record.counters["results_ordered_on_driver"] += 1
                return
        self.replacements[path] = self._read(captured, path, key, columns)

    def _serve(self, captured: CapturedPlan, reuse: Reuse) -> bool:
        """Serve ``reuse.path`` from its cached entry, per rewrite rule; whether it could."""
        key = reuse.fingerprint
        if key in self.files:
            entry = self.entries[key]
            served = _Served(len(entry.bitmap), 0, entry.num_partitions, entry.bytes)
        else:
            served = self._open(captured, reuse)
            if served is None:
                return False
        self.partition_counts[reuse.path] = served
        if reuse.rule == "exchange-repartition":
            wanted = captured.node_at(reuse.path)
            cached = self._read(captured, reuse.path, key)
            self.replacements[reuse.path] = wanted.withNewChildren(self.s.bridge.seq([cached]))
        else:
            self._place_read(captured, reuse.path, key, reuse.columns)
        return True

    def _open(self, captured: CapturedPlan, reuse: Reuse) -> _Served | None:
        """Promote, pin and (for missing partitions) recompute the entry ``reuse`` reads."""
        cache, key = self.s.cache, reuse.fingerprint
        if self.entries[key].complete:
            cache.promote(self.entries[key])
        self.lease.pin(key)
        entry = cache.lookup(key)  # again, now that nobody may move or evict it
        if entry is None or (reuse.rule != "exact" and not entry.complete):
            return None
        self.entries[key] = entry
        reused, reused_bytes = len(entry.bitmap), entry.bytes
        cache.record_reads(entry)
        recomputed = 0
        if entry.complete:
            self.files[key], self.schemas[key] = cache.uris(entry), entry.schema_json
        else:
            recomputed = self._recompute_missing(captured, reuse.path, entry)
            if recomputed is None:
                return None
            reused = entry.num_partitions - recomputed
        return _Served(reused, recomputed, entry.num_partitions, reused_bytes)

    def _recompute_missing(
        self, captured: CapturedPlan, path: tuple[int, ...], entry: EntryRecord
    ) -> int | None:
        """Compute only the partitions ``entry`` lacks (all if the layout changed); how many.

        None when the entry cannot be completed (a live DataFrame reads an outdated layout).
        """
        cache = self.s.cache
        plan = self.s.bridge.substitute(captured, self.replacements, at=path)
        started = time.perf_counter()
        try:
            result = self.s.bridge.partitioned(plan)
            if (result.num_partitions, result.layout) == (entry.num_partitions, entry.layout):
                indices = entry.missing
            elif cache.pin_count(entry.key) > 1 or cache.pinned_elsewhere(entry.key):
                return None  # a live DataFrame reads the old partitions: leave them alone
            else:
                indices = list(range(result.num_partitions))
                entry = cache.begin(
                    entry.key,
                    op=entry.op,
                    schema_json=result.schema_json,
                    num_partitions=result.num_partitions,
                    layout=result.layout,
                    texec=entry.texec,
                    total_bytes=entry.total_bytes,
                )
            everything = indices == list(range(result.num_partitions))
            kept = {} if everything else cache.uris_by_index(entry)  # as looked up, now pinned
            stored, _ = self._write(result, entry, indices)
        finally:
            self.record.materialize_seconds += time.perf_counter() - started
        self.record.counters["partitions_recomputed"] += len(indices)
        self._settle(entry.key, entry.schema_json, kept, stored)
        return len(indices)

    def _write(
        self,
        result: PartitionedResult,
        entry: EntryRecord | None,
        indices: list[int],
        started: float | None = None,
    ) -> tuple[StoreResult, Any]:
        """Run the write job for ``indices`` and hand the files to the cache.

        With ``started`` (a first materialization), the entry's Texec and size are recorded
        before placement, since every partition's benefit is its share of them.
        """
        cache = self.s.cache
        key = entry.key if entry is not None else "unstored"
        staged = cache.staging_dir(key)
        everything = indices == list(range(result.num_partitions))
        if result.write(staged, None if everything else indices):
            self.record.counters["entries_written_on_driver"] += 1
        if entry is None:
            return StoreResult.unstored(staged, indices), staged
        if started is not None:
            entry = cache.catalog.set_measurements(
                entry.key, texec=time.perf_counter() - started, total_bytes=staged_bytes(staged)
            )
        stored = cache.store(entry, staged, indices)
        if stored.leftovers:
            self.lease.leftover_dirs.append(str(staged))
        else:
            remove_staging(staged)
        return stored, staged

    def _settle(
        self, key: str, schema_json: str, kept: dict[int, str], stored: StoreResult
    ) -> None:
        """Files this query reads for ``key``: partitions it found plus those it computed.

        Built from this query's own knowledge, never from a fresh catalog read, so a
        concurrent writer of the same entry cannot add or remove partitions under it.
        """
        self.files[key] = list({**kept, **stored.files()}.values())
        self.schemas[key] = schema_json
        self.record.counters["bytes_written"] += stored.bytes_written

    def _cached_relatives(self, key: str) -> list[Relative]:
        found = []
        for relative in self.s.qtree.relatives(key):
            # a relative's plan is not in this query, so its missing partitions can't be rebuilt
            if (
                self._is_cached(relative.fingerprint)
                and self.entries[relative.fingerprint].complete
            ):
                found.append(relative)
        return found

    def _is_cached(self, fingerprint: str) -> bool:
        if fingerprint in self.entries:
            return True
        entry = self.s.cache.lookup(fingerprint)
        if entry is not None:
            self.entries[fingerprint] = entry
        return entry is not None

    def _invalidate_stale(self, tree: PlanNode) -> None:
        relations = {n.relation["key"]: n.relation["version"] for n in tree.leaves() if n.relation}
        stale = self.s.qtree.stale_relations(relations)
        if stale:
            doomed = self.s.qtree.invalidate(stale)
            for fingerprint in doomed:
                self.s.cache.delete(fingerprint)
            self.record.counters["invalidated"] += len(doomed)

    # --- selection (paper §1.3) ----------------------------------------------------------------

    def _choose(
        self, tree: PlanNode, obs: dict[str, Observation], reused: set[tuple[int, ...]]
    ) -> list[PlanNode]:
        result = result_node(tree)
        result_path = self.result_path = result.path
        if self.s.options.reuse_scope == "results":
            return [] if result.path in reused or not storable(result) else [result]
        by_key: dict[str, PlanNode] = {}
        # a result cached eagerly (no statistics yet) is written besides, not instead of, the
        # best measured operator of each branch: the query computes it anyway
        eager = (
            result.path not in reused
            and result.fingerprint in obs
            and not obs[result.fingerprint].stats.has_stats
            and self._score(result, obs, True) is not None
        )

        def candidate(node: PlanNode) -> Candidate:
            key = "/".join(map(str, node.path))
            by_key[key] = node
            if node.path in reused:
                return Candidate(key, (), None)
            kids = tuple(candidate(c) for c in node.children)
            is_result = node.path == result_path
            score = None if is_result and eager else self._score(node, obs, is_result)
            return Candidate(key, kids, score)

        chosen = [by_key[k] for k in best_per_branch(candidate(tree))]
        return [*chosen, result] if eager else chosen

    def _score(self, node: PlanNode, obs: dict[str, Observation], is_result: bool):
        if not storable(node) or node.fingerprint not in obs:
            return None
        stats = obs[node.fingerprint].stats
        if stats.has_stats:
            if not is_result and self._copies_its_table(node, stats.rows):
                return None
            return measured_score(self._benefit(stats, self.s.disk_bandwidth))
        if not is_result and table_copy(node):
            # a copy of one table is judged once its rows are known (see _copies_its_table):
            # the executed plan of the query that first runs it gives them without a write
            return None
        recurring = stats.ref >= self.s.options.min_ref
        if (recurring or (is_result and self.s.options.eager_results)) and self._worth_a_job(node):
            return collect_score(stats.ref, node.height)
        return None

    @staticmethod
    def _copies_its_table(node: PlanNode, rows: int | None) -> int | None:
        """The table's row count when ``node`` filters/projects one table and keeps most
        of its rows (a copy no cheaper to read than the table), else None."""
        if not table_copy(node):
            return None
        table = table_rows(next(node.leaves()).relation)
        return table if keeps_most_rows(rows, table) else None

    def _worth_a_job(self, node: PlanNode) -> bool:
        """Without statistics, estimate Texec from the bytes the operator scans."""
        return self.s.estimated_texec(node, self.reuse_rules) >= self.s.options.min_texec

    def _benefit(self, stats, bandwidth: float) -> float:
        recency = max(stats.last_access - self.s.qtree.start_time, 1e-3)
        return self.s.policy.benefit(
            ref=stats.ref,
            texec=stats.texec or 0.0,
            size_bytes=float(stats.size_bytes or 0),
            bandwidth=bandwidth,
            recency=recency,
        )

    # --- materialization -----------------------------------------------------------------------

    def _materialize(self, captured: CapturedPlan, node: PlanNode) -> None:
        key = node.fingerprint
        if key in self.files:
            # the same subtree occurs twice in this query: write once, read it at both places
            self._place_read(captured, node.path, key)
            return
        started = time.perf_counter()
        plan = self.s.bridge.substitute(captured, self.replacements, at=node.path)
        try:
            result = self.s.bridge.partitioned(plan)
            indices = list(range(result.num_partitions))
            self.lease.pin(key)
            entry = self._begin(node, result, started)
            stored, staged = self._write(result, entry, indices, started)
            texec = time.perf_counter() - started
        finally:
            self.record.materialize_seconds += time.perf_counter() - started
        if entry is None:
            self.lease.leftover_dirs.append(str(staged))
        self.s.qtree.record_stats(key, texec=texec, size_bytes=stored.bytes, rows=stored.rows)
        self.s.learn_scan_rate(node, texec, self.replacements)
        self.s.learn_parquet_ratio(stored.rows, result.row_width, stored.bytes)
        self._learn_from_execution(result, node, texec)
        self._settle(key, result.schema_json, {}, stored)
        self._place_read(captured, node.path, key)
        self.record.counters["operators_cached"] += 1

    def _learn_from_execution(self, result: PartitionedResult, node: PlanNode, wall: float) -> None:
        """Statistics for the operators under ``node`` that ran in its job but were not stored.

        The paper collects statistics only where they are missing; writing an operator just
        to measure it costs more than it saves for big intermediates. Instead each one gets
        its rows from the executed plan's metrics, Texec as its share of the job's measured
        time (by the task time of its physical operators) and size as rows × row width ×
        the learned Parquet ratio, recorded as source "executed plan" (a real write later
        replaces them). Read in the background: the next query waits for it.
        """
        wanted = {
            n.fingerprint
            for n in node.walk()
            if n is not node
            and storable(n)
            and n.fingerprint in self.observations
            and not self.observations[n.fingerprint].stats.has_stats
        }
        if wanted:
            self.s.harvest_later(result, wanted, wall)

    def _begin(self, node: PlanNode, result: PartitionedResult, started: float):
        """Open the entry to write, or None if another application is reading an old one."""
        try:
            return self.s.cache.begin(
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

    # --- explanation ---------------------------------------------------------------------------

    def _explain(
        self,
        tree: PlanNode,
        obs: dict[str, Observation],
        reused: set[tuple[int, ...]],
        cached: set[tuple[int, ...]],
    ) -> None:
        counters = self.record.counters
        for node in outside(tree, reused):
            o = obs.get(node.fingerprint)
            d = OperatorDecision(
                node.path,
                node.op,
                node.fingerprint,
                matched=bool(o and o.matched),
                looked_up=node.uncacheable is None,
            )
            counters["operators_seen"] += 1
            counters["operators_matched"] += d.matched
            if node.path in reused:
                reuse = self.reuse_rules[node.path]
                d.reused, d.rule = reuse.fingerprint, reuse.rule
                if reuse.rule != "exact":
                    counters[f"rewrites_{reuse.rule.replace('-', '_')}"] += 1
                counters["operators_reused"] += 1
                served = self.partition_counts[node.path]
                counters["partitions_reused"] += served.reused
                counters["bytes_read"] += served.bytes_read
                d.partitions = served.describe()
            elif node.path in cached:
                d.cached = node.fingerprint
                counters["operators_cached"] += self.record.dry_run  # else counted when written
            else:
                d.why_not = self._why_not(node, o)
            if o and o.stats.has_stats:
                d.benefit = self._benefit(o.stats, self.s.disk_bandwidth)
                d.stats = (
                    f"ref={o.stats.ref} Texec={o.stats.texec:.3f}s "
                    f"size={o.stats.size_bytes}B rows={o.stats.rows}"
                )
                if o.stats.stats_source == EXECUTED_PLAN:
                    d.stats += " from the executed plan"
            elif o and d.cached:
                estimate = self.s.estimated_texec(node, self.reuse_rules)
                d.stats = (
                    f"ref={o.stats.ref}, no statistics yet: cached on an estimate, Texec ~"
                    f"{estimate:.2f}s from {node.scanned_bytes_outside(self.reuse_rules)}B of "
                    "table files; measured as it is written"
                )
            elif o:
                d.stats = f"ref={o.stats.ref} (no statistics yet)"
            self.record.operators.append(d)

    def _why_not(self, node: PlanNode, o: Observation | None) -> str:
        if node.uncacheable:
            return node.uncacheable
        if self.s.options.reuse_scope == "results" and node.path != self.result_path:
            return "reuse_scope=results: only whole query results are cached"
        if not storable(node):
            return f"{node.op} results are not stored (cheap to recompute or order-sensitive)"
        if o is None:
            return "not tracked"
        if o.stats.has_stats:
            table = self._copies_its_table(node, o.stats.rows)
            if table and node.path != self.result_path:
                return (
                    f"a copy of one table keeping {o.stats.rows} of its {table} rows: no "
                    "cheaper to read back than scanning its columns again"
                )
            benefit = self._benefit(o.stats, self.s.disk_bandwidth)
            if benefit <= 0:
                return f"benefit {benefit:.3g} <= 0 with disk bandwidth"
            return "another operator on its branch has a larger benefit"
        if unprojected_scan(node) and node.path != self.result_path:
            return (
                "filters a table without narrowing its columns: a copy would hold every "
                "column (cached once measured, or as a query's result)"
            )
        if table_copy(node) and node.path != self.result_path:
            return (
                "a copy of one table: cached only once its rows are measured (from an "
                "executed plan), if it keeps few of the table's rows"
            )
        estimate = self.s.estimated_texec(node, self.reuse_rules)
        if estimate < self.s.options.min_texec:
            return (
                f"estimated Texec {estimate:.3f}s < min_texec "
                f"{self.s.options.min_texec}s: not worth a materialization job"
            )
        if o.stats.ref < self.s.options.min_ref:
            return (
                f"seen {o.stats.ref}x; cached to collect statistics from {self.s.options.min_ref}x"
            )
        return "another operator on its branch ranks higher"


@dataclass(frozen=True)
class _Served:
    """How one reuse was served, partition by partition."""

    reused: int
    recomputed: int
    total: int
    bytes_read: int

    def describe(self) -> str:
        text = f"{self.reused}/{self.total} partitions reused"
        return text + (f", {self.recomputed} recomputed" if self.recomputed else "")


def _label(record: QueryRecord, d: OperatorDecision) -> str:
    if record.captured is None:
        return d.op
    try:
        return record.captured.label_at(d.path)
    except Exception:  # the JVM is gone (session stopped): the operator name will do
        return d.op


def format_explain(record: QueryRecord, labels: bool = True) -> str:
    reused, cached = ("would reuse", "would cache") if record.dry_run else ("reused", "cached")
    lines = [
        f"Criss plan ({record.counters.get('operators_reused', 0)} {reused}, "
        f"{record.counters.get('operators_cached', 0)} {cached}, "
        f"planning {record.planning_seconds * 1000:.0f} ms, "
        f"materializing {record.materialize_seconds:.2f} s)"
        + (" - dry run: nothing was cached, recomputed or recorded" if record.dry_run else "")
    ]
    if record.fallback:
        lines.append(f"  fell back to plain Spark: {record.fallback}")
    if record.counters.get("results_ordered_on_driver"):
        lines.append("  result: read on the driver and put in ORDER BY order there (no Spark job)")
    if record.counters.get("entries_written_on_driver"):
        lines.append(
            f"  {record.counters['entries_written_on_driver']} cached result(s) small enough to "
            "be collected and written on the driver (no Spark write job)"
        )
    for choice in record.joins:
        lines.append(f"  join: {choice.describe()}")
    for d in record.operators:
        indent = "  " * (len(d.path) + 1)
        state = (
            ("WOULD REUSE entry " if record.dry_run else "REUSED entry ")
            + d.reused[:12]
            + ("" if d.rule == "exact" else f" via {d.rule}")
            if d.reused
            else ("WOULD CACHE as " if record.dry_run else "CACHED as ") + d.cached[:12]
            if d.cached
            else f"never matched; not cached: {d.why_not}"
            if not d.looked_up
            else ("matched" if d.matched else "new") + f"; not cached: {d.why_not}"
        )
        label = _label(record, d) if labels else d.op
        lines.append(
            f"{indent}{label[:80]}  [{d.fingerprint[:12]}] {state}"
            + (f"; {d.partitions}" if d.partitions else "")
            + (f"  ({d.stats})" if d.stats else "")
        )
    return "\n".join(lines)


def statistics_from_metrics(
    tree: PlanNode,
    metrics: dict[tuple[int, ...], Any],
    wanted: set[str],
    wall: float,
    parquet_ratio: float,
) -> dict[str, tuple[float, int, int]]:
    """(Texec, size, rows) of the ``wanted`` operators of an executed ``tree``.

    Texec is the operator's subtree's share of the job's ``wall`` seconds by task time;
    size is rows × default row width × the Parquet ratio; a Project has its input's rows.
    """
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
        rows = rows_of(n) if n.fingerprint in wanted and n.path in metrics else None
        if rows is None:
            continue
        depth = len(n.path)
        inside = sum(m.task_seconds for p, m in metrics.items() if p[:depth] == n.path)
        size = rows * metrics[n.path].row_width * parquet_ratio
        estimates[n.fingerprint] = (wall * inside / total, int(size), rows)
    return estimates
