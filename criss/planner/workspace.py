"""What the act phases build for one query: reads standing in for operators, and the lease
on the entries and files those reads need while the DataFrame lives."""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from criss.bridge import CapturedPlan, PartitionedResult
from criss.planner.match import Match
from criss.qtree.rewrite import top_rows, top_rows_input
from criss.qtree.subsume import Derivation
from criss.records import QueryRecord
from criss.storage.cache import PartitionCache, StoreResult
from criss.storage.catalog import EntryRecord
from criss.storage.staging import Staged

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from criss.engine import CrissSession


class Lease:
    """What one planned DataFrame holds: pinned entries and staged files the cache refused."""

    def __init__(self, cache: PartitionCache) -> None:
        self.cache = cache
        self.pinned: list[str] = []
        self.leftover_dirs: list[Staged] = []
        #: Write-through steps in the plan (criss.planner.writethrough.PendingWrite): their
        #: files outlive the DataFrame until the session commits what its actions wrote.
        self.writes: list[Any] = []
        #: Results the action computes into Spark's cache (criss.planner.spark_cache.
        #: PendingCache): freed once written, or once this DataFrame is gone.
        self.caches: list[Any] = []

    def pin(self, key: str) -> None:
        self.cache.pin([key])
        self.pinned.append(key)

    def __bool__(self) -> bool:
        return bool(self.pinned or self.leftover_dirs or self.writes or self.caches)

    def release(self) -> None:
        for write in self.writes:
            write.released = True
        for cached in self.caches:
            cached.released = True
        keys, self.pinned = self.pinned, []
        self.cache.unpin(keys)
        dirs, self.leftover_dirs = self.leftover_dirs, []
        for directory in dirs:
            self.cache.staging.remove(directory)


@dataclass(frozen=True)
class Source:
    """The files a query reads for one entry, and the schema they were written with."""

    files: list[str]
    schema_json: str
    #: The files' rows as Arrow, when this query wrote them on the driver just now.
    table: Any = None


@dataclass
class Workspace:
    """The act phases' output: a JVM plan per replaced path, the sources they read."""

    session: CrissSession
    captured: CapturedPlan
    matched: Match
    record: QueryRecord
    lease: Lease
    #: The DataFrame whose optimized plan ``captured`` is (None when unknown).
    df: DataFrame | None = None
    replacements: dict[tuple[int, ...], Any] = field(default_factory=dict)
    sources: dict[str, Source] = field(default_factory=dict)
    #: Paths the cache serves (read, or derived from cached rows): they read no table file.
    served: tuple[tuple[int, ...], ...] = ()

    @property
    def counters(self) -> Counter:
        return self.record.counters

    def place_read(self, path: tuple[int, ...], key: str, columns: tuple[int, ...] | None = None):
        """Serve the operator at ``path`` from ``key``'s files. The query's result under a
        final ORDER BY on its columns, when small, stands in for the Sort as a local relation
        already in that order: Spark then runs no job for the query at all."""
        with self.record.timed("read"):
            self._place_read(path, key, columns)

    def _place_read(self, path: tuple[int, ...], key: str, columns: tuple[int, ...] | None):
        served = self.matched.tree.at(path)
        if top_rows(served):
            path = top_rows_input(served)
        ordering = self.matched.ordering
        if ordering is not None and path == ordering[0] + (0,):
            sort_path, keys = ordering
            if columns is not None:  # keys name the result's columns; the files the entry's
                keys = tuple(replace(k, column=columns[k.column]) for k in keys)
            ordered = self.read_plan(sort_path, key, columns, order=keys)
            if ordered is not None:
                self.replacements[sort_path] = ordered
                self.counters["results_ordered_on_driver"] += 1
                return
        self.replacements[path] = self.read_plan(path, key, columns)

    def place_derived(self, path: tuple[int, ...], key: str, derivation: Derivation) -> None:
        """Serve the operator at ``path`` by computing it from ``key``'s cached rows (see
        ``criss.qtree.subsume``)."""
        with self.record.timed("read"):
            source = self.sources[key]
            self.replacements[path] = self.session.bridge.derived_read_plan(
                self.captured.node_at(path),
                key,
                source.files,
                source.schema_json,
                derivation,
                table=source.table,
            )

    def read_plan(self, path, key, columns=None, order=()) -> Any | None:
        source = self.sources[key]
        return self.session.bridge.cached_read_plan(
            self.captured.node_at(path),
            key,
            source.files,
            source.schema_json,
            columns=columns,
            order=order,
            table=source.table,
        )

    def plan_at(self, path: tuple[int, ...]) -> Any:
        """The query's plan at ``path`` with what is already replaced below it."""
        return self.session.bridge.substitute(self.captured, self.replacements, at=path)

    def partitioned(self, path: tuple[int, ...]) -> PartitionedResult:
        """The result at ``path`` prepared for a partition-by-partition write."""
        return PartitionedResult(self.session.bridge, self.frame_at(path))

    def frame_at(self, path: tuple[int, ...]) -> DataFrame:
        """A DataFrame of the plan at ``path`` with what is already replaced below it.

        The whole query with nothing replaced is the query's own DataFrame: Spark has
        optimized it already (for the capture), and a DataFrame built from the plan would
        analyze and optimize it again (~25 ms per first-seen query).
        """
        if path == () and not self.replacements and self.df is not None:
            return self.df
        return self.session.bridge.dataframe_of(self.plan_at(path))

    def write(
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
        cache = self.session.cache
        staged = cache.staging_dir(entry.key if entry is not None else "unstored")
        everything = indices == list(range(result.num_partitions))
        if result.write(staged, None if everything else indices):
            self.counters["entries_written_on_driver"] += 1
        if entry is None:
            return cache.unstored(staged, indices), staged
        if started is not None:
            entry = cache.catalog.set_measurements(
                entry.key,
                texec=time.perf_counter() - started,
                total_bytes=cache.staging.bytes(staged),
            )
        stored = cache.store(entry, staged, indices)
        if stored.leftovers:
            self.lease.leftover_dirs.append(staged)
        else:
            cache.staging.remove(staged)
        return stored, staged

    def settle(
        self,
        key: str,
        schema_json: str,
        kept: dict[int, str],
        stored: StoreResult,
        table: Any = None,
    ):
        """Files this query reads for ``key``: partitions it found plus those it computed.

        Built from this query's own knowledge, never from a fresh catalog read, so a
        concurrent writer of the same entry cannot add or remove partitions under it.
        ``table``, every row just written (as Arrow), is read in their place when the
        files hold exactly those rows.
        """
        files = list({**kept, **stored.files()}.values())
        if table is not None and (kept or table.num_rows != stored.rows):
            table = None
        self.sources[key] = Source(files, schema_json, table)
        self.counters["bytes_written"] += stored.bytes_written
