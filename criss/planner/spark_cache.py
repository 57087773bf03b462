"""Act, part two (the default): the user's own action computes what was chosen, into Spark's
cache, and Criss writes it from there after the action.

Nothing runs in ``cs.sql()``: the plan handed out reads each chosen operator through a
relation of Spark's columnar cache over the operator's own plan
(``criss.bridge.spark_cache``), so the action runs every stage as plain Spark would and
fills the cache on the way. When Spark reports the action, a background task writes the
partitions the cache holds (all after ``collect()``, some after ``show()``) with the layout
the action's final stage ran with, and the next query, or ``report()``, commits them as the
entry's bitmap. Nothing is committed before its file is written, and the rows are those of
the files the query was planned with.

Measured at SF 1 over the 22 TPC-H templates seen first (``results/issue22/session16``):
1.00-1.05x plain Spark, against 1.08-1.09x when the stages below the result ran in
``cs.sql()`` and the final one in the action.
"""

from __future__ import annotations

import logging
import time
import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from criss.bridge.spark_cache import CachedResult
from criss.planner.executions import ExecutionFacts
from criss.planner.materialize import (
    computed_below,
    planned_below,
    query_result_input,
    result_facts,
    unmeasured,
)
from criss.planner.workspace import Workspace
from criss.planner.writethrough import entry_for_written
from criss.qtree.executed import PlannedQuery
from criss.qtree.plan import PlanNode
from criss.qtree.rewrite import result_node
from criss.storage.staging import Staged

if TYPE_CHECKING:
    from criss.bridge import FinishedExecution
    from criss.engine import CrissSession

log = logging.getLogger("criss")


@dataclass
class PendingCache:
    """A result handed out to be computed into Spark's cache, not (fully) written yet."""

    token: str
    key: str
    node: PlanNode
    cached: CachedResult
    #: Seconds ``cs.sql()`` spent preparing it (the action computes it all: its Texec is
    #: the action's).
    prepare_seconds: float
    #: Paths the query served from the cache (their table bytes were not read).
    served: tuple[tuple[int, ...], ...]
    #: Operators under it that lack statistics: the next query that has one of them
    #: waits for the executed plan to give them some.
    unmeasured: frozenset[str]
    #: Operators under it that the action computes: the executed plan measures each.
    computed: frozenset[str] = frozenset()
    #: The query's operators under it as planned, where the cache served some of them
    #: (those above are measured under their planned fingerprints).
    planned: PlannedQuery | None = None
    #: Input bytes the query read for it, when it is the query's result (None otherwise):
    #: its size once written teaches the result bytes per input byte.
    scanned: int | None = None
    record: Any = field(default=None, repr=False)
    #: The DataFrame handed out: its action's execution id and its plan's JVM identity
    #: (see criss.bridge.execution_id, plan_identity), once known.
    execution_id: int | None = None
    identity: int | None = None
    #: Partitions written so far (by the background task, which alone changes it).
    written: set[int] = field(default_factory=set)
    #: Partitions whose written files were offered to the cache (by the session's thread).
    committed: set[int] = field(default_factory=set)
    #: A write was made (by the background task; a result of no partitions has one write,
    #: of nothing) and offered to the cache (by the session's thread).
    wrote: bool = False
    offered: bool = False
    #: The DataFrame handed out is gone: no action can cache more partitions.
    released: bool = False
    #: Freed from Spark's cache; nothing more will be written.
    finished: bool = False
    #: For a result no user asked for (a lifted aggregate): the most rows it may have, and
    #: the QTree meta key that refuses it for good when it has more (it is then dropped).
    max_rows: int | None = None
    refusal: str | None = None
    #: For an operator under the query's result: its Texec as an executed plan measured it
    #: (its share of a run that computed it without caching it), if one did.
    measured_texec: float | None = None

    def texec(self, action_seconds: float) -> float:
        """The Texec to keep for it: the action's seconds (and cs.sql()'s) for a result the
        action ends with; for an operator under the result, the Texec measured for it
        before, as the action also ran the operators above it (the action's seconds only
        bound it when none was measured)."""
        if self.measured_texec is not None:
            return self.measured_texec
        return self.prepare_seconds + action_seconds


@dataclass(frozen=True)
class CachedWrite:
    """Partitions a background task wrote from Spark's cache for one pending result."""

    token: str
    staged: Staged
    indices: list[int]
    #: Seconds of the action that computed them (Spark's own measure).
    action_seconds: float
    on_driver: bool
    #: Seconds writing them from Spark's cache into the staged files took.
    write_seconds: float = 0.0


def cache_in_action(work: Workspace, nodes: list[PlanNode]) -> str | None:
    """Hand out ``nodes``' results read from Spark's cache, which the user's action fills;
    None, or why that cannot be done (nothing was changed: a job writes them)."""
    refused = cannot_cache_in_action(work.session)
    if refused is not None:
        return refused
    placed: dict[str, CachedResult] = {}
    for node in nodes:  # deepest first: a higher result's plan reads the lower one's cache
        key = node.fingerprint
        at = computed_at(work.matched.tree, node)
        if key not in placed:
            placed[key] = prepare_cached(work, node, at)
        original = work.captured.node_at(at)
        work.replacements[at] = placed[key].plan_for(original)
    return None


def cannot_cache_in_action(session: CrissSession) -> str | None:
    """Why the user's action cannot compute a result into Spark's cache for Criss to
    write, or None when it can."""
    if not session.options.cache_in_action:
        return "caching in the action is off (cache_in_action=False)"
    if session.listener is None:
        return "no execution listener: Spark could not report the action"
    return None


def computes_in_action(session: CrissSession) -> bool:
    """Whether the user's action computes what Criss chose (through write-through steps or
    into Spark's cache), rather than a job of Criss's own."""
    return session.options.write_through or cannot_cache_in_action(session) is None


def builds_spark_cache_in_action(session: CrissSession) -> bool:
    """Whether the user's action computes what Criss chose into Spark's cache (neither
    write-through steps, which write it from the action's own tasks, nor a job of Criss's
    own)."""
    return not session.options.write_through and cannot_cache_in_action(session) is None


def computed_at(root: PlanNode, node: PlanNode) -> tuple[int, ...]:
    """The path whose plan fills ``node``'s cache: the query's final Sort when ``node`` is
    right under it (the same rows, sorted as the user asked), else ``node``'s own.

    Caching the whole statement hands the user a plan with nothing above the cache, which
    runs exactly as plain Spark's; under the Sort, the sort would read the cache in a stage
    of its own. A Sort under a limit stays above the cache: Spark takes the first rows of
    an ordering without sorting them all."""
    if len(node.path) == 1 and root.op == "Sort":
        return ()
    return node.path


def prepare_cached(
    work: Workspace,
    node: PlanNode,
    at: tuple[int, ...],
    *,
    query_result: bool = True,
    max_rows: int | None = None,
    refusal: str | None = None,
) -> CachedResult:
    """A relation of Spark's cache over the plan at ``at`` (``node``'s rows), which the
    action will fill. ``query_result``: False for a result no user asked for (a lifted
    aggregate), whose size says nothing of what queries return; such a result of more
    than ``max_rows`` rows is dropped once computed, and refused for good under the QTree
    meta key ``refusal``."""
    started = time.perf_counter()
    token = uuid.uuid4().hex[:16]
    with work.record.timed("prepare"):
        cached = CachedResult(work.session.bridge, work.frame_at(at), f"criss-{token}")
    work.counters["operators_cached_in_action"] += 1
    scanned = query_result_input(work, node) if query_result else None
    under_result = query_result and node.path != result_node(work.matched.tree).path
    computed = computed_below(work, node)
    pending = PendingCache(
        token=token,
        key=node.fingerprint,
        node=node,
        cached=cached,
        prepare_seconds=time.perf_counter() - started,
        served=tuple(work.replacements),
        unmeasured=unmeasured(work, computed),
        computed=computed,
        planned=planned_below(work, node),
        scanned=scanned,
        record=work.record,
        max_rows=max_rows,
        refusal=refusal,
        # (a result over what the cache serves has no scanned bytes, and is still the result)
        measured_texec=_measured_texec(work, node) if under_result else None,
    )
    if query_result:  # what caching a result on first sight costs, as the decisions price it
        work.session.learning.learn_first_sight_seconds(pending.prepare_seconds)
    work.lease.caches.append(pending)
    return cached


def _measured_texec(work: Workspace, node: PlanNode) -> float | None:
    """``node``'s Texec as measured before this query (None if it never was)."""
    seen = work.matched.observations.get(node.fingerprint)
    return seen.stats.texec if seen is not None and seen.stats.has_stats else None


def write_cached(
    session: CrissSession,
    pending: list[PendingCache],
    finished: FinishedExecution,
    parquet_ratio: float,
) -> ExecutionFacts | None:
    """After the action ``finished``, write the partitions Spark's cache holds that are
    not written yet (in the background), and read statistics of the operators under a
    result once all of it has run.

    A result partly in the cache is written only after an action on its own DataFrame
    (a ``show()``), or once that DataFrame is gone: another action may end while the
    result's own is still filling the cache.
    """
    action_seconds = finished.seconds
    writes: list[CachedWrite] = []
    facts = ExecutionFacts(seconds=action_seconds)
    for item in pending:
        if item.finished:
            continue
        count = item.cached.num_partitions
        if count is None:  # no action computed it yet
            continue
        cached = item.cached.cached_partitions()
        if len(cached) < count and not (item.released or _ran_on(session, item, finished)):
            continue
        indices = [i for i in cached if i not in item.written]
        if not indices and (count or item.wrote):
            continue
        staged = session.cache.staging_dir(item.key)
        started = time.perf_counter()
        try:
            on_driver = bool(indices) and item.cached.write(staged, indices)
        except Exception:
            session.cache.staging.remove(staged)
            raise
        seconds = time.perf_counter() - started
        item.written.update(indices)
        item.wrote = True
        writes.append(CachedWrite(item.token, staged, indices, action_seconds, on_driver, seconds))
        if len(item.written) == count:
            item.cached.unpersist()  # its files hold it now: free Spark's memory at once
        if len(indices) == count and item.computed:
            texec = item.texec(action_seconds)
            ran = result_facts(
                session, item.cached, item.computed, texec, parquet_ratio, item.planned
            )
            facts.statistics.update(ran.statistics)
            facts.cache_read_bytes += ran.cache_read_bytes
            facts.cache_read_seconds += ran.cache_read_seconds
    if not writes:
        return None
    facts.cached = writes
    return facts


def _ran_on(session: CrissSession, item: PendingCache, finished: FinishedExecution) -> bool:
    """Whether ``finished`` was an action on ``item``'s DataFrame (or one built on it)."""
    if item.execution_id is not None and finished.execution_id == item.execution_id:
        return True
    return item.identity is not None and finished.built_on(session.bridge, {item.identity})


def commit_cached(session: CrissSession, pending: PendingCache, write: CachedWrite) -> int:
    """Cache the partitions ``write`` holds as ``pending``'s entry; how many were stored.

    A new entry is opened with the layout the stages ran with; an entry of that layout
    that lacks partitions gets the ones it lacks; an entry cached meanwhile under another
    layout is kept as it is.
    """
    try:
        if pending.finished:
            return 0
        return _store(session, pending, write)
    finally:
        pending.committed.update(write.indices)
        pending.offered = True
        session.cache.staging.remove(write.staged)


def _store(session: CrissSession, pending: PendingCache, write: CachedWrite) -> int:
    cache, cached = session.cache, pending.cached
    everything = len(write.indices) == cached.num_partitions
    texec = pending.texec(write.action_seconds)
    opening = entry_for_written(
        cache,
        pending.key,
        (cached.num_partitions, cached.layout),
        cache.staging.files(write.staged, write.indices),
        op=pending.node.op,
        schema_json=cached.schema_json,
        texec=texec,
    )
    if opening is None:
        return 0
    entry, files, opened = opening
    started = time.perf_counter()
    stored = cache.store_files(entry, files)
    store_seconds = time.perf_counter() - started
    if pending.max_rows is not None and stored.rows > pending.max_rows:
        # larger than it may be, it would only take room: dropped, and never tried again
        if pending.refusal is not None:
            session.qtree.set_meta(pending.refusal, "too large")
        cache.delete(pending.key)
        return 0
    session.written_through(
        pending.record,
        {
            "operators_cached": int(opened and bool(stored.stored or not files)),
            "partitions_cached_in_action": len(stored.stored),
            "entries_written_on_driver": int(write.on_driver),
            "bytes_written": stored.bytes_written,
        },
    )
    if everything and len(stored.stored) == cached.num_partitions:
        _learn(session, pending, texec, stored, write.write_seconds + store_seconds)
    return len(stored.stored)


def _learn(
    session: CrissSession, pending: PendingCache, texec: float, stored: Any, write_seconds: float
) -> None:
    """The whole result, measured: its Texec (see ``PendingCache.texec``), its size as
    stored (and, for a query's result, its size per input byte), and what writing it took."""
    learning = session.learning
    session.qtree.record_stats(pending.key, texec=texec, size_bytes=stored.bytes, rows=stored.rows)
    learning.learn_scan_rate(pending.node, texec, pending.served)
    learning.learn_parquet_ratio(stored.rows, pending.cached.row_width, stored.bytes)
    learning.learn_write_bandwidth(stored.bytes, write_seconds)
    if pending.scanned is not None:
        learning.learn_result_ratio(stored.bytes, pending.scanned)


def fully_committed(pending: PendingCache) -> bool:
    """Whether every partition of ``pending`` was written and offered to the cache."""
    if not pending.offered:  # nothing written yet (and no look for the cache's partitions)
        return False
    return len(pending.committed) == pending.cached.num_partitions


def release_cached(pending: PendingCache) -> None:
    """Free ``pending``'s blocks in Spark's cache: nothing more of it will be written."""
    pending.finished = True
    pending.cached.unpersist()
