"""A result computed by the user's own action into Spark's columnar cache, and its
partitions written to Criss's tiers from there afterwards.

:class:`CachedResult` wraps the operator's own plan, as the user's query would run it, in
an ``InMemoryRelation`` of its own (built like ``Dataset.persist``'s, but never registered
with Spark's ``CacheManager``: no other plan is ever served from it, and nothing runs
before the action). The plan handed out reads that relation, so the action runs every
stage exactly as plain Spark would, the final one also filling the columnar cache, and
compiles the same code: measured at SF 1 over the 22 TPC-H templates seen first, plain
Spark's plan under such a relation ran 1.00-1.05x plain, where running the stages below
the result in ``cs.sql()`` and only the final one in the action ran 1.08-1.09x
(``results/issue22/session16``). Afterwards the partitions the cache holds are read back
(one small job over cached blocks, off the user's path) and written like any other result,
with the layout the action's final stage ran with.
"""

from __future__ import annotations

import logging
import os
from functools import cached_property
from typing import TYPE_CHECKING, Any

from criss.bridge.errors import jvm_errors
from criss.bridge.execution import (
    ResultColumns,
    final_plan,
    final_stage_rows,
    frame_over,
    layout_fingerprint,
    layout_plan_text,
    layout_settings,
    partition_specs,
    write_on_driver,
)
from criss.bridge.plans import query_execution
from criss.errors import BridgeError
from criss.storage.tiers import local_file, spark_uri

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from criss.bridge.catalyst import CatalystBridge

log = logging.getLogger("criss")

#: Scala's companion object of Spark's InMemoryRelation (its ``apply`` builds one).
IN_MEMORY_RELATIONS = "org.apache.spark.sql.execution.columnar.InMemoryRelation$.MODULE$"


class CachedResult(ResultColumns):
    """``df``'s result as a relation of Spark's columnar cache that an action fills.

    Until an action has run it, nothing is known of its partitions: ``num_partitions`` is
    None and ``cached_partitions()`` empty; then both come from the cache Spark built.
    """

    @jvm_errors("put the result in Spark's cache")
    def __init__(self, bridge: CatalystBridge, df: DataFrame, name: str) -> None:
        super().__init__(bridge, df)
        self._query_execution = query_execution(df)
        level = bridge.memory_and_disk
        relations = bridge.static(IN_MEMORY_RELATIONS)
        planned = relations.apply(
            level, self._query_execution, bridge.static("scala.Option.apply")(name)
        )
        # Spark plans a query reading an adaptive cached plan adaptively too, and an adaptive
        # plan computes every partition of a cache before reading any (a table cache query
        # stage): a show() would compute the whole result. Behind a pass-through step the
        # cached plan still runs adaptively, and the query reading it only where it would
        # anyway (an exchange above it).
        built = planned.cacheBuilder()
        # a physical plan node takes the thread's active session, which a JVM thread serving
        # another Python thread has not got (the cache builder then fails on it)
        bridge.static("org.apache.spark.sql.SparkSession.setActiveSession")(
            bridge.spark._jsparkSession
        )
        builder = built.copy(
            built.serializer(),
            level,
            bridge.static("org.apache.spark.sql.execution.InputAdapter")(built.cachedPlan()),
            built.tableName(),
            built.logicalPlan(),
        )
        self._relation = relations.apply(
            planned.output(), builder, planned.outputOrdering(), planned.statsOfPlanToCache()
        )
        self._builder = self._relation.cacheBuilder()
        self._cached_name = str(self._builder.cachedName())
        #: The settings the action's stages run with (part of the layout).
        self._settings = layout_settings(bridge.spark)
        #: The cache's RDD and its partition count, once an action has built it.
        self._rdd: Any = None
        self._count: int | None = None
        self.unpersisted = False

    @property
    def num_partitions(self) -> int | None:
        """How many partitions the action's final stage had (None before an action)."""
        self._built()
        return self._count

    def _built(self) -> Any:
        """The cache's RDD if an action has built it (looked up, never built here: building
        it runs the result's stages)."""
        if self._rdd is None and not self.unpersisted:
            persistent = self.bridge.spark.sparkContext._jsc.getPersistentRDDs()
            for rdd in persistent.values():
                if str(rdd.name()) == self._cached_name:
                    self._rdd = rdd.rdd()
                    self._count = int(self._rdd.getNumPartitions())
                    break
        return self._rdd

    @cached_property
    def layout(self) -> str:
        """Fingerprint of what placed rows into the action's partitions (see
        ``criss.bridge.execution.PartitionedResult``): the final plan AQE ran, each
        partition's read spec and the settings. Only once an action has built the cache."""
        rdd = self._built()
        if rdd is None:
            raise BridgeError("no action has computed this result yet: it has no layout")
        return layout_fingerprint(
            layout_plan_text(self._physical), partition_specs(rdd), self._settings
        )

    @property
    def _physical(self) -> Any:
        """The final physical plan the action ran for this result."""
        return final_plan(self._builder.cachedPlan().child())  # under the pass-through step

    @jvm_errors("read the result from Spark's cache")
    def positional_frame(self) -> DataFrame:
        """The cached result as a DataFrame whose columns are named by position (``_c0``,
        ...), as a derivation addresses a cached result's columns."""
        frame = self.bridge.dataframe_of(self._relation)
        return frame.toDF(*(f"_c{i}" for i in range(len(frame.columns))))

    @jvm_errors("read the result from Spark's cache")
    def plan_for(self, original: Any) -> Any:
        """A plan reading the cached result with ``original``'s attributes (names, exprIds):
        the relation itself where it already outputs them (it was built over ``original``'s
        own plan: one JVM call instead of several per column)."""
        bridge = self.bridge
        new_attrs, old_attrs = self._relation.output(), original.output()
        if new_attrs.equals(old_attrs):
            return self._relation
        aliases = [
            bridge.alias_as(new_attrs.apply(i), old_attrs.apply(i)) for i in range(old_attrs.size())
        ]
        return bridge.project(bridge.seq(aliases), self._relation)

    @jvm_errors("list the partitions Spark's cache holds")
    def cached_partitions(self) -> list[int]:
        """The partitions whose blocks Spark's block manager holds now."""
        rdd = self._built()
        if rdd is None or self.unpersisted:
            return []
        if self._builder.isCachedColumnBuffersLoaded():
            return list(range(self._count))
        master = self.bridge.static("org.apache.spark.SparkEnv.get")().blockManager().master()
        block = self.bridge.static("org.apache.spark.storage.RDDBlockId")
        rdd_id = int(rdd.id())
        return [
            i for i in range(self._count) if not master.getLocations(block(rdd_id, i)).isEmpty()
        ]

    @cached_property
    def _scan(self) -> Any:
        """The rows of the cached relation (an RDD whose partition i reads block i)."""
        return query_execution(self.bridge.dataframe_of(self._relation)).toRdd()

    @jvm_errors("write the result from Spark's cache")
    def write(self, staged: str | os.PathLike, indices: list[int]) -> bool:
        """Write partitions ``indices`` from the cache into ``staged`` as ``PartitionedResult``
        does (task k's file holds ``indices[k]``); True when written on the driver. A block
        the cache lost meanwhile is recomputed from the final stage's input: same rows."""
        frame = frame_over(self.bridge, self._scan, self.jvm_schema, indices)
        local = local_file(str(staged))  # a URI's files are Spark's to write
        if indices and local is not None and self.fits_driver(self._rows(indices)):
            write_on_driver(self.bridge, frame, local, self.width)
            return True
        frame.write.option("maxRecordsPerFile", 0).parquet(spark_uri(staged))
        return False

    def _rows(self, indices: list[int]) -> int | None:
        """At most how many rows ``indices`` hold: the final stage's bound when known, else
        the cache's own count once every partition is in it."""
        if self.driver_rows is not None:
            return self.driver_rows
        if len(indices) == self.num_partitions and self._builder.isCachedColumnBuffersLoaded():
            stats = self._relation.computeStats().rowCount()
            if stats.isDefined():
                return int(str(stats.get()))
        return None

    @cached_property
    def driver_rows(self) -> int | None:
        """At most how many rows the action's final stage output (see
        ``criss.bridge.execution.final_stage_rows``), None if unknown."""
        return final_stage_rows(self._physical)

    def unpersist(self) -> None:
        """Free the cache's blocks (an action on the DataFrame handed out then computes the
        result again, as plain Spark would, and Spark frees what it caches then once that
        DataFrame is gone)."""
        if self.unpersisted:
            return
        self.unpersisted = True
        try:
            self._builder.clearCache(False)
        except Exception as exc:  # the JVM may be gone at interpreter exit
            log.info("Spark's cache of a result was not freed: %s", exc)
