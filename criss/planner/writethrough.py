"""Act, part two (first choice): cache what the decisions chose as the user's action runs.

Each chosen operator gets a write-through step in the plan handed out, so the tasks of the
user's own action write its partitions: no job of Criss's own, and a first occurrence
costs what plain Spark costs plus the write. Nothing is cached at planning time; when
Spark reports the action, :func:`commit_written` turns the partitions its tasks finished
into a cache entry (all of them after ``collect()``, some after ``show()``: the bitmap says
which, and the next query recomputes the rest when the layout allows).

Where a step cannot stand (a type Arrow may change, duplicate column names, a Union
above that renumbers partitions), the chosen operators are materialized by a job as before,
and the query's record says why.
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from criss.bridge import WrittenStep, positional_schema, write_through_blocker
from criss.errors import StorageError
from criss.planner.materialize import query_result_input
from criss.planner.workspace import Workspace
from criss.qtree.plan import PlanNode
from criss.storage.staging import Staged
from criss.storage.writethrough import forget_partitions, write_seconds, written_partitions

if TYPE_CHECKING:
    from criss.engine import CrissSession
    from criss.storage.cache import PartitionCache
    from criss.storage.catalog import EntryRecord

log = logging.getLogger("criss")

#: Operators above which a step's partition ids are not its own (see criss.bridge).
_RENUMBERING = frozenset({"Union"})


@dataclass
class PendingWrite:
    """A write-through step handed out in a plan, not yet (or not fully) committed."""

    token: str
    key: str
    op: str
    schema_json: str
    staged: Path
    #: The DataFrame carrying the step is gone: no action can write more partitions.
    released: bool = False
    #: (partitions, layout) the first action reported; every later one must match it.
    layout: tuple[int, str] | None = None
    #: Its files were dropped (layouts differed, partition ids not its own): ignore it.
    dropped: bool = False
    #: The record of the query that handed the step out (criss.records.QueryRecord).
    record: Any = field(default=None, repr=False)
    #: Input bytes the query read for it, when it is the query's result (None otherwise).
    scanned: int | None = None


def write_through(work: Workspace, nodes: list[PlanNode]) -> str | None:
    """Put a write-through step over each of ``nodes``; None, or why it cannot be done
    (then nothing was changed and a materialization job writes them)."""
    session = work.session
    if not session.options.write_through:
        return "write-through is off (write_through=False)"
    if session.listener is None:
        return "no execution listener: Spark could not report the action"
    remote = session.cache.staging.remote
    if remote is not None:
        return (
            f"the {remote.name} tier is at a URI ({remote.root}): the step's Python workers "
            "write local files only"
        )
    blocker = _ancestor_blocker(work, nodes)
    if blocker is not None:
        return blocker
    schemas = {}
    for node in nodes:
        df = session.bridge.dataframe_of(work.plan_at(node.path))
        blocker = write_through_blocker(df.schema)
        if blocker is not None:
            return f"{node.op} at {list(node.path)}: {blocker}"
        schemas[node.path] = positional_schema(df)
    written = set()
    for node in nodes:  # deepest first: a higher step's plan holds the lower step
        if node.fingerprint in written:
            continue  # the same result twice in one query: the first place writes it
        written.add(node.fingerprint)
        token = uuid.uuid4().hex[:16]
        staged = session.cache.staging_dir(node.fingerprint)
        plan = work.plan_at(node.path)
        work.replacements[node.path] = session.bridge.write_through(
            plan, schemas[node.path], str(staged), token
        )
        work.lease.writes.append(
            PendingWrite(
                token,
                node.fingerprint,
                node.op,
                schemas[node.path],
                staged,
                record=work.record,
                scanned=query_result_input(work, node),
            )
        )
        work.counters["operators_written_through"] += 1
    return None


def _ancestor_blocker(work: Workspace, nodes: list[PlanNode]) -> str | None:
    """Why a step at one of ``nodes`` would not know its partition index, if it would not."""
    by_path = {n.path: n for n in work.matched.tree.walk()}
    for node in nodes:
        for depth in range(len(node.path)):
            above = by_path[node.path[:depth]]
            if above.op in _RENUMBERING:
                return f"a {above.op} above {node.op} renumbers its partitions"
    return None


def commit_written(
    session: CrissSession,
    pending: PendingWrite,
    step: WrittenStep,
    texec: float | None,
    action_seconds: float,
) -> int:
    """Cache the partitions an action's tasks wrote for ``pending``; how many were stored.

    ``texec`` is the operator's measured Texec (None: not read off the action yet; the
    entry then gets the action's ``action_seconds`` for placement, and the QTree nothing).

    A new entry is opened with the layout the action ran with; an entry of that layout
    that lacks partitions gets the ones it lacks. A step whose actions reported different
    layouts, or whose partition ids were not its own, is dropped with its files.
    """
    if pending.layout is None:
        pending.layout = (step.num_partitions, step.layout)
    if not step.aligned or pending.layout != (step.num_partitions, step.layout):
        log.info("write-through of %s dropped: its partitions are not comparable", pending.key)
        pending.dropped = True
        session.cache.staging.remove(pending.staged)
        return 0
    files = written_partitions(pending.staged)
    if not files and step.num_partitions > 0:
        return 0
    if files and max(files) >= step.num_partitions:
        pending.dropped = True
        session.cache.staging.remove(pending.staged)
        return 0
    try:
        return _store(session, pending, step, files, texec, action_seconds)
    finally:
        forget_partitions(pending.staged, sorted(files))


def _store(
    session: CrissSession,
    pending: PendingWrite,
    step: WrittenStep,
    files: dict[int, Staged | None],
    texec: float | None,
    action_seconds: float,
) -> int:
    cache = session.cache
    opening = entry_for_written(
        cache,
        pending.key,
        (step.num_partitions, step.layout),
        files,
        op=pending.op,
        schema_json=pending.schema_json,
        texec=texec or action_seconds,
    )
    if opening is None:
        return 0
    entry, files, opened = opening
    stored = cache.store_files(entry, files)
    session.written_through(
        pending.record,
        {
            "operators_cached": int(opened and (bool(stored.stored) or not files)),
            "partitions_written_through": len(stored.stored),
            "bytes_written": stored.bytes_written,
        },
    )
    session.learning.write_seconds += write_seconds(pending.staged, sorted(stored.stored))
    if len(stored.stored) == step.num_partitions and texec is not None:
        # the whole result, measured: its Texec from the action, its size as stored
        session.qtree.record_stats(
            pending.key, texec=texec, size_bytes=stored.bytes, rows=stored.rows
        )
        if pending.scanned is not None:
            session.learning.learn_result_ratio(stored.bytes, pending.scanned)
    return len(stored.stored) + int(opened and not files)


def entry_for_written(
    cache: PartitionCache,
    key: str,
    layout: tuple[int, str],
    files: dict[int, Staged | None],
    *,
    op: str,
    schema_json: str,
    texec: float,
) -> tuple[EntryRecord, dict[int, Staged | None], bool] | None:
    """Where partition ``files`` an action computed under ``layout`` (count, fingerprint)
    go: (entry, the files it lacks, whether it was opened just now), or None.

    An entry of that layout gets the partitions it lacks; an entry cached meanwhile under
    another layout is kept as it is; else a new entry is opened (unless another
    application reads an old version of it).
    """
    entry = cache.lookup(key)
    if entry is not None and (entry.num_partitions, entry.layout) == layout:
        missing = set(entry.missing)
        files = {i: p for i, p in files.items() if i in missing}
        if not files:
            return None  # complete already (a result without partitions, or written again)
        return entry, files, False
    if entry is not None and entry.bitmap:
        return None  # cached meanwhile under another layout: keep what is there
    try:
        entry = cache.begin(
            key,
            op=op,
            schema_json=schema_json,
            num_partitions=layout[0],
            layout=layout[1],
            texec=texec,
            total_bytes=sum(cache.staging.size(f) for f in files.values() if f is not None),
        )
    except StorageError:
        return None  # another application reads an old version of it
    return entry, files, True
