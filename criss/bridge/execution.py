"""Execution: an operator's result as partitions that can be computed and written one by one.

The layout fingerprint says when a recompute of some partitions is valid; small results are
written on the driver (``criss.localio``'s Arrow types) instead of by a Spark write job.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from functools import cached_property
from typing import TYPE_CHECKING, Any, NamedTuple

from criss.bridge.errors import is_jvm_error, jvm_errors
from criss.bridge.metrics import OperatorMetrics, operator_metrics
from criss.bridge.plans import query_execution
from criss.localio import LOCAL_SORT_ROWS, arrow_exact
from criss.storage.tiers import local_file, spark_uri

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from criss.bridge.catalyst import CatalystBridge

#: Settings for materialization jobs. AQE still coalesces small shuffle partitions (turning
#: that off made first occurrences 10-40 % slower at SF1: many tiny tasks); skew splitting is
#: off. Partition alignment is *verified* instead: the layout includes every output
#: partition's shuffle read spec, so a recompute only reuses partitions under equal specs.
MATERIALIZE_CONF = {
    "spark.sql.adaptive.skewJoin.enabled": "false",
}
#: Settings that decide how rows fall into partitions (besides the physical plan itself).
LAYOUT_CONF = (
    "spark.sql.shuffle.partitions",
    "spark.sql.files.maxPartitionBytes",
    "spark.sql.files.openCostInBytes",
    "spark.sql.files.minPartitionNum",
    "spark.sql.files.maxPartitionNum",
)
#: Per-query noise in physical plan strings: expression ids, plan ids, stage and codegen ids.
_PLAN_NOISE = (
    (re.compile(r"#\d+L?"), ""),
    (re.compile(r"\[plan_id=\d+\]"), ""),
    (re.compile(r"QueryStage \d+"), "QueryStage"),
    (re.compile(r"\*\(\d+\)"), "*"),
    (re.compile(r"@[0-9a-f]+"), "@"),  # identity hashes in Partition.toString
)
#: Physical operators that output no more rows than they read (within one stage).
_ROW_BOUNDED = frozenset(
    {
        "WholeStageCodegenExec",
        "InputAdapter",
        "AQEShuffleReadExec",
        "HashAggregateExec",
        "ObjectHashAggregateExec",
        "SortAggregateExec",
        "SortExec",
        "ProjectExec",
        "FilterExec",
        "WindowExec",
        "TakeOrderedAndProjectExec",
        "CollectLimitExec",
        "GlobalLimitExec",
        "LocalLimitExec",
        "UnionExec",
    }
)


class _Prepared(NamedTuple):
    """What running the earlier stages of a result's plan left: the RDD and the plans."""

    query_execution: Any
    rdd: Any
    physical: Any
    plan_text: str
    specs: list[str]
    settings: list[str | None]


class ResultColumns:
    """What an operator's result looks like as rows: its positional schema (``c0..cN``),
    width, and whether it is small and plain enough to collect on the driver; and, once
    its plan has run, what each operator of it did. A subclass holds the plan's
    ``_query_execution`` and its final physical plan ``_physical``."""

    _query_execution: Any
    _physical: Any

    def __init__(self, bridge: CatalystBridge, df: DataFrame) -> None:
        self.bridge = bridge
        self.df = df
        self.schema_json = positional_schema(df)
        self.width = len(df.schema.fields)
        self.row_width = int(df._jdf.schema().defaultSize())

    def fits_driver(self, rows: int | None) -> bool:
        """Whether ``rows`` rows of this result are few enough to collect on the driver."""
        limit = self.bridge.local_read_bytes
        if not limit or rows is None or not self.arrow_exact:
            return False
        return rows <= LOCAL_SORT_ROWS and rows * self.row_width <= limit

    @cached_property
    def arrow_exact(self) -> bool:
        """Whether every column survives a trip through Arrow unchanged."""
        return all(arrow_exact(f.dataType) for f in self.df.schema.fields)

    @cached_property
    def jvm_schema(self) -> Any:
        """The positional schema (``schema_json``) as a JVM StructType."""
        return self.bridge.static("org.apache.spark.sql.types.DataType.fromJson")(self.schema_json)

    @jvm_errors("read the executed plan's optimized plan")
    def optimized_plan(self) -> Any:
        """The optimized logical plan that ran (the one ``operator_metrics`` keys by path)."""
        return self._query_execution.optimizedPlan()

    @jvm_errors("read the executed plan's metrics")
    def operator_metrics(self) -> dict[tuple[int, ...], OperatorMetrics]:
        """What each operator of the plan did, once it has run (see OperatorMetrics).

        Keyed by path in the optimized plan of ``self.df`` (capture it for fingerprints).
        """
        return operator_metrics(self.bridge, self._query_execution, self._physical)


class PartitionedResult(ResultColumns):
    """An operator's result as an RDD whose partition i can be computed on its own.

    Creating it runs the shuffle stages below the final one (AQE plans them); ``frame``
    then yields a DataFrame over all partitions or only some, with positional columns
    ``c0..cN``. ``layout`` fingerprints the final physical plan, each output partition's
    read spec and the settings that place rows into partitions: recomputing a subset of
    partitions is only valid under an equal layout and partition count.
    """

    def __init__(self, bridge: CatalystBridge, df: DataFrame) -> None:
        prepared = _prepare(bridge.spark, df)
        super().__init__(bridge, df)
        self.rdd = prepared.rdd
        self._query_execution, self._physical = prepared.query_execution, prepared.physical
        self.num_partitions = int(self.rdd.getNumPartitions())
        self.layout = _layout(prepared)
        #: Every partition's rows as Arrow, once ``write`` wrote them all on the driver.
        self.written_table: Any = None

    def write(self, staged: str | os.PathLike, indices: list[int] | None = None) -> bool:
        """Write partitions ``indices`` (default all) into ``staged`` as Spark names its part
        files, task k's file holding partition ``indices[k]`` and an empty partition none.

        A result small enough for the driver (see ``driver_rows``) is collected as Arrow and
        written there with pyarrow: a Spark write job's task-side writers and commit protocol
        cost ~0.13 s more, per first occurrence of a query. True when written on the driver.
        """
        frame = self.frame(indices)
        local = local_file(str(staged))  # a URI's files are Spark's to write
        if indices != [] and local is not None and self.fits_driver(self.driver_rows):
            table = write_on_driver(self.bridge, frame, local, self.width)
            if indices is None:
                self.written_table = table
            return True
        frame.write.option("maxRecordsPerFile", 0).parquet(spark_uri(staged))
        return False

    @cached_property
    def driver_rows(self) -> int | None:
        """At most how many rows the final stage outputs, None if unknown.

        Known when the stage only aggregates, sorts, filters, projects, limits or unions rows
        read from finished shuffle stages: it outputs no more rows than those stages wrote
        (their runtime row counts). A join or a scan in the final stage leaves it unknown.
        """
        return final_stage_rows(self._physical)

    def frame(self, indices: list[int] | None = None) -> DataFrame:
        """All partitions, or only ``indices`` (task k of the write computes ``indices[k]``)."""
        return frame_over(self.bridge, self.rdd, self.jvm_schema, indices)


@jvm_errors("prepare the operator's result")
def _prepare(spark: SparkSession, df: DataFrame) -> _Prepared:
    """Run the stages below the final one and read what the layout depends on."""
    with _temporary_conf(spark, MATERIALIZE_CONF):
        qe = query_execution(df)
        rdd = qe.toRdd()
        physical = final_plan(qe.executedPlan())
        # e.g. ShuffledRowRDDPartition(0,CoalescedPartitionSpec(0,8,Some(161408)))
        specs = partition_specs(rdd)
    return _Prepared(qe, rdd, physical, layout_plan_text(physical), specs, layout_settings(spark))


def final_plan(physical: Any) -> Any:
    """The plan that ran, of an executed ``physical`` plan (AQE's final one)."""
    if physical.getClass().getSimpleName() == "AdaptiveSparkPlanExec":
        return physical.executedPlan()  # the final plan, now that it has run
    return physical


def layout_plan_text(physical: Any) -> str:
    """The text of the final plan that places rows into partitions (the layout's part)."""
    if physical.getClass().getSimpleName() == "ResultQueryStageExec":
        physical = physical.plan()  # as under a write-through step (see criss.bridge.writethrough)
    return str(physical.toString())


def partition_specs(rdd: Any) -> list[str]:
    """Each partition of ``rdd`` described (its shuffle read spec, its files)."""
    return [str(p.toString()) for p in rdd.partitions()]


def layout_settings(spark: SparkSession) -> list[str | None]:
    """The session's settings that place rows into partitions (see ``LAYOUT_CONF``)."""
    settings = [spark.conf.get(k, None) for k in LAYOUT_CONF]
    settings.append(str(spark.sparkContext.defaultParallelism))
    return settings


def layout_fingerprint(plan_text: str, specs: list[str], settings: list[str | None]) -> str:
    """Fingerprint of what places rows into partitions: the final physical plan, each
    partition's description (its shuffle read spec, its files) and the settings."""
    return hashlib.sha256(
        json.dumps(
            [
                normalize_physical_plan(plan_text),
                normalize_physical_plan("|".join(specs)),
                settings,
            ]
        ).encode()
    ).hexdigest()[:32]


def _layout(prepared: _Prepared) -> str:
    """Fingerprint of what places rows into partitions (see ``PartitionedResult``)."""
    return layout_fingerprint(prepared.plan_text, prepared.specs, prepared.settings)


def positional_schema(df: DataFrame) -> str:
    """``df``'s schema as JSON with its columns renamed ``c0..cN`` (all nullable)."""
    return json.dumps(
        {
            "type": "struct",
            "fields": [
                {
                    "name": f"c{i}",
                    "type": f.dataType.jsonValue(),
                    "nullable": True,
                    "metadata": {},
                }
                for i, f in enumerate(df.schema.fields)
            ],
        }
    )


def frame_over(
    bridge: CatalystBridge, rdd: Any, jvm_schema: Any, indices: list[int] | None = None
) -> DataFrame:
    """A DataFrame over the JVM ``rdd`` of rows (all partitions, or only ``indices``: task
    k then computes partition ``indices[k]``)."""
    from pyspark.sql import DataFrame

    if indices is not None:
        keep = bridge.seq(sorted(indices)).toSet()
        rdd = bridge.static("org.apache.spark.rdd.PartitionPruningRDD.create")(rdd, keep)
    spark = bridge.spark
    return DataFrame(spark._jsparkSession.internalCreateDataFrame(rdd, jvm_schema, False), spark)


def write_on_driver(
    bridge: CatalystBridge, frame: DataFrame, staged: str | os.PathLike, width: int
) -> Any:
    """Collect ``frame`` (``width`` positional columns) as Arrow and write each task's rows
    as its part file; the rows, or None if there are none."""
    import uuid

    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    columns = [f"c{i}" for i in range(width)]
    batches = collect_with_tasks(bridge, frame)
    os.makedirs(staged, exist_ok=True)
    if not batches:
        return None
    table = pa.Table.from_batches(batches)
    job = uuid.uuid4()
    tasks = table.column("task")
    for task in pc.unique(tasks).to_pylist():
        rows = table.filter(pc.equal(tasks, task)).select(columns)
        name = f"part-{task:05d}-{job}-c000.snappy.parquet"
        pq.write_table(rows, os.path.join(staged, name), compression="snappy")
    return table.select(columns)


@jvm_errors("compute the operator's result")
def collect_with_tasks(bridge: CatalystBridge, frame: DataFrame) -> list:
    """``frame``'s rows (positional columns) as Arrow batches, each row with the partition
    (``task``) it is in. One ``selectExpr`` call: a ``select`` of Columns costs py4j calls
    per column."""
    from pyspark.sql import DataFrame

    tagged = frame._jdf.selectExpr(bridge.seq(["*", "spark_partition_id() AS task"]))
    return DataFrame(tagged, frame.sparkSession)._collect_as_arrow()


def final_stage_rows(physical: Any) -> int | None:
    """Rows read by the final stage of an adaptive plan whose earlier stages have run, if
    every operator of that stage is row-bounded (``_ROW_BOUNDED``); else None (also when
    the plan cannot say: a write job then writes the result)."""
    try:
        return _final_stage_rows(physical)
    except Exception as exc:
        if is_jvm_error(exc):
            return None
        raise


def _final_stage_rows(physical: Any) -> int | None:
    total, stack = 0, [physical]
    while stack:
        node = stack.pop()
        name = node.getClass().getSimpleName()
        if name == "ResultQueryStageExec":
            stack.append(node.plan())
        elif name == "ShuffleQueryStageExec":
            rows = node.getRuntimeStatistics().rowCount()
            if not rows.isDefined():
                return None
            total += int(str(rows.get()))
        elif name in _ROW_BOUNDED:
            kids = node.children()
            stack.extend(kids.apply(i) for i in range(kids.size()))
        else:
            return None
    return total


def normalize_physical_plan(text: str) -> str:
    """``text`` without the per-query noise of physical plan strings (ids, hashes)."""
    for pattern, replacement in _PLAN_NOISE:
        text = pattern.sub(replacement, text)
    return text


class _temporary_conf:
    """Set SQL settings for the duration of a block, then restore them."""

    def __init__(self, spark: SparkSession, settings: dict[str, str]) -> None:
        self.spark, self.settings = spark, settings
        self.saved: dict[str, str | None] = {}

    def __enter__(self) -> None:
        for key, value in self.settings.items():
            self.saved[key] = self.spark.conf.get(key, None)
            self.spark.conf.set(key, value)

    def __exit__(self, *exc: object) -> None:
        for key, value in self.saved.items():
            if value is None:
                self.spark.conf.unset(key)
            else:
                self.spark.conf.set(key, value)
