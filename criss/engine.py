"""``criss.session(spark)``: the public entry point that plans queries through Criss.

A query's path: the bridge captures the optimized plan → ``qtree`` canonicalizes,
fingerprints and matches it → ``policies`` choose what to cache → ``storage`` serves
or stores results → the bridge builds the rewritten plan → Spark runs it. The phases live
in :mod:`criss.planner`; this module holds what outlives one query.
"""

from __future__ import annotations

import logging
import time
import warnings
import weakref
from collections import Counter
from typing import TYPE_CHECKING, Any

from criss.bridge import REMEMBERED_PLANS, CapturedPlan, CatalystBridge
from criss.config import CrissOptions
from criss.errors import StorageError
from criss.history import COUNTERS, QueryHistory
from criss.joins import JoinOptimizer
from criss.planner import Lease, QueryRecord, plan_query
from criss.planner.explain import format_explain
from criss.planner.learning import Learning
from criss.policies import get_policy
from criss.qtree import QTree, canonicalize, fingerprint_tree
from criss.qtree.canonical import RULES, mark_python_udfs
from criss.qtree.plan import PlanNode
from criss.recent import RecentItems
from criss.report import Report
from criss.space import open_cache
from criss.storage.tiers import make_private_dir

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

log = logging.getLogger("criss")


class CrissSession:
    """Plans queries of one SparkSession through Criss. Build it with :func:`criss.session`."""

    def __init__(self, spark: SparkSession, options: CrissOptions) -> None:
        self.spark = spark
        self.options = options
        self.home = options.home
        self.bridge = CatalystBridge(spark, local_read_bytes=options.local_read_bytes)
        make_private_dir(self.home)  # catalogs and cached data are for this user only
        self.qtree = QTree(self.home / "catalog.db", timeout=options.catalog_timeout)
        self.policy = get_policy(options.policy)
        self.cache = open_cache(spark, options, self.home, self.qtree, self.policy)
        self.history = QueryHistory(self.home / "catalog.db", timeout=options.catalog_timeout)
        self.learning = Learning(self.qtree)
        self.joins = JoinOptimizer(self)
        self.counters: Counter = Counter({name: 0 for name in COUNTERS})
        self._records: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
        self._last: QueryRecord | None = None
        # the paper chooses what to cache assuming the worst case: it will sit on disk
        self.disk_bandwidth = float(self.cache.tiers["disk"].bandwidth or 1e8)
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

    def record(self, df: DataFrame) -> QueryRecord | None:
        """How Criss planned ``df``, as data: per operator the decision (reuse, cache, skip),
        its reason code and the numbers it used (None: not planned by this session)."""
        return self._records.get(df)

    def explain(self, df: DataFrame) -> str:
        """Per operator: matched? reused (which entry)? cached? and why not."""
        record = self._records.get(df)
        if record is None:
            return "this DataFrame was not planned by this Criss session"
        return format_explain(record)

    def report(self) -> Report:
        """Counters, per-tier usage and traffic, and every entry with its bitmap: a dict
        (JSON-ready) that prints as a short summary."""
        self.settle_harvests()
        cache = self.cache.report()
        return Report(
            {
                "counters": dict(self.counters),
                "tiers": cache["tiers"],
                "entries": cache["entries"],
                "faults": dict(self.cache.faults),
                "partitions_refused": cache["partitions_refused"],
                "qtree_operators": len(self.qtree),
                "harvest_seconds": round(self.learning.harvest_seconds, 3),
                "policy": self.policy.name,
                "media": self.options.media,
                "granularity": self.options.granularity,
                "home": str(self.home),
            }
        )

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
        self.learning.close()
        self.history.close()
        self.cache.close()
        self.qtree.close()

    def __enter__(self) -> CrissSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- what the planner's phases share -------------------------------------------------------

    @property
    def scan_rate(self) -> float:
        """Input bytes per second learned from materializations (behind Texec estimates)."""
        return self.learning.scan_rate

    def settle_harvests(self) -> None:
        """Store the statistics read off executed plans in the background."""
        self.counters["statistics_from_execution"] += self.learning.settle()

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

    # --- planning ------------------------------------------------------------------------------

    def _plan(self, df: DataFrame, sql: str | None) -> DataFrame:
        self.counters["queries"] += 1
        if not self.options.enabled:
            return df
        record = QueryRecord(sql, dry_run=self.options.dry_run)
        started = time.perf_counter()
        self.settle_harvests()
        lease = Lease(self.cache)
        try:
            planned = plan_query(self, df, record, lease)
        except Exception as exc:  # any failure of Criss's own machinery: plain Spark runs it
            lease.release()
            return self._fall_back(df, record, exc)
        record.planning_seconds = time.perf_counter() - started - record.materialize_seconds
        self._finish(planned, record)
        if lease:
            # the entries (and uncached leftovers) this DataFrame reads live as long as it does
            weakref.finalize(planned, lease.release)
        return planned

    def _fall_back(self, df: DataFrame, record: QueryRecord, exc: BaseException) -> DataFrame:
        message = f"Criss could not plan this query and runs it uncached: {exc}"
        warnings.warn(message, RuntimeWarning, stacklevel=4)
        log.warning(message, exc_info=not isinstance(exc, (OSError, ValueError)))
        record.fallback = f"{type(exc).__name__}: {exc}"
        record.operators = []
        self.counters["fallbacks"] += 1
        self._finish(df, record, count=False)
        return df

    def _finish(self, df: DataFrame, record: QueryRecord, count: bool = True) -> None:
        if count and not record.dry_run:  # a dry run's counters say what would have happened
            self.counters.update(record.counters)
        self._last = record
        try:
            self._records[df] = record
        except TypeError:
            pass
        if not record.dry_run:
            self.history.record(
                sql=record.sql,
                planning_seconds=record.planning_seconds,
                materialize_seconds=record.materialize_seconds,
                counters=dict(record.counters),
                fallback=record.fallback,
                explain=format_explain(record, labels=False),  # labels cost a JVM walk each
                decisions=record.dumps(),
            )
