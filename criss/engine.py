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
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from criss.bandwidth import measure_bandwidth
from criss.bridge import CapturedPlan, CatalystBridge
from criss.config import CrissOptions
from criss.errors import CrissError
from policies import get_policy
from policies.selection import Candidate, best_per_branch, collect_score, measured_score
from qtree import QTree, canonicalize, fingerprint_tree
from qtree.canonical import RULES, mark_python_udfs
from qtree.plan import PlanNode
from qtree.rewrite import Relative, Reuse, outside, plan_reuse, result_node, storable
from qtree.tree import Observation
from storage import Entry, EntryStore

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

log = logging.getLogger("criss")

#: Input bytes per second assumed before any materialization has been measured.
DEFAULT_SCAN_RATE = 64e6

COUNTERS = (
    "queries",
    "operators_seen",
    "operators_matched",
    "operators_reused",
    "operators_cached",
    "partitions_reused",
    "partitions_recomputed",
    "bytes_written",
    "bytes_read",
    "fallbacks",
    "invalidated",
)


@dataclass
class OperatorDecision:
    """What Criss decided for one operator of one query (shown by ``explain``)."""

    path: tuple[int, ...]
    op: str
    fingerprint: str
    matched: bool = False
    reused: str | None = None
    #: How the reused entry serves the operator: exact, project-subset, exchange-repartition.
    rule: str | None = None
    cached: str | None = None
    why_not: str | None = None
    benefit: float | None = None
    stats: str = ""


@dataclass
class QueryRecord:
    sql: str | None
    operators: list[OperatorDecision] = field(default_factory=list)
    counters: Counter = field(default_factory=Counter)
    planning_seconds: float = 0.0
    materialize_seconds: float = 0.0
    fallback: str | None = None
    #: The captured JVM plan, kept while the DataFrame lives so explain can label operators.
    captured: Any = None


class CrissSession:
    """Plans queries of one SparkSession through Criss. Build it with :func:`criss.session`."""

    def __init__(self, spark: SparkSession, options: CrissOptions) -> None:
        self.spark = spark
        self.options = options
        self.home = options.home
        self.home.mkdir(parents=True, exist_ok=True)
        self.qtree = QTree(self.home / "catalog.db", timeout=options.catalog_timeout)
        self.store = EntryStore(self.home / "disk", name="disk")
        self.bridge = CatalystBridge(spark)
        self.policy = get_policy(options.policy)
        self.counters: Counter = Counter({name: 0 for name in COUNTERS})
        self._pins: Counter = Counter()
        self._records: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
        self._last: QueryRecord | None = None
        self.disk_bandwidth = options.disk_bandwidth or self._calibrated_bandwidth()
        self._scan_rate: float | None = None
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
        """Counters and tier usage, JSON-serialisable."""
        return {
            "counters": dict(self.counters),
            "tiers": {
                self.store.name: {
                    "used_bytes": self.store.used_bytes(),
                    "capacity_bytes": self.options.disk_capacity,
                }
            },
            "qtree_operators": len(self.qtree),
            "policy": self.policy.name,
            "disk_bandwidth": self.disk_bandwidth,
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

    def clear(self) -> None:
        """Drop every cached result (except those a live DataFrame reads) and the QTree."""
        self.qtree.clear()
        self.store.clear(keep={k for k, n in self._pins.items() if n > 0})
        self.bridge.forget_reads()

    def close(self) -> None:
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
        record = QueryRecord(sql)
        started = time.perf_counter()
        try:
            planned = _Planner(self, df, record).run()
        except (CrissError, OSError, ValueError) as exc:
            return self._fall_back(df, record, exc)
        except Exception as exc:  # a py4j/JVM failure inside Criss must not fail the query
            if type(exc).__module__.startswith(("py4j", "pyspark")):
                return self._fall_back(df, record, exc)
            raise
        record.planning_seconds = time.perf_counter() - started - record.materialize_seconds
        self._finish(planned, record)
        return planned

    def _fall_back(self, df: DataFrame, record: QueryRecord, exc: BaseException) -> DataFrame:
        message = f"Criss could not plan this query and runs it uncached: {exc}"
        warnings.warn(message, RuntimeWarning, stacklevel=4)
        log.warning(message)
        record.fallback = str(exc)
        self.counters["fallbacks"] += 1
        self._last = record
        self._remember(df, record)
        return df

    def _finish(self, df: DataFrame, record: QueryRecord) -> None:
        self.counters.update(record.counters)
        self._last = record
        self._remember(df, record)
        keys = [op.reused or op.cached for op in record.operators if op.reused or op.cached]
        if keys:
            self._pins.update(keys)
            weakref.finalize(df, self._unpin, keys)

    def _remember(self, df: DataFrame, record: QueryRecord) -> None:
        try:
            self._records[df] = record
        except TypeError:
            pass

    def _unpin(self, keys: list[str]) -> None:
        self._pins.subtract(keys)

    def estimated_texec(self, node: PlanNode) -> float:
        """Seconds to compute ``node`` guessed from its input bytes and the learned scan rate."""
        return node.scanned_bytes / self.scan_rate

    @property
    def scan_rate(self) -> float:
        if self._scan_rate is None:
            self._scan_rate = float(self.qtree.meta("scan_rate", DEFAULT_SCAN_RATE))
        return self._scan_rate

    def learn_scan_rate(self, node: PlanNode, texec: float) -> None:
        """Blend in the input bytes per second of a measured materialization."""
        scanned = node.scanned_bytes
        if scanned and texec > 0:
            self._scan_rate = 0.7 * self.scan_rate + 0.3 * (scanned / texec)
            self.qtree.set_meta("scan_rate", self._scan_rate)

    def _calibrated_bandwidth(self) -> float:
        key = f"bandwidth:{self.store.root}"
        cached = self.qtree.meta(key)
        if cached:
            return float(cached)
        bw = measure_bandwidth(self.store.root / "_tmp")
        self.qtree.set_meta(key, bw)
        return bw


class _Planner:
    """One query's trip through Criss (kept apart so the session stays small)."""

    def __init__(self, session: CrissSession, df: DataFrame, record: QueryRecord) -> None:
        self.s = session
        self.df = df
        self.record = record
        self.replacements: dict[tuple[int, ...], Any] = {}
        self.entries: dict[str, Entry] = {}
        self.reuse_rules: dict[tuple[int, ...], Reuse] = {}

    def run(self) -> DataFrame:
        captured = self.s.bridge.capture(self.df)
        self.record.captured = captured
        tree = fingerprint_tree(canonicalize(captured.tree, self.s._rules))
        self._invalidate_stale(tree)
        observations = self.s.qtree.observe(tree)
        reuse = plan_reuse(tree, self._is_cached, self._cached_relatives)
        for r in reuse:
            self.replacements[r.path] = self._serve(captured, r)
            self.reuse_rules[r.path] = r
        chosen = self._choose(tree, observations, {r.path for r in reuse})
        for node in sorted(chosen, key=lambda n: -len(n.path)):
            self._materialize(captured, node)
        self._explain(tree, observations, {r.path for r in reuse}, {n.path for n in chosen})
        if not self.replacements:
            return self.df
        bridge = self.s.bridge
        return bridge.dataframe_of(bridge.substitute(captured, self.replacements))

    def _read(
        self,
        captured: CapturedPlan,
        path: tuple[int, ...],
        entry: Entry,
        columns: tuple[int, ...] | None = None,
    ) -> Any:
        return self.s.bridge.cached_read_plan(
            captured.node_at(path),
            entry.key,
            entry.created,
            entry.file_paths,
            entry.schema_json,
            columns=columns,
        )

    def _serve(self, captured: CapturedPlan, reuse: Reuse) -> Any:
        """The plan that serves ``reuse.path`` from its cached entry, per rewrite rule."""
        entry = self.entries[reuse.fingerprint]
        if reuse.rule == "exchange-repartition":
            wanted = captured.node_at(reuse.path)
            cached = self._read(captured, reuse.path, entry)
            return wanted.withNewChildren(self.s.bridge.seq([cached]))
        return self._read(captured, reuse.path, entry, reuse.columns)

    def _cached_relatives(self, key: str) -> list[Relative]:
        return [r for r in self.s.qtree.relatives(key) if self._is_cached(r.fingerprint)]

    def _is_cached(self, fingerprint: str) -> bool:
        entry = self.s.store.get(fingerprint)
        if entry is not None:
            self.entries[fingerprint] = entry
        return entry is not None

    def _invalidate_stale(self, tree: PlanNode) -> None:
        relations = {n.relation["key"]: n.relation["version"] for n in tree.leaves() if n.relation}
        stale = self.s.qtree.stale_relations(relations)
        if stale:
            doomed = self.s.qtree.invalidate(stale)
            for fingerprint in doomed:
                self.s.store.delete(fingerprint)
            self.record.counters["invalidated"] += len(doomed)

    # --- selection (paper §1.3) ----------------------------------------------------------------

    def _choose(
        self, tree: PlanNode, obs: dict[str, Observation], reused: set[tuple[int, ...]]
    ) -> list[PlanNode]:
        result_path = result_node(tree).path
        by_key: dict[str, PlanNode] = {}

        def candidate(node: PlanNode) -> Candidate:
            key = "/".join(map(str, node.path))
            by_key[key] = node
            if node.path in reused:
                return Candidate(key, (), None)
            kids = tuple(candidate(c) for c in node.children)
            return Candidate(key, kids, self._score(node, obs, node.path == result_path))

        chosen = best_per_branch(candidate(tree))
        return [by_key[k] for k in chosen]

    def _score(self, node: PlanNode, obs: dict[str, Observation], is_result: bool):
        if not storable(node) or node.fingerprint not in obs:
            return None
        stats = obs[node.fingerprint].stats
        if stats.has_stats:
            return measured_score(self._benefit(stats, self.s.disk_bandwidth))
        recurring = stats.ref >= self.s.options.min_ref
        if (recurring or (is_result and self.s.options.eager_results)) and self._worth_a_job(node):
            return collect_score(stats.ref, node.height)
        return None

    def _worth_a_job(self, node: PlanNode) -> bool:
        """Without statistics, estimate Texec from the bytes the operator scans."""
        return self.s.estimated_texec(node) >= self.s.options.min_texec

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
        if node.fingerprint in self.entries:
            # the same subtree occurs twice in this query: write once, read it at both places
            self.replacements[node.path] = self._read(
                captured, node.path, self.entries[node.fingerprint]
            )
            return
        started = time.perf_counter()
        plan = self.s.bridge.substitute(captured, self.replacements, at=node.path)
        try:
            entry = self._write(self.s.bridge.dataframe_of(plan), node)
        finally:
            self.record.materialize_seconds += time.perf_counter() - started
        self.s.qtree.record_stats(
            node.fingerprint, texec=entry.texec, size_bytes=entry.bytes, rows=entry.rows
        )
        self.s.learn_scan_rate(node, entry.texec)
        self.entries[node.fingerprint] = entry
        self.replacements[node.path] = self._read(captured, node.path, entry)
        self.record.counters["operators_cached"] += 1
        self.record.counters["bytes_written"] += entry.bytes

    def _write(self, df: DataFrame, node: PlanNode) -> Entry:
        from storage.parquet import count_rows

        positional = df.toDF(*[f"c{i}" for i in range(len(df.columns))])
        staged = self.s.store.staging_dir(node.fingerprint)
        started = time.perf_counter()
        positional.write.parquet(str(staged))
        texec = time.perf_counter() - started
        return self.s.store.commit(
            node.fingerprint,
            staged,
            schema_json=positional.schema.json(),
            rows=count_rows(staged),
            texec=texec,
            extra={"op": node.op},
        )

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
                node.path, node.op, node.fingerprint, matched=bool(o and o.matched)
            )
            counters["operators_seen"] += 1
            counters["operators_matched"] += d.matched
            if node.path in reused:
                reuse = self.reuse_rules[node.path]
                d.reused, d.rule = reuse.fingerprint, reuse.rule
                entry = self.entries[reuse.fingerprint]
                if reuse.rule != "exact":
                    counters[f"rewrites_{reuse.rule.replace('-', '_')}"] += 1
                counters["operators_reused"] += 1
                counters["partitions_reused"] += len(entry.files)
                counters["bytes_read"] += entry.bytes
            elif node.path in cached:
                d.cached = node.fingerprint
            else:
                d.why_not = self._why_not(node, o)
            if o and o.stats.has_stats:
                d.benefit = self._benefit(o.stats, self.s.disk_bandwidth)
                d.stats = (
                    f"ref={o.stats.ref} Texec={o.stats.texec:.3f}s "
                    f"size={o.stats.size_bytes}B rows={o.stats.rows}"
                )
            elif o:
                d.stats = f"ref={o.stats.ref} (no statistics yet)"
            self.record.operators.append(d)

    def _why_not(self, node: PlanNode, o: Observation | None) -> str:
        if node.uncacheable:
            return node.uncacheable
        if not storable(node):
            return f"{node.op} results are not stored (cheap to recompute or order-sensitive)"
        if o is None:
            return "not tracked"
        if o.stats.has_stats:
            benefit = self._benefit(o.stats, self.s.disk_bandwidth)
            if benefit <= 0:
                return f"benefit {benefit:.3g} <= 0 with disk bandwidth"
            return "another operator on its branch has a larger benefit"
        estimate = self.s.estimated_texec(node)
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


def _label(record: QueryRecord, d: OperatorDecision) -> str:
    if record.captured is None:
        return d.op
    try:
        return record.captured.label_at(d.path)
    except Exception:  # the JVM is gone (session stopped): the operator name will do
        return d.op


def format_explain(record: QueryRecord) -> str:
    lines = [
        f"Criss plan ({record.counters.get('operators_reused', 0)} reused, "
        f"{record.counters.get('operators_cached', 0)} cached, "
        f"planning {record.planning_seconds * 1000:.0f} ms, "
        f"materializing {record.materialize_seconds:.2f} s)"
    ]
    if record.fallback:
        lines.append(f"  fell back to plain Spark: {record.fallback}")
    for d in record.operators:
        indent = "  " * (len(d.path) + 1)
        state = (
            "REUSED entry " + d.reused[:12] + ("" if d.rule == "exact" else f" via {d.rule}")
            if d.reused
            else "CACHED as " + d.cached[:12]
            if d.cached
            else ("matched" if d.matched else "new") + f"; not cached: {d.why_not}"
        )
        lines.append(
            f"{indent}{_label(record, d)[:80]}  [{d.fingerprint[:12]}] {state}"
            + (f"  ({d.stats})" if d.stats else "")
        )
    return "\n".join(lines)
