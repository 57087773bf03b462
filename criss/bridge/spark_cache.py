"""A result's final stage computed by the user's own action into Spark's cache, and its
partitions written to Criss's tiers from there afterwards.

``PartitionedResult`` has run the stages below the final one; :class:`CachedResult` persists
a DataFrame over the final stage's RDD (``MEMORY_AND_DISK``). The plan handed to the user
reads that DataFrame, so Spark's ``CacheManager`` puts its ``InMemoryRelation`` in the
user's plan and the action's tasks fill the cache as a side effect: the user's action runs
the stage exactly as plain Spark would, plus the columnar cache's copy. Afterwards the
partitions the cache holds are read back (one small job over cached blocks, off the
user's path) and written like any other result. Its ``LogicalRDD`` matches no plan but
its own, so nothing else of the user's is ever served from it.
"""

from __future__ import annotations

import logging
import os
from functools import cached_property
from typing import TYPE_CHECKING, Any

from criss.bridge.errors import jvm_errors
from criss.bridge.execution import frame_over, write_on_driver
from criss.errors import BridgeError
from criss.storage.tiers import local_file, spark_uri

if TYPE_CHECKING:
    from criss.bridge.catalyst import CatalystBridge
    from criss.bridge.execution import PartitionedResult

log = logging.getLogger("criss")


class CachedResult:
    """``result``'s final stage as a DataFrame Spark's cache keeps once an action runs it."""

    @jvm_errors("put the result in Spark's cache")
    def __init__(self, result: PartitionedResult) -> None:
        from pyspark import StorageLevel

        self.result = result
        self.bridge: CatalystBridge = result.bridge
        self.num_partitions = result.num_partitions
        self.layout = result.layout
        self.frame = result.frame().persist(StorageLevel.MEMORY_AND_DISK)
        relation = self.frame._jdf.queryExecution().withCachedData()
        if relation.getClass().getSimpleName() != "InMemoryRelation":
            self.frame.unpersist()
            raise BridgeError("Spark's cache did not take the result (no InMemoryRelation)")
        self._relation = relation
        self._rdd_id = int(relation.cacheBuilder().cachedColumnBuffers().id())
        self.unpersisted = False

    @jvm_errors("read the result from Spark's cache")
    def plan_for(self, original: Any) -> Any:
        """A plan reading the cached result with ``original``'s attributes (names, exprIds)."""
        bridge = self.bridge
        read = self.frame._jdf.logicalPlan()
        new_attrs, old_attrs = read.output(), original.output()
        aliases = [
            bridge.alias_as(new_attrs.apply(i), old_attrs.apply(i)) for i in range(old_attrs.size())
        ]
        return bridge.project(bridge.seq(aliases), read)

    @jvm_errors("list the partitions Spark's cache holds")
    def cached_partitions(self) -> list[int]:
        """The partitions whose blocks Spark's block manager holds now."""
        if self.unpersisted:
            return []
        if self._relation.cacheBuilder().isCachedColumnBuffersLoaded():
            return list(range(self.num_partitions))
        master = self.bridge.static("org.apache.spark.SparkEnv.get")().blockManager().master()
        block = self.bridge.static("org.apache.spark.storage.RDDBlockId")
        return [
            i
            for i in range(self.num_partitions)
            if not master.getLocations(block(self._rdd_id, i)).isEmpty()
        ]

    @cached_property
    def _scan(self) -> Any:
        """The rows of the cached relation (an RDD whose partition i reads block i)."""
        return self.frame._jdf.queryExecution().toRdd()

    @jvm_errors("write the result from Spark's cache")
    def write(self, staged: str | os.PathLike, indices: list[int]) -> bool:
        """Write partitions ``indices`` from the cache into ``staged`` as ``PartitionedResult``
        does (task k's file holds ``indices[k]``); True when written on the driver. A block
        the cache lost meanwhile is recomputed from the final stage's input: same rows."""
        result = self.result
        frame = frame_over(self.bridge, self._scan, result.jvm_schema, indices)
        local = local_file(str(staged))  # a URI's files are Spark's to write
        if indices and local is not None and result.fits_driver(self._rows(indices)):
            write_on_driver(self.bridge, frame, local, result.width)
            return True
        frame.write.option("maxRecordsPerFile", 0).parquet(spark_uri(staged))
        return False

    def _rows(self, indices: list[int]) -> int | None:
        """At most how many rows ``indices`` hold: the final stage's bound when known, else
        the cache's own count once every partition is in it."""
        if self.result.driver_rows is not None:
            return self.result.driver_rows
        builder = self._relation.cacheBuilder()
        if len(indices) == self.num_partitions and builder.isCachedColumnBuffersLoaded():
            stats = self._relation.computeStats().rowCount()
            if stats.isDefined():
                return int(str(stats.get()))
        return None

    def unpersist(self) -> None:
        """Free the cache's blocks (the DataFrame handed out then recomputes the stage)."""
        if self.unpersisted:
            return
        self.unpersisted = True
        try:
            self.frame.unpersist(blocking=False)
        except Exception as exc:  # the JVM may be gone at interpreter exit
            log.info("Spark's cache of a result was not freed: %s", exc)
