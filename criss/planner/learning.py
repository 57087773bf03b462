"""Learned from what ran: statistics of every executed operator (the user's own actions,
reported by Spark's execution listener, and Criss's jobs), and the rates behind first-sight
estimates: seconds per stage, input bytes per second, Parquet bytes per row byte and result
bytes per input byte. Executed plans are read in the background.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Collection, Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from criss.planner.executions import ExecutionFacts
from criss.policies.decisions import FIRST_SIGHT_SECONDS
from criss.policies.first_sight import expected_more
from criss.qtree.plan import PlanNode
from criss.qtree.tree import QTree

log = logging.getLogger("criss")

#: Input bytes per second of compute assumed before any execution has been measured: 64 MB/s
#: of table file bytes, as assumed while whole files counted, times the share of them the
#: columns read are (criss.qtree.scans): 0.25 over the 22 TPC-H queries at SF 1 (1.49 GB
#: of 5.94 GB; per query 0.12-0.61).
DEFAULT_SCAN_RATE = 16e6
#: Seconds Spark spends per stage outside its operators' own work (scheduling, task
#: launch, shuffle fetch, planning) before any execution has been measured; local mode
#: measured 0.03-0.15 s.
DEFAULT_STAGE_SECONDS = 0.1
#: Result bytes (as Parquet) per input byte assumed before any query result was measured:
#: 0.01 of table file bytes, as assumed while whole files counted, over the share of them
#: the columns read are (0.25, see ``DEFAULT_SCAN_RATE``).
DEFAULT_RESULT_RATIO = 0.04
#: Bytes of Parquet per byte of Spark's default row width (learned from every write; TPC-H
#: intermediates measured 0.1-0.3 at SF1).
DEFAULT_PARQUET_RATIO = 0.25
PARQUET_RATIO_MIN_BYTES = 1 << 20
#: Writes of results from which the write bandwidth is learned: big enough that a write's
#: fixed cost (a job, a file) does not dominate its seconds per byte.
WRITE_BANDWIDTH_MIN_BYTES = 1 << 20
#: Reads of cached entries from which the read bandwidth is learned (as for writes).
READ_BANDWIDTH_MIN_BYTES = 1 << 20
#: Seconds per value (row × column) of handing a cached entry's rows to Spark as a local
#: relation, assumed before any was measured (TPC-H Q17's per-part average at SF 1: 0.18 s
#: for 200,000 rows of two columns), and the reads it is learned from (smaller ones are
#: mostly fixed cost).
DEFAULT_LOCAL_VALUE_SECONDS = 0.5e-6
LOCAL_READ_MIN_VALUES = 50_000
#: Weight of a new observation in the learned rates' moving averages.
_BLEND = 0.3
#: Queries whose result had been seen before are counted with this weight per query's
#: age in queries (about the last 50 count), so the count follows a workload that changes.
_REPEAT_DECAY = 1 - 1 / 50
#: Repeats and queries assumed before any was counted: one in two, so a new home caches
#: first-seen results eagerly, and a handful of first sights in a row outweigh it.
_PRIOR_REPEATS, _PRIOR_QUERIES = 1.0, 2.0
#: A lifted aggregate's Texec ÷ the aggregate's, assumed before any lift was measured: the
#: lifts of the TPC-H drift streams at SF 1 whose conditions drop most rows (Q4, Q5, Q12)
#: took 1.5-2.6x their query (experiments/results/issue20/session13/).
DEFAULT_LIFT_COST_RATIO = 2.0
#: A lifted aggregate's Texec ÷ the aggregate's, over the ratio of the rows its operators
#: take in (criss.policies.lifting.work_ratio), assumed before any lift was measured: TPC-H's
#: lifts at SF 1 measured 1.23 (Q1), 1.31 (Q5), 1.59 (Q4) and 1.53-1.85 (Q14) times their
#: rows' ratio (experiments/results/issue20/session55/).
DEFAULT_LIFT_ROWS_OVERHEAD = 1.5
#: QTree meta: lifted result fingerprint → {"texec": the aggregate's Texec it replaced,
#: "learn": whether its measured ratio teaches the cost ratio, "rows_ratio": the ratio of
#: rows it was weighed at (None: unknown), "measured": whether it taught them}.
LIFTED_RESULTS = "lift.results"
#: QTree meta: {"queries": queries planned since the first pending one, "pending": the
#: measured operators under a result cached by their benefit that no query read yet, each
#: with the query that cached it}.
REREADS_PENDING = "reread.pending"
#: Queries after which such an operator that none of them read counts as not read again.
REREAD_WINDOW = 20
_REREADS = ("recent_rereads", "recent_reread_chances")
#: QTree meta: as REREADS_PENDING, for the shared bases cached (criss.policies.selection).
BASE_READS_PENDING = "base_read.pending"
_BASE_READS = ("recent_base_reads", "recent_base_read_chances")


class Learning:
    """The session's learned rates (kept in the QTree's meta table) and its harvests."""

    def __init__(self, qtree: QTree) -> None:
        self.qtree = qtree
        self._rates: dict[str, float] = {}
        #: REREADS_PENDING and BASE_READS_PENDING, each read from the QTree once and written
        #: through (as the rates).
        self._pending_reads: dict[str, dict[str, Any]] = {}
        self._harvester: ThreadPoolExecutor | None = None
        self._harvests: list[tuple[Future, frozenset[str] | None]] = []
        self._lock = threading.Lock()
        #: Background seconds spent reading statistics off executed plans.
        self.harvest_seconds = 0.0
        #: Executions (the user's actions and Criss's jobs) read back.
        self.executions_read = 0
        #: Seconds the user's tasks spent writing results through (apart from Texec).
        self.write_seconds = 0.0
        self._written: list[ExecutionFacts] = []
        #: Join key measurements stored (run after an action, see ExecutionFacts.measured).
        self.measurements = 0

    def _rate(self, name: str, default: float) -> float:
        if name not in self._rates:
            self._rates[name] = float(self.qtree.meta(name, default))
        return self._rates[name]

    def _blend(self, name: str, default: float, observed: float) -> None:
        self._rates[name] = (1 - _BLEND) * self._rate(name, default) + _BLEND * observed
        self.qtree.set_meta(name, self._rates[name])

    @property
    def repeat_share(self) -> float:
        """Share of the recent queries whose result had been seen before (counted in the
        home: a new application starts from what the last one saw)."""
        return self._recent_share(("recent_repeats", "recent_queries"))

    @property
    def expected_repeats(self) -> float:
        """Repeats a first-seen result can expect: recent repeats per recent first sight."""
        return expected_more(self.repeat_share)

    def learn_repeat(self, repeated: bool) -> None:
        """Count a query whose result had (or had not) been seen before it."""
        self._count_recent(("recent_repeats", "recent_queries"), repeated)

    @property
    def new_values_share(self) -> float:
        """Share of the recent queries of a template seen before that came under values not
        seen before (one in two assumed before any was counted, as for repeats): near 0
        where analysts re-run the same statements, near 1 where parameters drift."""
        return self._recent_share(("recent_template_new_values", "recent_template_returns"))

    def learn_template_return(self, new_values: bool) -> None:
        """Count a query whose template had been seen before, under other values or not."""
        self._count_recent(("recent_template_new_values", "recent_template_returns"), new_values)

    @property
    def expected_parameter_free_reuses(self) -> float:
        """Reuses a parameter-free aggregate first seen in a new statement can expect from
        other statements (criss.qtree.parameters): how often one of a new statement's had
        been seen before, over the recent queries. Such chances are few (a new statement
        with one), so :attr:`new_values_share` counts as ``_PRIOR_QUERIES`` more of them:
        another statement shares the aggregate only if templates come back under other
        values, which every query of a template seen before tells (a stream that repeats
        its statements teaches it with its repeats, where its own chances come rarely)."""
        prior = _PRIOR_QUERIES * self.new_values_share
        seen = self._rate("recent_parameter_free_seen", 0.0) + prior
        share = seen / (self._rate("recent_parameter_free", 0.0) + _PRIOR_QUERIES)
        return expected_more(share)

    def learn_parameter_free(self, seen_before: bool) -> None:
        """Count a parameter-free aggregate of a new statement that had (or had not) been
        seen before, in another statement."""
        self._count_recent(("recent_parameter_free_seen", "recent_parameter_free"), seen_before)

    @property
    def reread_share(self) -> float:
        """Share of the recent measured operators under a result, cached by their benefit,
        that a query read within ``REREAD_WINDOW`` queries (one in two assumed besides):
        how well having been seen twice foretells another read here."""
        return self._recent_share(_REREADS)

    @property
    def expected_rereads(self) -> float:
        return expected_more(self.reread_share)

    def learn_rereads(self, cached: Collection[str], read: Collection[str]) -> None:
        """Count one planned query: the pending operators it ``read`` (entry keys) as read
        again, those pending for more than ``REREAD_WINDOW`` queries as not, and the
        measured operators under its result it ``cached`` as pending."""
        self._learn_reads(REREADS_PENDING, _REREADS, cached, read)

    @property
    def base_read_share(self) -> float:
        """Share of the recent shared bases cached here that a query read within
        ``REREAD_WINDOW`` queries (one in two assumed besides): how often queries here
        change something above a subtree they share with an earlier one."""
        return self._recent_share(_BASE_READS)

    @property
    def expected_base_reads(self) -> float:
        return expected_more(self.base_read_share)

    def learn_base_reads(self, cached: Collection[str], read: Collection[str]) -> None:
        """As :meth:`learn_rereads`, for the shared bases a query ``cached``."""
        self._learn_reads(BASE_READS_PENDING, _BASE_READS, cached, read)

    def _learn_reads(
        self, meta: str, counts: tuple[str, str], cached: Collection[str], read: Collection[str]
    ) -> None:
        """Count one planned query for the pending entries kept under ``meta``: those it
        ``read`` as read again, those pending for more than ``REREAD_WINDOW`` queries as
        not (in the recent ``counts``), and those it ``cached`` as pending."""
        state = self._pending_reads.get(meta)
        if state is None:
            state = self.qtree.meta(meta) or {"queries": 0, "pending": {}}
            self._pending_reads[meta] = state
        pending: dict[str, int] = dict(state["pending"])
        if not pending and not cached:
            return
        queries = state["queries"] + 1
        for key in read:
            if pending.pop(key, None) is not None:
                self._count_recent(counts, True)
        for key, at in list(pending.items()):
            if queries - at > REREAD_WINDOW:
                del pending[key]
                self._count_recent(counts, False)
        pending.update(dict.fromkeys(cached, queries))
        self._pending_reads[meta] = {"queries": queries, "pending": pending}
        self.qtree.set_meta(meta, self._pending_reads[meta])

    def _recent_share(self, names: tuple[str, str]) -> float:
        """Hits over chances of the recent counts ``names``, one in two assumed besides."""
        hits, chances = (self._rate(name, 0.0) for name in names)
        return (hits + _PRIOR_REPEATS) / (chances + _PRIOR_QUERIES)

    def _count_recent(self, names: tuple[str, str], hit: bool) -> None:
        """Decay the recent counts ``names`` (hits, chances) and count one chance."""
        for name, add in zip(names, (float(hit), 1.0), strict=True):
            self._rates[name] = self._rate(name, 0.0) * _REPEAT_DECAY + add
            self.qtree.set_meta(name, self._rates[name])

    @property
    def lift_cost_ratio(self) -> tuple[float, str]:
        """A lifted aggregate's Texec ÷ the aggregate's, as the lifts so far measured it
        (``measured``) or as assumed before any (``estimate``)."""
        ratio = self._rate("lift_cost_ratio", DEFAULT_LIFT_COST_RATIO)
        return ratio, "measured" if self.qtree.meta("lift_cost_ratio") is not None else "estimate"

    @property
    def lift_rows_overhead(self) -> tuple[float, str]:
        """What lifts cost beyond the ratio of the rows their operators take in, as the lifts
        so far measured it (``rows``) or as assumed before any (``rows_estimate``)."""
        overhead = self._rate("lift_rows_overhead", DEFAULT_LIFT_ROWS_OVERHEAD)
        measured = self.qtree.meta("lift_rows_overhead") is not None
        return overhead, "rows" if measured else "rows_estimate"

    def expected_parameter_values(self, level: int = 2, asking: str | None = None) -> float:
        """New values ``asking``, seen under ``level`` >= 2, can expect: how often one seen
        under two or more saw another (by subsumption key, one in two assumed besides); past
        two, how often one of another template under ``level`` or more did (that as two more)."""
        lifted = self.lifted_results()
        continued, reached = self.qtree.parameter_recurrence(lifted)
        share = (continued + _PRIOR_REPEATS) / (reached + _PRIOR_QUERIES)
        if level > 2:
            continued, reached = self.qtree.parameter_recurrence(lifted, level, asking)
            share = (continued + _PRIOR_QUERIES * share) / (reached + _PRIOR_QUERIES)
        return expected_more(share)

    def lifted_results(self) -> dict[str, dict[str, Any]]:
        return dict(self.qtree.meta(LIFTED_RESULTS) or {})

    def note_lift(
        self, fingerprint: str, texec: float, *, learn: bool, rows_ratio: float | None = None
    ) -> None:
        """Remember a lifted result, the Texec of the aggregate it replaced and the ratio of
        rows it was weighed at. Once measured, its cost ratio over ``rows_ratio`` teaches
        :attr:`lift_rows_overhead`, and its cost ratio itself teaches :attr:`lift_cost_ratio`
        if ``learn`` (a lift the prior decided: where the rows decided, or the selectivity
        of its conditions bounded it, its ratio says nothing of the others')."""
        lifted = self.lifted_results()
        lifted[fingerprint] = {
            "texec": texec,
            "learn": learn,
            "rows_ratio": rows_ratio,
            "measured": False,
        }
        self.qtree.set_meta(LIFTED_RESULTS, lifted)

    def learn_lift_costs(self) -> int:
        """Blend in the cost ratio of every lift measured since (and forget the lifted
        results the QTree forgot); how many taught a rate."""
        lifted = self.lifted_results()
        known = self.qtree.get_many(lifted)
        kept = {fp: lift for fp, lift in lifted.items() if fp in known}
        learned, changed = 0, len(kept) < len(lifted)
        for fingerprint, lift in kept.items():
            texec = known[fingerprint].texec
            if lift["measured"] or not texec or lift["texec"] <= 0:
                continue
            lift["measured"] = changed = True
            ratio = min(max(texec / lift["texec"], 1.0), 100.0)
            rows_ratio = lift.get("rows_ratio")
            if rows_ratio:
                overhead = min(max(ratio / rows_ratio, 1.0), 100.0)
                self._blend("lift_rows_overhead", DEFAULT_LIFT_ROWS_OVERHEAD, overhead)
            if lift["learn"]:
                self._blend("lift_cost_ratio", DEFAULT_LIFT_COST_RATIO, ratio)
            learned += bool(rows_ratio) or bool(lift["learn"])
        if changed:
            self.qtree.set_meta(LIFTED_RESULTS, kept)
        return learned

    @property
    def scan_rate(self) -> float:
        """Input bytes per second of the operators' own work."""
        return self._rate("scan_rate", DEFAULT_SCAN_RATE)

    @property
    def parquet_ratio(self) -> float:
        return self._rate("parquet_ratio", DEFAULT_PARQUET_RATIO)

    @property
    def stage_seconds(self) -> float:
        """Seconds per stage spent outside the operators' own work."""
        return self._rate("stage_seconds", DEFAULT_STAGE_SECONDS)

    @property
    def local_read_values(self) -> int:
        """Most values (rows × columns) a cached entry may hold to be read on the driver and
        handed to Spark as a local relation: as many as that takes in the time a stage of a
        read job costs (the learned seconds per stage)."""
        seconds = self._rate("local_value_seconds", DEFAULT_LOCAL_VALUE_SECONDS)
        return int(self.stage_seconds / max(seconds, 1e-12))

    def learn_local_read(self, values: int, seconds: float) -> None:
        """Blend in the seconds per value of one entry read on the driver (at least
        ``LOCAL_READ_MIN_VALUES``)."""
        if values >= LOCAL_READ_MIN_VALUES and seconds > 0:
            self._blend("local_value_seconds", DEFAULT_LOCAL_VALUE_SECONDS, seconds / values)

    @property
    def result_ratio(self) -> float:
        """Bytes of a query's result per byte of input it read."""
        return self._rate("result_ratio", DEFAULT_RESULT_RATIO)

    def learn_scan_rate(
        self, node: PlanNode, texec: float, served: Iterable[tuple[int, ...]] = ()
    ) -> None:
        """Blend in the input bytes per second of a measured materialization. Table bytes
        under ``served`` paths were not read (the cache stood in for them): counting them
        would inflate the rate, and every later estimate would fall below ``min_texec``."""
        scanned = node.scanned_bytes_outside(served)
        if scanned and texec > 0:
            self._blend("scan_rate", DEFAULT_SCAN_RATE, scanned / texec)

    @property
    def write_bandwidth(self) -> float | None:
        """Bytes per second Criss's writes of results reached (from the action's cache to
        the tier's files: reading the cached blocks, encoding Parquet, storing the files),
        None before the first big enough write was measured."""
        return self._rate("write_bandwidth", 0.0) or None

    def learn_write_bandwidth(self, size_bytes: int, seconds: float) -> None:
        """Blend in the bytes per second of one measured write of a whole result (at least
        ``WRITE_BANDWIDTH_MIN_BYTES``); the first measured one is taken as it is."""
        self._learn_bandwidth("write_bandwidth", WRITE_BANDWIDTH_MIN_BYTES, size_bytes, seconds)

    def _learn_bandwidth(self, name: str, min_bytes: int, size_bytes: int, seconds: float) -> None:
        if size_bytes < min_bytes or seconds <= 0:
            return
        observed = size_bytes / seconds
        if not self._rate(name, 0.0):
            self._rates[name] = observed
            self.qtree.set_meta(name, observed)
        else:
            self._blend(name, observed, observed)

    @property
    def read_bandwidth(self) -> float | None:
        """Bytes per second the queries reading cached entries back read them at (their
        scans' own time: the files' medium and Parquet decoding), None before the first big
        enough read was measured."""
        return self._rate("read_bandwidth", 0.0) or None

    def learn_read_bandwidth(self, size_bytes: int, seconds: float) -> None:
        """Blend in the bytes per second of one action's reads of cached entries (at least
        ``READ_BANDWIDTH_MIN_BYTES``); the first measured one is taken as it is."""
        self._learn_bandwidth("read_bandwidth", READ_BANDWIDTH_MIN_BYTES, size_bytes, seconds)

    def learn_parquet_ratio(self, rows: int, row_width: int, size_bytes: int) -> None:
        """Blend in the Parquet bytes per default-width byte of a measured write (big
        enough that file footers do not dominate)."""
        if rows > 0 and row_width > 0 and size_bytes >= PARQUET_RATIO_MIN_BYTES:
            ratio = min(max(size_bytes / (rows * row_width), 0.02), 4.0)
            self._blend("parquet_ratio", DEFAULT_PARQUET_RATIO, ratio)

    def learn_from_run(self, facts: ExecutionFacts) -> None:
        """Blend in the per-stage seconds, input rate and result ratio of one execution."""
        if facts.seconds <= 0 or facts.stages <= 0:
            return
        overhead = max(facts.seconds - facts.compute_seconds, 0.0)
        self._blend("stage_seconds", DEFAULT_STAGE_SECONDS, overhead / facts.stages)
        if facts.scanned_bytes and facts.compute_seconds > 0:
            rate = facts.scanned_bytes / facts.compute_seconds
            self._blend("scan_rate", DEFAULT_SCAN_RATE, rate)
            if facts.result_bytes is not None:
                self.learn_result_ratio(facts.result_bytes, facts.scanned_bytes)

    def learn_result_ratio(self, result_bytes: float, scanned_bytes: int) -> None:
        """Blend in a query result's bytes per byte of input it read: from an executed
        plan, or exact, from the files of a result cached as it was computed."""
        if scanned_bytes > 0:
            ratio = min(max(result_bytes / scanned_bytes, 1e-6), 4.0)
            self._blend("result_ratio", DEFAULT_RESULT_RATIO, ratio)

    @property
    def first_sight_seconds(self) -> float:
        """Seconds caching a first-seen result adds to its query: the planning that
        prepares Spark's cache of it, as measured here (assumed before any was)."""
        return self._rate("first_sight_seconds", FIRST_SIGHT_SECONDS)

    def learn_first_sight_seconds(self, seconds: float) -> None:
        """Blend in what preparing one result for Spark's cache took while planning."""
        if seconds >= 0:
            self._blend("first_sight_seconds", FIRST_SIGHT_SECONDS, seconds)

    def harvest_later(
        self,
        read: Callable[[float], ExecutionFacts | None],
        fingerprints: Collection[str] | None = None,
    ) -> None:
        """Run ``read(parquet_ratio)`` (statistics off an executed plan) in the background;
        :meth:`settle` stores what it returns. ``fingerprints``: the operators it may give
        statistics to, when known beforehand. Safe to call from any thread (Spark's
        listener reports from its own)."""
        with self._lock:
            if self._harvester is None:
                self._harvester = ThreadPoolExecutor(1, thread_name_prefix="criss-harvest")
            future = self._harvester.submit(_timed, read, self.parquet_ratio)
            known = None if fingerprints is None else frozenset(fingerprints)
            self._harvests.append((future, known))

    def settle(self, needed: Collection[str] | None = None) -> int:
        """Store the statistics read in the background; how many operators got some.

        Waits for the reads still running that may hold statistics of ``needed``
        fingerprints (all reads when None); the others are stored if done, else later.
        """
        with self._lock:
            pending, self._harvests = self._harvests, []
        stored, later = 0, []
        for future, known in pending:
            wait = needed is None or (known is not None and not known.isdisjoint(needed))
            if wait or future.done():
                stored += self._store(future)
            else:
                later.append((future, known))
        with self._lock:
            self._harvests[:0] = later
        return stored

    def _store(self, future: Future) -> int:
        try:
            facts, seconds = future.result()
        except Exception as exc:  # any failure of a background read only costs statistics
            log.info("no statistics from an executed plan: %s", exc)
            return 0
        self.harvest_seconds += seconds
        if facts is None:
            return 0
        self.executions_read += bool(facts.statistics) or not (
            facts.written or facts.cached or facts.measured
        )
        self.qtree.record_executions(facts.statistics)
        for key, found in facts.measured.items():
            known = self.qtree.meta(key) or {"rows": None, "ndv": {}}
            ndv = {**known["ndv"], **found["ndv"]}
            self.qtree.set_meta(key, {"rows": found["rows"], "ndv": ndv})
            self.measurements += 1
        self.learn_from_run(facts)
        self.learn_read_bandwidth(facts.cache_read_bytes, facts.cache_read_seconds)
        if facts.written or facts.cached:
            self._written.append(facts)
        return len(facts.statistics)

    def take_written(self) -> list[ExecutionFacts]:
        """The settled executions whose write-through steps wrote partitions (once each)."""
        written, self._written = self._written, []
        return written

    def idle(self) -> bool:
        """Whether no read of an executed plan is waiting to be settled."""
        with self._lock:
            return not self._harvests

    def close(self) -> None:
        self.settle()
        if self._harvester is not None:
            self._harvester.shutdown()


def _timed(read: Callable[[float], Any], ratio: float) -> tuple[Any, float]:
    started = time.perf_counter()
    return read(ratio), time.perf_counter() - started
