"""``criss.session(spark)``: the public entry point that plans queries through Criss.

A query's path: the bridge captures the optimized plan → ``qtree`` canonicalizes,
fingerprints and matches it → ``policies`` choose what to cache → ``storage`` serves
or stores results → the bridge builds the rewritten plan → Spark runs it. The phases live
in :mod:`criss.planner`; this module holds what outlives one query.
"""

from __future__ import annotations

import logging
import threading
import time
import warnings
import weakref
from collections import Counter, deque
from collections.abc import Callable, Collection
from typing import TYPE_CHECKING, Any

from criss.ageing import FORGET_EVERY, FORGET_ROUNDS_KEPT, Forgotten, forget_unused
from criss.bridge import (
    REMEMBERED_PLANS,
    CapturedPlan,
    CatalystBridge,
    ExecutionListener,
    FinishedExecution,
    execution_id,
    plan_identity,
    share_stage_code,
)
from criss.bridge.handout import names_any, served_dataframe
from criss.config import CrissOptions
from criss.cyclic_gc import cyclic_gc_paused
from criss.errors import SessionClosed, StorageError, UsageError
from criss.history import COUNTERS, QueryHistory
from criss.joins import JoinOptimizer
from criss.planner import Lease, QueryRecord, plan_query
from criss.planner.executions import ExecutionFacts, cache_read_facts, facts_from_execution
from criss.planner.explain import format_explain
from criss.planner.learning import Learning
from criss.planner.spark_cache import (
    PendingCache,
    commit_cached,
    fully_committed,
    release_cached,
    write_cached,
)
from criss.planner.writethrough import PendingWrite, commit_written  # noqa: TC001
from criss.policies import get_policy
from criss.qtree import QTree, canonicalize, fingerprint_tree
from criss.qtree.canonical import RULES, clean_args
from criss.qtree.executed import PlannedQuery
from criss.qtree.plan import PlanNode
from criss.qtree.scans import with_read_bytes
from criss.recent import RecentItems
from criss.report import Report
from criss.space import TierReach, open_cache
from criss.storage.tiers import make_private_dir
from criss.tables import read_bytes

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
        self.reach = TierReach(
            spark.sparkContext.master, self.bridge.executor_hosts, options.shared_tiers
        )
        self.cache = open_cache(spark, options, self.home, self.qtree, self.policy, self.reach)
        self.history = QueryHistory(self.home / "catalog.db", timeout=options.catalog_timeout)
        self.learning = Learning(self.qtree)
        self.joins = JoinOptimizer(self)
        self.counters: Counter = Counter({name: 0 for name in COUNTERS})
        #: One thread at a time plans, settles or reports: the catalogs' SQLite connections
        #: and the maps below are shared by every thread of the application (a notebook
        #: server or a service issuing queries from several threads). Actions still run in
        #: parallel in Spark; Spark's listener thread never takes it.
        self._lock = threading.RLock()
        self._records: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
        self._last: QueryRecord | None = None
        # the paper chooses what to cache assuming the worst case: it will sit on disk
        self.disk_bandwidth = float(self.cache.tiers["disk"].bandwidth or 1e8)
        #: memo key of a captured plan → its canonical tree (see ``canonical_tree``).
        self._canonical_trees = RecentItems(REMEMBERED_PLANS)
        self._rules = tuple(
            (lambda n: clean_args(n, options.allowed_udfs)) if r is clean_args else r for r in RULES
        )
        #: QueryExecution id of each DataFrame handed out → operators it may measure.
        self._watched = RecentItems(REMEMBERED_PLANS * 8)
        #: JVM identities of the logical plans handed out (other actions build on them).
        self._handed_out = RecentItems(REMEMBERED_PLANS * 8)
        self._planning = False
        #: Write-through steps handed out, by token, until what they wrote is committed.
        self._writes: dict[str, PendingWrite] = {}
        #: Results handed out to be computed into Spark's cache, by token, until written.
        self._caches: dict[str, PendingCache] = {}
        #: Join key measurements to run after the next action, by meta key.
        self._measurements: dict[str, Callable[[], dict[str, Any]]] = {}
        #: Meta keys of the join key measurements running now (not scheduled again).
        self._measuring: frozenset[str] = frozenset()
        #: The latest rounds of forgetting, newest last (how long each held the locks).
        self.forget_rounds: deque[Forgotten] = deque(maxlen=FORGET_ROUNDS_KEPT)
        self.listener = self._listen()
        self._forget_unused(self.counters)
        self._closed = False
        #: What puts Spark's naming of generated stage classes back on close (None: untouched).
        self._stage_code = (
            share_stage_code(spark) if options.share_stage_code and options.enabled else None
        )

    @property
    def read_bandwidth(self) -> float | None:
        """Reading a cached result back from the disk tier, as measured: the bandwidth the
        queries' reads of cached entries reached, through the disk's medium. None before
        one was measured, or when the disk's bandwidth is configured (it then decides)."""
        measured = self.learning.read_bandwidth
        medium = self.cache.tiers["disk"].medium_bandwidth
        if measured is None or medium is None:
            return None
        return 1 / (1 / medium + 1 / measured)

    def _listen(self) -> ExecutionListener | None:
        """Learn from every action run on this SparkSession (the paper's runtime statistics
        collection); without a listener, Criss learns only from its own jobs."""
        listener = ExecutionListener(self.spark, self._executed)
        try:
            listener.start()
        except Exception as exc:  # any failure here only costs statistics
            log.warning("Criss learns only from its own jobs: no execution listener (%s)", exc)
            return None
        return listener

    def _executed(self, finished: FinishedExecution) -> None:
        """Spark ran an action: read its executed plan in the background.

        An action on a DataFrame Criss handed out measures every operator it computed
        (the next query waits only for the operators that had no statistics); another
        action built on one (``count``, ``show``, a write) every operator it ran. Plain
        Spark queries and Criss's own jobs while planning are not read.
        """
        watched = self._watched.pop(finished.execution_id)
        if watched is None and self._planning:
            return
        wanted, unmeasured, planned = (None, None, None) if watched is None else watched
        self._write_cached(finished)
        self._measure_now()
        writing = frozenset(w.key for w in list(self._writes.values()))
        if writing:
            # first, and apart: the next query waits for what its action wrote, not for
            # the slower read of every operator's metrics
            def read_written(ratio: float) -> ExecutionFacts | None:
                steps = self.bridge.written_steps(finished.query_execution)
                return ExecutionFacts(seconds=finished.seconds, written=steps) if steps else None

            self.learning.harvest_later(read_written, writing)
        if wanted == frozenset():
            if planned is not None:  # all of it was served: what reading the cache took
                self.learning.harvest_later(lambda ratio: cache_read_facts(self, finished), ())
            return
        handed_out = frozenset(self._handed_out.keys())

        def read(ratio: float) -> ExecutionFacts | None:
            if wanted is None and not finished.built_on(self.bridge, handed_out):
                return None
            return facts_from_execution(self, finished, ratio, wanted, planned)

        self.learning.harvest_later(read, unmeasured)

    def _write_cached(self, finished: FinishedExecution) -> None:
        """After any action, write in the background what Spark's cache now holds of the
        results handed out to be cached by their action."""
        pending = [c for c in list(self._caches.values()) if not c.finished]
        if not pending:
            return

        def write(ratio: float) -> ExecutionFacts | None:
            return write_cached(self, pending, finished, ratio)

        keys = frozenset(c.key for c in pending) | frozenset().union(
            *(c.unmeasured for c in pending)
        )
        self.learning.harvest_later(write, keys)

    def measure_after_action(self, key: str, measure: Callable[[], dict[str, Any]]) -> None:
        """Run ``measure`` (a join input's key counts, one Spark job) in the background
        after the next action, and keep what it returns in the QTree's meta under ``key``.
        A query planned meanwhile does not wait for it: it plans without the counts."""
        if key not in self._measuring:
            self._measurements.setdefault(key, measure)

    def _measure_now(self) -> None:
        pending, self._measurements = self._measurements, {}
        if not pending:
            return

        def measure(ratio: float) -> ExecutionFacts:
            return ExecutionFacts(measured={key: run() for key, run in pending.items()})

        self._measuring = self._measuring | frozenset(pending)
        self.learning.harvest_later(measure, frozenset())

    def _watch(self, planned: DataFrame, record: QueryRecord, caches: list[PendingCache]) -> None:
        """Remember which operators an action on ``planned`` itself will measure (every one
        it computes: a Texec measured again replaces a slower one, such as a first run's
        that compiled the template's code), which of them have no statistics yet, and
        which actions run on it (they fill the Spark cache of ``caches``)."""
        if self.listener is None:
            return
        computed = [o for o in record.operators if o.looked_up and not o.reused]
        wanted = frozenset(o.fingerprint for o in computed)
        unmeasured = frozenset(
            o.fingerprint for o in computed if o.stats is None or o.stats.texec is None
        )
        served = frozenset(o.path for o in record.operators if o.reused)
        shape = (
            PlannedQuery({o.path: (o.fingerprint, o.op) for o in record.operators}, served)
            if served
            else None
        )
        try:
            action, identity = execution_id(planned), plan_identity(planned)
            self._watched.put(action, (wanted, unmeasured, shape))
            self._handed_out.put(identity, True)
            for cached in caches:
                cached.execution_id, cached.identity = action, identity
        except Exception as exc:  # the query is planned: failing here only costs statistics
            log.info("this query's actions will not be measured: %s", exc)

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
        _require_dataframe(df, "record")
        with self._lock:
            return self._records.get(df)

    def explain(self, df: DataFrame) -> str:
        """Per operator: matched? reused (which entry)? cached? and why not."""
        _require_dataframe(df, "explain")
        with self._lock:
            record = self._records.get(df)
        if record is None:
            return "this DataFrame was not planned by this Criss session"
        return format_explain(record)

    def report(self) -> Report:
        """Counters, per-tier usage and traffic, and every entry with its bitmap: a dict
        (JSON-ready) that prints as a short summary."""
        with self._lock:
            self._require_open("report")
            return self._report()

    def _report(self) -> Report:
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
                "write_seconds": round(self.learning.write_seconds, 3),
                "write_bandwidth": self.learning.write_bandwidth,
                "read_bandwidth": self.read_bandwidth,
                "executions_read": self.learning.executions_read,
                "policy": self.policy.name,
                "media": self.options.media,
                "granularity": self.options.granularity,
                "home": str(self.home),
            }
        )

    @property
    def last_record(self) -> QueryRecord | None:
        """The record of the last query planned (its counters grow as its action's
        write-through commits)."""
        return self._last

    def last_query_summary(self, settle: bool = True) -> dict[str, Any]:
        """The last query's counters and times. With ``settle``, what its action (if it ran)
        wrote through is committed and counted first."""
        with self._lock:
            if settle:
                self.settle_harvests()
            return {} if self._last is None else self._last.summary()

    def written_through(self, record: QueryRecord, stored: dict[str, int]) -> None:
        """Count what a query's action cached through its write-through steps, in the
        session's counters, the query's record and its line in the query log."""
        self.counters.update(stored)
        record.counters.update(stored)
        if record.log_id is not None:
            self.history.update_counters(record.log_id, dict(record.counters))

    def clear(self, tier: str | None = None) -> None:
        """Drop every cached result and the QTree, or only what ``tier`` holds.

        Results a live DataFrame reads are kept.
        """
        if tier is not None and tier not in self.cache.tiers:
            raise StorageError(f"no tier {tier!r}; tiers: {', '.join(self.cache.tiers)}")
        with self._lock:
            self._require_open("clear")
            if tier is None:
                self.settle_harvests()
                self.qtree.clear()
            self.cache.clear(tier)
            self.bridge.forget_reads()

    def close(self) -> None:
        """Commit what the last actions wrote, then close the cache and the stores. Closing
        again does nothing; queries planned afterwards run as plain Spark."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._close()

    @property
    def closed(self) -> bool:
        return self._closed

    def _require_open(self, what: str) -> None:
        if self._closed:
            raise SessionClosed(
                f"{what}() on a closed Criss session (home {self.home}): wrap the "
                "SparkSession again with criss.session(spark, home=...) to read its cache"
            )

    def _close(self) -> None:
        try:
            self._settle(None, drain=True)  # commit what the last actions wrote through
        except Exception as exc:
            log.warning("statistics or results of the last actions were not kept: %s", exc)
        if self.listener is not None:
            self.listener.stop()
        for pending in self._writes.values():
            self.cache.staging.remove(pending.staged)
        self._writes.clear()
        for cached in self._caches.values():
            release_cached(cached)
        self._caches.clear()
        self.learning.close()
        self.history.close()
        self.cache.close()
        self.qtree.close()
        if self._stage_code is not None:
            try:
                self._stage_code()
            except Exception as exc:  # the JVM may be gone at interpreter exit
                log.info("Spark's naming of generated classes was not put back: %s", exc)
            self._stage_code = None

    def __enter__(self) -> CrissSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- what the planner's phases share -------------------------------------------------------

    @property
    def scan_rate(self) -> float:
        """Input bytes per second learned from materializations (behind Texec estimates)."""
        return self.learning.scan_rate

    def settle_harvests(self, needed: Collection[str] | None = None, drain: bool = True) -> None:
        """Store the statistics read off executed plans in the background, waiting for the
        reads that may hold statistics of ``needed`` fingerprints (None: all). With
        ``drain``, first let Spark report the actions finished so far."""
        with self._lock:
            if not self._closed:
                self._settle(needed, drain)

    def _settle(self, needed: Collection[str] | None, drain: bool) -> None:
        if drain and self.listener is not None:
            self.listener.wait_for_reports()
        self.counters["statistics_from_execution"] += self.learning.settle(needed)
        self.counters["join_key_measurements"] += self.learning.measurements
        self.learning.measurements = 0
        for facts in self.learning.take_written():
            self._commit(facts)
        idle = self.learning.idle()
        if idle:
            self._measuring = frozenset()
        for token, cached in list(self._caches.items()):
            if cached.finished or (idle and cached.released) or fully_committed(cached):
                release_cached(cached)  # written, or no action can cache more of it
                del self._caches[token]
        if self._writes and idle:
            for token, pending in list(self._writes.items()):
                if pending.released:  # no action can write more: what is left is waste
                    self.cache.staging.remove(pending.staged)
                    del self._writes[token]

    def _commit(self, facts: ExecutionFacts) -> None:
        """Cache what an action's write-through steps wrote, and what was written from
        Spark's cache after it."""
        for step in facts.written:
            pending = self._writes.get(step.token)
            if pending is not None and not pending.dropped:
                known = self.qtree.get(pending.key)
                commit_written(self, pending, step, known.texec if known else None, facts.seconds)
        for write in facts.cached:
            cached = self._caches.get(write.token)
            if cached is None:
                self.cache.staging.remove(write.staged)
            else:
                commit_cached(self, cached, write)

    def canonical_tree(self, captured: CapturedPlan) -> PlanNode:
        """``captured``'s plan in canonical form with fingerprints (this session's rules);
        a repeated plan over unchanged files gets the tree computed last time."""
        key = captured.memo_key
        tree = None if key is None else self._canonical_trees.get(key)
        if tree is None:
            tree = fingerprint_tree(canonicalize(captured.tree, self._rules))
            tree = with_read_bytes(tree, lambda leaf, read: read_bytes(leaf.relation, read))
            if key is not None:
                self._canonical_trees.put(key, tree)
        return tree

    # --- planning ------------------------------------------------------------------------------

    def _plan(self, df: DataFrame, sql: str | None) -> DataFrame:
        with self._lock:
            return self._plan_locked(df, sql)

    def _plan_locked(self, df: DataFrame, sql: str | None) -> DataFrame:
        self.counters["queries"] += 1
        if not self.options.enabled:
            return df
        if self._closed:
            if self.counters["queries_after_close"] == 0:
                log.warning("this Criss session is closed: its queries run as plain Spark")
            self.counters["queries_after_close"] += 1
            return df
        record = QueryRecord(sql, dry_run=self.options.dry_run)
        started = time.perf_counter()
        lease = Lease(self.cache)
        self._planning = True
        try:
            if self.counters["queries"] % FORGET_EVERY == 0 and not record.dry_run:
                self._forget_unused(record.counters)
            self.reach.check(self.cache.tiers_in_use)  # executors may have joined since
            # what earlier actions wrote through is committed before this query looks
            self.settle_harvests(needed=self._pending_keys())
            with cyclic_gc_paused():
                planned = plan_query(self, df, record, lease)
        except Exception as exc:  # any failure of Criss's own machinery: plain Spark runs it
            lease.release()
            for cached in lease.caches:  # handed out to no one: free Spark's cache now
                release_cached(cached)
            return self._fall_back(df, record, exc)
        finally:
            self._stop_planning()
        record.planning_seconds = time.perf_counter() - started - record.materialize_seconds
        if lease.pinned and not record.dry_run:  # it reads cached files at execution
            keys = tuple(lease.pinned)
            planned = served_dataframe(planned, df, lambda exc: self._read_failed(keys, exc))
        for write in lease.writes:
            self._writes[write.token] = write
        for cached in lease.caches:
            self._caches[cached.token] = cached
        self._finish(planned, record)
        if not record.dry_run:
            self._watch(planned, record, lease.caches)
        if lease:
            # the entries (and uncached leftovers) this DataFrame reads live as long as it does
            weakref.finalize(planned, lease.release)
        return planned

    def _read_failed(self, keys: tuple[str, ...], exc: BaseException) -> bool:
        """An action reading the cached ``keys`` failed: True (run the plain plan) when
        the error names a file of Criss's tiers. The entries are looked up again, so what
        is damaged now is dropped and the next query recomputes it."""
        if not names_any(exc, self.cache.locations()):
            return False
        first_line = next(iter(str(exc).strip().splitlines()), type(exc).__name__)
        log.warning("a cached result failed this action; it runs uncached: %.300s", first_line)
        with self._lock:
            self.counters["fallbacks_at_execution"] += 1
            self.cache.faults["read failed"] += 1
            for key in keys:
                try:
                    self.cache.lookup(key)
                except Exception as lookup_exc:  # any type: the next lookup tries again
                    log.info("entry %s was not checked again: %s", key, lookup_exc)
        return True

    def _forget_unused(self, counters: Counter) -> None:
        """Age the catalog (``criss.ageing``); a failure only postpones it."""
        if not self.options.forget_after or self.options.dry_run:
            return
        try:
            forgotten = forget_unused(
                self.qtree, self.cache, self.options.forget_after, pending=self._pending_keys()
            )
        except Exception as exc:  # any type: forgetting is housekeeping, never the user's cost
            log.warning("unused operators were not forgotten this time: %s", exc)
            return
        self.forget_rounds.append(forgotten)
        counters["operators_forgotten"] += forgotten.operators
        counters["entries_forgotten"] += forgotten.entries

    def _pending_keys(self) -> frozenset[str]:
        """Fingerprints whose partitions an action may have written, not yet committed."""
        return frozenset(
            [w.key for w in self._writes.values()] + [c.key for c in self._caches.values()]
        )

    def _stop_planning(self) -> None:
        """Let Spark report Criss's own jobs of this planning while they are known as such."""
        try:
            if self.listener is not None:
                self.listener.wait_for_reports()
        except Exception as exc:  # the query is planned: failing here only costs statistics
            log.info("Spark's listener bus did not drain: %s", exc)
        finally:
            self._planning = False

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
            record.log_id = self.history.record(
                sql=record.sql,
                planning_seconds=record.planning_seconds,
                materialize_seconds=record.materialize_seconds,
                counters=dict(record.counters),
                fallback=record.fallback,
                explain=format_explain(record, labels=False),  # labels cost a JVM walk each
                decisions=record.dumps(),
            )


def _require_dataframe(df: Any, method: str) -> None:
    """Records are kept per DataFrame handed out: anything else (a statement's text) is
    asked for by mistake, and says so instead of failing deep in a weak dictionary."""
    from pyspark.sql import DataFrame

    if not isinstance(df, DataFrame):
        raise UsageError(
            f"cs.{method}() takes the DataFrame that cs.sql() or cs.dataframe() returned, "
            f"not a {type(df).__name__} ({str(df)[:60]!r}): "
            f"df = cs.sql(query); print(cs.{method}(df))"
        )
