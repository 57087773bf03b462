"""The one place where Criss talks to Spark's JVM (Catalyst) through py4j.

Everything else in Criss works on plain Python values handed out from here.
Spark-version differences are absorbed in this module only. Each py4j call costs
about 0.1 ms, so the bridge asks for whole strings (JSON, ``mkString``) rather than
walking JVM objects call by call.
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import json
import logging
import os
import re
import threading
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any

from criss.errors import BridgeError
from criss.qtree.plan import Expr, PlanNode, expression_tree, tree_from_catalyst_json
from criss.qtree.rewrite import SortKey
from criss.recent import RecentItems

log = logging.getLogger("criss.bridge")

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

PHASES = ("analyzed", "optimized")
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
#: Parquet bytes of local-relation read plans kept for reuse (they hold their rows).
LOCAL_PLANS_BYTES = 64 << 20
#: Canonicalized plans whose plain-Python trees are kept for repeated captures.
REMEMBERED_PLANS = 128
#: Most rows a cached result may have to be put in ORDER BY order on the driver.
LOCAL_SORT_ROWS = 200_000
#: Per-query noise in physical plan strings: expression ids, plan ids, stage and codegen ids.
_PLAN_NOISE = (
    (re.compile(r"#\d+L?"), ""),
    (re.compile(r"\[plan_id=\d+\]"), ""),
    (re.compile(r"QueryStage \d+"), "QueryStage"),
    (re.compile(r"\*\(\d+\)"), "*"),
    (re.compile(r"@[0-9a-f]+"), "@"),  # identity hashes in Partition.toString
)
#: Hadoop's FileStatus.toString:
#: "...{path=P; isDirectory=false; length=N; ... modification_time=T; ...}"
_FILE_STATUS = re.compile(
    r"\{path=(.*?); isDirectory=false; length=(\d+);.*?modification_time=(\d+);"
)


#: Oldest Spark the bridge runs on: Spark 4 moved Dataset to ``org.apache.spark.sql.classic``
#: and builds Columns from ``ExpressionColumnNode``; the plan JSON, the adaptive plan's
#: ResultQueryStageExec and the metrics the engine reads are Spark 4's as well.
OLDEST_SPARK = (4, 0)


def require_supported_spark(version: str) -> None:
    """Raise BridgeError, naming the version, for a Spark older than ``OLDEST_SPARK``."""
    match = re.match(r"(\d+)\.(\d+)", version)
    if match is None or (int(match[1]), int(match[2])) < OLDEST_SPARK:
        raise BridgeError(
            f"Criss needs Spark {'.'.join(map(str, OLDEST_SPARK))} or later; this session runs "
            f"Spark {version}"
        )


class CatalystBridge:
    """py4j access to one SparkSession's Catalyst, with JVM classes resolved once."""

    def __init__(self, spark: SparkSession, local_read_bytes: int = 0) -> None:
        require_supported_spark(spark.version)
        self.spark = spark
        #: Cached files up to this many bytes in all are read on the driver and handed to
        #: Spark as a local relation (no read job: ~15 ms against ~130 ms for a small file).
        self.local_read_bytes = local_read_bytes
        jvm = spark._jvm
        self.jvm = jvm
        self._utils = jvm.org.apache.spark.api.python.PythonUtils
        self._alias = jvm.org.apache.spark.sql.catalyst.expressions.Alias
        self._project = jvm.org.apache.spark.sql.catalyst.plans.logical.Project
        self._dataset = jvm.org.apache.spark.sql.classic.Dataset
        self._none = jvm.scala.Option.empty()
        self._empty = self.seq([])
        self._read_plans: dict[tuple, Any] = {}
        self._local_plan_bytes = 0
        #: Bloom filter literals by content digest, and their JSON identity ("[B@hash":
        #: a byte array's toString) → "bloom:<digest>", so captured plans name them by content.
        self._bloom_literals: dict[str, Any] = {}
        self._binary_names: dict[str, str] = {}
        #: Python threads whose py4j connection has had Nagle's algorithm turned off.
        self._fast_threads: set[int] = set()
        self._fast_gateway = True
        #: canonicalized plan's hashCode → (that JVM plan, its plain-Python tree, serial).
        self._trees = RecentItems(REMEMBERED_PLANS)
        self._tree_serial = itertools.count(1)
        self.remembered_captures = 0
        self.speed_up_gateway()

    def seq(self, items: list[Any]) -> Any:
        """A Scala Seq from a Python list."""
        return self._utils.toSeq(items)

    def speed_up_gateway(self) -> None:
        """Turn off Nagle's algorithm on the JVM end of every py4j connection (once per
        Python thread: each thread gets a connection of its own).

        py4j 0.10.9.9 (PySpark 4.1) writes a reply over 8 KB in two parts; Nagle holds the
        second until Python's delayed ACK, so every large reply (a plan's JSON is 20-60 KB)
        took 45 ms instead of 3 (py4j issue #516, fixed upstream by py4j PR #592). Only the
        socket option changes; if this py4j keeps its connections elsewhere, nothing does.
        """
        thread = threading.get_ident()
        if not self._fast_gateway or thread in self._fast_threads:
            return
        self._fast_threads.add(thread)
        try:
            server = self.spark.sparkContext._gateway.java_gateway_server
            field = self.jvm.java.lang.Class.forName("py4j.GatewayServer").getDeclaredField(
                "connections"
            )
            field.setAccessible(True)
            connections = field.get(server)
            for i in range(connections.size()):
                socket = connections.get(i).getSocket()
                if not socket.getTcpNoDelay():
                    socket.setTcpNoDelay(True)
        except Exception as exc:  # another py4j or a locked-down JVM: slower, still correct
            self._fast_gateway = False
            log.debug("py4j connections keep Nagle's algorithm: %s", exc)

    # --- capture --------------------------------------------------------------------------------

    def plan_tree(self, canonical: Any) -> tuple[PlanNode, int | None, bool]:
        """The plain-Python tree of a canonicalized plan, the serial number it is remembered
        under (None if it is not), and whether it holds a binary literal Criss did not name.

        Catalyst's ``toJSON`` is the dearest step of a capture; a repeated query's
        canonicalized plan equals (case-class equality, what ``sameResult`` uses) the one
        captured last time, so its tree is reused. The tree holds no file listing or
        determinism: ``CapturedPlan`` adds those fresh on every capture. A plan with an
        unnamed binary literal is never remembered.
        """
        code = int(canonical.hashCode())
        remembered = self._trees.get(code)
        if remembered is not None:
            jplan, tree, serial = remembered
            if canonical.equals(jplan):
                self.remembered_captures += 1
                return tree, serial, False
        text = canonical.toJSON()
        if '"[B@' in text and self._binary_names:
            text = _BINARY_VALUE.sub(
                lambda m: '"value":"' + self._binary_names.get(m[1], m[1]) + '"', text
            )
        tree = tree_from_catalyst_json(json.loads(text))
        if '"[B@' in text:
            return tree, None, True
        serial = next(self._tree_serial)
        # an unequal plan of the same hash replaces the one kept: ``equals`` decides hits
        self._trees.put(code, (canonical, tree, serial))
        return tree, serial, False

    def capture(self, df: DataFrame) -> CapturedPlan:
        self.speed_up_gateway()
        return CapturedPlan(self, df)

    # --- rewrite --------------------------------------------------------------------------------

    def cached_read_plan(
        self,
        original: Any,
        key: str,
        files: list[str],
        schema_json: str,
        columns: tuple[int, ...] | None = None,
        order: tuple[SortKey, ...] = (),
    ) -> Any | None:
        """A plan reading cached files that outputs ``original``'s attributes (same exprIds).

        Files hold positional columns ``c0..cN``; a Project of Aliases restores each
        original attribute's name and exprId so every ancestor still resolves. ``columns``
        picks, for each original attribute, the cached column holding it (default: same
        position). With ``order`` (keys over cached columns), the rows come as a local
        relation already in that order, to stand in for ``original``, a Sort: Spark then
        runs no job at all (sorting even a few rows costs a range-partitioning shuffle).
        None when the entry is too big to be read and sorted on the driver.
        """
        read_plan = self._read_plan(key, files, schema_json, order)
        if read_plan is None:
            return None
        new_attrs, old_attrs = read_plan.output(), original.output()
        n = old_attrs.size()
        if columns is None and new_attrs.size() != n:
            columns = ()  # an exact entry must have exactly the operator's columns
        columns = tuple(range(n)) if columns is None else columns
        if len(columns) != n or (columns and max(columns) >= new_attrs.size()):
            raise BridgeError(
                f"cached entry {key} has {new_attrs.size()} columns, cannot serve {n} "
                f"from positions {columns}"
            )
        aliases = []
        for i in range(n):
            old = old_attrs.apply(i)
            aliases.append(
                self._alias(
                    new_attrs.apply(columns[i]),
                    old.name(),
                    old.exprId(),
                    old.qualifier(),
                    self._none,
                    self._empty,
                )
            )
        return self._project(self.seq(aliases), read_plan)

    def _read_plan(
        self, key: str, files: list[str], schema_json: str, order: tuple[SortKey, ...] = ()
    ) -> Any | None:
        version = (key, tuple(files), order)
        cached = self._read_plans.get(version)
        if cached is not None:
            return cached
        from pyspark.sql.types import StructType

        schema = StructType.fromJson(json.loads(schema_json))
        local_bytes = self._local_bytes(files, schema)
        if order:
            table = _read_arrow(files) if files and local_bytes is not None else None
            if table is None or table.num_rows > LOCAL_SORT_ROWS:
                return None
            reader = self.spark.createDataFrame(spark_order(table, order), schema)
        elif not files:
            reader = self.spark.createDataFrame([], schema)
        elif local_bytes is not None:
            reader = self.spark.createDataFrame(_read_arrow(files), schema)
        else:
            reader = self.spark.read.schema(schema).parquet(*files)
        plan = reader._jdf.queryExecution().analyzed()
        self._keep_read_plan(version, plan, local_bytes or 0)
        return plan

    def _keep_read_plan(self, version: tuple, plan: Any, local_bytes: int) -> None:
        # bounded: file lists change as partitions move, and local plans hold their rows
        if len(self._read_plans) >= 512 or self._local_plan_bytes + local_bytes > LOCAL_PLANS_BYTES:
            self._read_plans.clear()
            self._local_plan_bytes = 0
        self._read_plans[version] = plan
        self._local_plan_bytes += local_bytes

    def _local_bytes(self, files: list[str], schema: Any) -> int | None:
        """Total bytes of ``files`` if they are read on the driver, else None."""
        if not self.local_read_bytes or not all(_arrow_exact(f.dataType) for f in schema.fields):
            return None
        total = 0
        for name in files:
            if "://" in name:  # a remote tier (Alluxio without a mount): Spark reads it
                return None
            try:
                total += os.path.getsize(name)
            except OSError as exc:
                raise BridgeError(f"cached file {name} is unreadable: {exc}") from exc
            if total > self.local_read_bytes:
                return None
        return total

    def forget_reads(self) -> None:
        self._read_plans.clear()

    def substitute(
        self,
        captured: CapturedPlan,
        replacements: dict[tuple[int, ...], Any],
        at: tuple[int, ...] = (),
    ) -> Any:
        """The plan under ``at`` with every subtree at a path in ``replacements`` swapped."""
        return _with_replacements(self, captured.root, replacements, at)

    def partitioned(self, plan: Any) -> PartitionedResult:
        """Prepare ``plan``'s result for a partition-by-partition write (see PartitionedResult)."""
        return PartitionedResult(self, self.dataframe_of(plan))

    def join_plan(self, df: DataFrame, root: Any = None) -> JoinPlan:
        """``df``'s optimized plan (``root`` if already captured) with its joins exposed
        for rewriting (see JoinPlan)."""
        try:
            return JoinPlan(self, df, root)
        except Exception as exc:
            if type(exc).__module__.startswith(("py4j", "pyspark")):
                raise BridgeError(f"cannot inspect the plan's joins: {exc}") from exc
            raise

    def column(self, expression: Any) -> Column:
        """A PySpark Column wrapping a resolved Catalyst expression (exprIds kept)."""
        from pyspark.sql import Column

        node = self.jvm.org.apache.spark.sql.classic.ExpressionColumnNode.apply(expression)
        return Column(self.jvm.org.apache.spark.sql.Column(node))

    def bloom_literal(self, bloom: bytes) -> Any:
        """A BINARY Literal holding ``bloom``, one per content (so plans reusing a filter are
        equal). Catalyst's JSON shows a byte array as "[B@<identity hash>", unstable and
        possibly colliding, so ``capture`` renames it by the content's SHA-256."""
        digest = hashlib.sha256(bloom).hexdigest()
        literal = self._bloom_literals.pop(digest, None)
        if literal is None:
            types = self.jvm.org.apache.spark.sql.types.DataTypes
            E = self.jvm.org.apache.spark.sql.catalyst.expressions
            literal = E.Literal.create(bytearray(bloom), types.BinaryType)
            identity = json.loads(literal.toJSON())[0]["value"]
            if self._binary_names.get(identity, f"bloom:{digest}") != f"bloom:{digest}":
                raise BridgeError("Bloom filter literal identity collides with a live one")
            self._binary_names[identity] = f"bloom:{digest}"
        self._bloom_literals[digest] = literal
        while len(self._bloom_literals) > _BLOOM_LITERALS_KEPT:
            old = self._bloom_literals.pop(next(iter(self._bloom_literals)))
            self._binary_names.pop(json.loads(old.toJSON())[0]["value"], None)
        return literal

    def dataframe_of(self, plan: Any) -> DataFrame:
        """Wrap a JVM logical plan as a PySpark DataFrame (Spark re-analyzes and re-optimizes)."""
        from pyspark.sql import DataFrame

        return DataFrame(self._dataset.ofRows(self.spark._jsparkSession, plan), self.spark)


class PartitionedResult:
    """An operator's result as an RDD whose partition i can be computed on its own.

    Creating it runs the shuffle stages below the final one (AQE plans them); ``frame``
    then yields a DataFrame over all partitions or only some, with positional columns
    ``c0..cN``. ``layout`` fingerprints the final physical plan, each output partition's
    read spec and the settings that place rows into partitions: recomputing a subset of
    partitions is only valid under an equal layout and partition count.
    """

    def __init__(self, bridge: CatalystBridge, df: DataFrame) -> None:
        self.bridge = bridge
        spark = bridge.spark
        try:
            with _temporary_conf(spark, MATERIALIZE_CONF):
                qe = df._jdf.queryExecution()
                self.rdd = qe.toRdd()
                physical = qe.executedPlan()
                if physical.getClass().getSimpleName() == "AdaptiveSparkPlanExec":
                    physical = physical.executedPlan()  # the final plan, now that it has run
                self._query_execution, self._physical = qe, physical
                self.row_width = int(df._jdf.schema().defaultSize())
                plan_text = str(physical.toString())
                # e.g. ShuffledRowRDDPartition(0,CoalescedPartitionSpec(0,8,Some(161408)))
                specs = [str(p.toString()) for p in self.rdd.partitions()]
                settings = [spark.conf.get(k, None) for k in LAYOUT_CONF]
                settings.append(str(spark.sparkContext.defaultParallelism))
        except Exception as exc:
            if type(exc).__module__.startswith(("py4j", "pyspark")):
                raise BridgeError(f"cannot prepare the operator's result: {exc}") from exc
            raise
        self.df = df
        self.num_partitions = int(self.rdd.getNumPartitions())
        self.layout = hashlib.sha256(
            json.dumps(
                [
                    normalize_physical_plan(plan_text),
                    normalize_physical_plan("|".join(specs)),
                    settings,
                ]
            ).encode()
        ).hexdigest()[:32]
        self.schema_json = json.dumps(
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

    def write(self, staged: str | os.PathLike, indices: list[int] | None = None) -> bool:
        """Write partitions ``indices`` (default all) into ``staged`` as Spark names its part
        files, task k's file holding partition ``indices[k]`` and an empty partition none.

        A result small enough for the driver (see ``driver_rows``) is collected as Arrow and
        written there with pyarrow: a Spark write job's task-side writers and commit protocol
        cost ~0.13 s more, per first occurrence of a query. True when written on the driver.
        """
        frame = self.frame(indices)
        if indices != [] and self._fits_driver():
            self._write_on_driver(frame, staged)
            return True
        frame.write.option("maxRecordsPerFile", 0).parquet(str(staged))
        return False

    def _fits_driver(self) -> bool:
        limit = self.bridge.local_read_bytes
        if not limit or not all(_arrow_exact(f.dataType) for f in self.df.schema.fields):
            return False
        rows = self.driver_rows
        return rows is not None and rows <= LOCAL_SORT_ROWS and rows * self.row_width <= limit

    @cached_property
    def driver_rows(self) -> int | None:
        """At most how many rows the final stage outputs, None if unknown.

        Known when the stage only aggregates, sorts, filters, projects, limits or unions rows
        read from finished shuffle stages: it outputs no more rows than those stages wrote
        (their runtime row counts). A join or a scan in the final stage leaves it unknown.
        """
        try:
            return _final_stage_rows(self._physical)
        except Exception as exc:
            if type(exc).__module__.startswith(("py4j", "pyspark")):
                return None
            raise

    def _write_on_driver(self, frame: DataFrame, staged: str | os.PathLike) -> None:
        import uuid

        import pyarrow as pa
        import pyarrow.compute as pc
        import pyarrow.parquet as pq
        from pyspark.sql.functions import spark_partition_id

        columns = frame.columns
        try:
            batches = frame.select(*columns, spark_partition_id().alias("task"))._collect_as_arrow()
        except Exception as exc:
            if type(exc).__module__.startswith(("py4j", "pyspark")):
                raise BridgeError(f"cannot compute the operator's result: {exc}") from exc
            raise
        os.makedirs(staged, exist_ok=True)
        if not batches:
            return
        table = pa.Table.from_batches(batches)
        job = uuid.uuid4()
        tasks = table.column("task")
        for task in pc.unique(tasks).to_pylist():
            rows = table.filter(pc.equal(tasks, task)).select(columns)
            name = f"part-{task:05d}-{job}-c000.snappy.parquet"
            pq.write_table(rows, os.path.join(staged, name), compression="snappy")

    def frame(self, indices: list[int] | None = None) -> DataFrame:
        """All partitions, or only ``indices`` (task k of the write computes ``indices[k]``)."""
        from pyspark.sql import DataFrame

        jvm, rdd = self.bridge.jvm, self.rdd
        if indices is not None:
            keep = self.bridge.seq(sorted(indices)).toSet()
            rdd = jvm.org.apache.spark.rdd.PartitionPruningRDD.create(rdd, keep)
        schema = jvm.org.apache.spark.sql.types.DataType.fromJson(self.schema_json)
        spark = self.bridge.spark
        return DataFrame(spark._jsparkSession.internalCreateDataFrame(rdd, schema, False), spark)

    def operator_metrics(self) -> dict[tuple[int, ...], OperatorMetrics]:
        """What each operator of the plan did, once the write job has run (see OperatorMetrics).

        Keyed by path in the optimized plan of ``self.df`` (capture it for fingerprints).
        """
        try:
            return _operator_metrics(self.bridge, self._query_execution, self._physical)
        except Exception as exc:
            if type(exc).__module__.startswith(("py4j", "pyspark")):
                raise BridgeError(f"cannot read the executed plan's metrics: {exc}") from exc
            raise


@dataclass
class OperatorMetrics:
    """One logical operator as it executed: rows out (None if no physical operator counted
    them), task seconds spent in its own physical operators (not its children's), and the
    default byte width of its output row."""

    rows: int | None = None
    task_seconds: float = 0.0
    row_width: int = 0


#: SQLMetric.toString: "SQLMetric(id: 12, name: Some(number of output rows), value: 57)".
_METRIC = re.compile(r"(\w+) -> SQLMetric\(id: \d+, name: (?:Some\([^)]*\)|None), value: (-?\d+)\)")
#: Metrics that time work (ms unless named in _NANOSECOND_METRICS); WholeStageCodegen's
#: pipelineTime includes the pipelines nested below it in the same stage, hence the
#: subtraction in _operator_metrics.
_TIME_METRICS = {"pipelineTime", "collectTime", "buildTime", "shuffleWriteTime"}
_NANOSECOND_METRICS = {"shuffleWriteTime"}
#: Physical nodes past which a pipeline does not continue (stage and exchange boundaries).
_PIPELINE_BREAKERS = ("Exchange", "QueryStageExec", "AdaptiveSparkPlanExec")


def _operator_metrics(
    bridge: CatalystBridge, qe: Any, physical: Any
) -> dict[tuple[int, ...], OperatorMetrics]:
    """Map the executed physical plan's SQL metrics back to logical operators.

    A physical node's ``logicalLink`` is an operator of the optimized plan, or, where AQE
    re-planned above finished stages, an operator over ``LogicalQueryStage``s; such links
    are matched after putting each stage's logical plan back in its place. Rows come from
    the topmost physical node of an operator (a final aggregate, not its partial one).
    """
    paths = bridge.jvm.java.util.HashMap()
    logical: dict[tuple[int, ...], Any] = {}
    stack = [(qe.optimizedPlan(), ())]
    while stack:
        node, path = stack.pop()
        logical[path] = node
        paths.put(node, ",".join(map(str, path)))
        kids = node.children()
        stack.extend((kids.apply(i), (*path, i)) for i in range(kids.size()))

    def restored(node: Any) -> Any:
        if node.getClass().getSimpleName() == "LogicalQueryStage":
            return node.logicalPlan()
        kids = node.children()
        return node.withNewChildren(
            bridge.seq([restored(kids.apply(i)) for i in range(kids.size())])
        )

    def path_of(p: Any) -> tuple[int, ...] | None:
        link = p.logicalLink()
        if not link.isDefined():
            return None
        key = paths.get(link.get())
        if key is None:
            key = paths.get(restored(link.get()))
        return None if key is None else tuple(int(i) for i in key.split(",") if i)

    found: dict[tuple[int, ...], OperatorMetrics] = {}

    def visit(p: Any, enclosing: list[float] | None) -> tuple[int, ...] | None:
        """Record ``p``'s metrics; return the operator it belongs to (its own or its child's).

        ``enclosing`` collects the times of pipelines nested in the one above ``p`` (in the
        same stage), which that pipeline's own time includes.
        """
        name = p.getClass().getSimpleName()
        if name == "AdaptiveSparkPlanExec":
            return visit(p.executedPlan(), None)
        if name.endswith("QueryStageExec"):
            return visit(p.plan(), None)
        if name == "ReusedExchangeExec":
            return None  # counted where the exchange first ran
        metrics = {k: int(v) for k, v in _METRIC.findall(str(p.metrics().toString()))}
        seconds = sum(
            v / (1e9 if k in _NANOSECOND_METRICS else 1e3)
            for k, v in metrics.items()
            if k in _TIME_METRICS
        )
        kids = p.children()
        if name == "WholeStageCodegenExec":
            nested: list[float] = []
            path = visit(kids.apply(0), nested)
            if enclosing is not None:
                enclosing.append(seconds)
            if path is not None:
                found.setdefault(path, OperatorMetrics()).task_seconds += max(
                    seconds - sum(nested), 0.0
                )
            return path
        inner = None if name.endswith(_PIPELINE_BREAKERS) else enclosing
        child_paths = [visit(kids.apply(i), inner) for i in range(kids.size())]
        path = path_of(p) or next((c for c in child_paths if c is not None), None)
        if path is None:
            return None
        entry = found.setdefault(path, OperatorMetrics())
        if "numOutputRows" in metrics:
            entry.rows = metrics["numOutputRows"]  # visited after its children: topmost wins
        entry.task_seconds += seconds
        return path

    visit(physical, None)
    for path, entry in found.items():
        entry.row_width = int(logical[path].schema().defaultSize())
    return found


def normalize_physical_plan(text: str) -> str:
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


#: A byte array's value in Catalyst JSON: "[B@" + identity hash.
_BINARY_VALUE = re.compile(r'"value":"(\[B@[0-9a-f]+)"')


class CapturedPlan:
    """An optimized logical plan held in the JVM, plus its plain-Python twin for ``qtree``."""

    def __init__(self, bridge: CatalystBridge, df: DataFrame) -> None:
        self.bridge = bridge
        try:
            self.root = df._jdf.queryExecution().optimizedPlan()
            tree, serial, unnamed_binary = bridge.plan_tree(self.root.canonicalized())
            self.tree = self._annotate(tree, unnamed_binary=unnamed_binary)
            #: What ``tree`` is a function of (the remembered plan, its files' identities and
            #: determinism), for memoizing work on it; None when not remembered.
            self.memo_key = (
                None
                if serial is None
                else (
                    serial,
                    tuple(
                        (n.path, n.relation["key"], n.relation["version"])
                        for n in self.tree.leaves()
                        if n.relation is not None
                    ),
                    tuple(n.path for n in self.tree.walk() if not n.deterministic),
                )
            )
        except BridgeError:
            raise
        except Exception as exc:  # py4j errors carry the JVM exception text
            raise BridgeError(f"cannot capture the optimized plan: {exc}") from exc

    def _annotate(self, tree: PlanNode, unnamed_binary: bool = False) -> PlanNode:
        """Add what canonical JSON lacks: determinism and the identity of file relations.

        A binary literal Criss did not name by content serialises as "[B@<identity hash>":
        the same bytes differ between runs and different bytes may collide, so an operator
        holding one is never cached or matched.
        """
        leaves = self.root.collectLeaves()
        jleaves = [leaves.apply(i) for i in range(leaves.size())]
        if len(jleaves) != sum(1 for _ in tree.leaves()):
            raise BridgeError("plan JSON and JVM plan disagree on their leaves")
        identities = {
            leaf.path: file_relation_identity(jleaf)
            for leaf, jleaf in zip(tree.leaves(), jleaves, strict=True)
            if leaf.op == "LogicalRelation"
        }
        # QueryPlan.deterministic covers the children too: one call settles a deterministic plan.
        nondeterministic = set() if self.root.deterministic() else self._nondeterministic_paths()

        def visit(node: PlanNode) -> PlanNode:
            children = tuple(visit(c) for c in node.children)
            binary = unnamed_binary and '"[B@' in json.dumps(node.args)
            return node.with_(
                children=children,
                deterministic=node.path not in nondeterministic,
                relation=identities.get(node.path),
                uncacheable=(
                    "binary literal without a stable identity" if binary else node.uncacheable
                ),
            )

        return visit(tree)

    def _nondeterministic_paths(self) -> set[tuple[int, ...]]:
        found: set[tuple[int, ...]] = set()
        stack = [((), self.root)]
        while stack:
            path, node = stack.pop()
            if not node.deterministic():
                found.add(path)
                kids = node.children()
                stack.extend((path + (i,), kids.apply(i)) for i in range(kids.size()))
        return found

    def node_at(self, path: tuple[int, ...]) -> Any:
        return _node_at(self.root, path)

    def label_at(self, path: tuple[int, ...], width: int = 120) -> str:
        return str(self.node_at(path).simpleString(width))


def file_relation_identity(jnode: Any) -> dict[str, Any] | None:
    """Format, options and a fresh (path, size, mtime) listing of a file-based relation."""
    relation = jnode.relation()
    if relation.getClass().getSimpleName() != "HadoopFsRelation":
        return None
    location = relation.location()
    location.refresh()  # a temp view keeps a stale listing after files change
    statuses = location.allFiles()
    files = sorted((p, int(n), int(t)) for p, n, t in _FILE_STATUS.findall(statuses.mkString("\n")))
    if len(files) != statuses.size():  # an unexpected FileStatus format: ask file by file
        files = sorted(
            (str(s.getPath().toString()), int(s.getLen()), int(s.getModificationTime()))
            for s in (statuses.apply(i) for i in range(statuses.size()))
        )
    root_paths = sorted(str(location.rootPaths().mkString("\n")).split("\n"))
    fmt = str(relation.fileFormat().toString())
    options = str(relation.options().toString())
    key = hashlib.sha256(json.dumps([fmt, root_paths]).encode()).hexdigest()[:24]
    version = hashlib.sha256(json.dumps([options, files]).encode()).hexdigest()[:24]
    return {
        "format": fmt,
        "options": options,
        "roots": root_paths,
        "files": files,
        "key": key,
        "version": version,
        "bytes": sum(size for _, size, _ in files),
    }


# --- join rewrites ---------------------------------------------------------------------------


class JoinSide:
    """One input of a join: its output columns and what Spark estimates it to be (each
    fetched from the JVM on first use)."""

    def __init__(self, plan: Any) -> None:
        self._plan = plan

    @cached_property
    def columns(self) -> tuple[tuple[str, Any, int], ...]:
        """(name, Spark SQL type as JSON, exprId) per output attribute, in order."""
        output = self._plan.output()
        return tuple(
            (str(a.name()), json.loads(a.dataType().json()), int(a.exprId().id()))
            for a in (output.apply(i) for i in range(output.size()))
        )

    @cached_property
    def estimated_bytes(self) -> int:
        """Catalyst's pre-execution size estimate (reliable for scans, not for joins)."""
        return int(str(self._plan.stats().sizeInBytes()))


class JoinSite:
    """A Join operator of an optimized plan, in plain Python for ``qtree``/``policies``.

    Its fields are fetched from the JVM on first use (every query's joins are listed, few
    are of interest to any optimization).
    """

    def __init__(self, plan: JoinPlan, path: tuple[int, ...], node: Any) -> None:
        self.path = path
        self._plan, self._node = plan, node

    @cached_property
    def join_type(self) -> str:
        """Catalyst's JoinType.sql: "INNER", "LEFT OUTER", "LEFT SEMI", ..."""
        return str(self._node.joinType().sql())

    @cached_property
    def condition(self) -> Expr | None:
        """The join condition as a plain expression tree (non-canonical: child order and
        exprIds are the JVM's, so a path into it addresses the same JVM sub-expression)."""
        condition = self._node.condition()
        if not condition.isDefined():
            return None
        return expression_tree(json.loads(condition.get().toJSON()))

    @cached_property
    def left(self) -> JoinSide:
        return JoinSide(self._node.left())

    @cached_property
    def right(self) -> JoinSide:
        return JoinSide(self._node.right())

    @cached_property
    def label(self) -> str:
        return str(self._node.simpleString(200))

    def __repr__(self) -> str:
        return f"JoinSite({self.path}, {self.label[:60]!r})"


class JoinPlan:
    """An optimized plan whose joins may be replaced by DataFrames built from their inputs.

    Join optimizations build a replacement with the DataFrame API over ``side()`` frames,
    whose columns keep the join inputs' exprIds, so the join's original condition
    (``condition_column()``) still resolves against them; ``replace()`` puts the
    replacements back under the original ancestors.
    """

    def __init__(self, bridge: CatalystBridge, df: DataFrame, root: Any = None) -> None:
        self.bridge = bridge
        self.root = root if root is not None else df._jdf.queryExecution().optimizedPlan()
        self.sites = self._find_joins()
        #: path → JVM plan replacing the subtree there (see ``put``).
        self.replaced: dict[tuple[int, ...], Any] = {}

    def _find_joins(self) -> list[JoinSite]:
        sites: list[JoinSite] = []
        stack: list[tuple[tuple[int, ...], Any]] = [((), self.root)]
        while stack:
            path, node = stack.pop()
            kids = node.children()
            stack.extend((path + (i,), kids.apply(i)) for i in reversed(range(kids.size())))
            if node.nodeName() == "Join":
                sites.append(JoinSite(self, path, node))
        return sites

    def relations(self, path: tuple[int, ...], which: str) -> list[dict[str, Any]]:
        """Identities (with fresh file listings) of the file relations under one join input.

        Key artifacts built from an input (key sets, filters, indexes) by these, so an
        artifact is never served for files that have since changed.
        """
        join = self.node_at(path)
        leaves = (join.left() if which == "left" else join.right()).collectLeaves()
        found = (
            file_relation_identity(leaf)
            for leaf in (leaves.apply(i) for i in range(leaves.size()))
            if leaf.getClass().getSimpleName() == "LogicalRelation"
        )
        return [identity for identity in found if identity is not None]

    def node_at(self, path: tuple[int, ...]) -> Any:
        return _node_at(self.root, path)

    def side(self, path: tuple[int, ...], which: str) -> DataFrame:
        """The join's ``left`` or ``right`` input as a DataFrame (same exprIds), including
        any replacement already ``put`` below it."""
        child = path + ((0,) if which == "left" else (1,))
        return self.bridge.dataframe_of(self._rebuild(child))

    def condition_column(self, path: tuple[int, ...], expr_path: tuple[int, ...] = ()) -> Column:
        """The join condition, or its sub-expression at ``expr_path``, as a Column."""
        expr = self.node_at(path).condition().get()
        for index in expr_path:
            expr = expr.children().apply(index)
        return self.bridge.column(expr)

    def attribute_column(self, path: tuple[int, ...], which: str, index: int) -> Column:
        """Output attribute ``index`` of the join's ``which`` input, as a Column."""
        join = self.node_at(path)
        side = join.left() if which == "left" else join.right()
        return self.bridge.column(side.output().apply(index))

    def put(self, path: tuple[int, ...], frame: DataFrame) -> None:
        """Replace the subtree at ``path`` by ``frame``.

        ``frame`` must output every attribute of the subtree it replaces (same exprIds;
        extra columns are dropped by a Project of the original output), so ancestors and
        their conditions still resolve.
        """
        original = self.node_at(path)
        analyzed = frame._jdf.queryExecution().analyzed()
        self.replaced[path] = self.bridge._project(original.output(), analyzed)

    def result(self) -> DataFrame:
        """The whole plan with every replacement in place."""
        return self.bridge.dataframe_of(self._rebuild(()))

    def _rebuild(self, at: tuple[int, ...]) -> Any:
        return _with_replacements(self.bridge, self.root, self.replaced, at)


def _node_at(root: Any, path: tuple[int, ...]) -> Any:
    """The JVM plan node at ``path`` (child indices) under ``root``."""
    node = root
    for index in path:
        node = node.children().apply(index)
    return node


def _with_replacements(
    bridge: CatalystBridge, root: Any, replacements: dict[tuple[int, ...], Any], at: tuple[int, ...]
) -> Any:
    """The JVM plan under ``root``'s node at ``at`` with the subtree at each path of
    ``replacements`` swapped in: its ancestors rebuilt, every other subtree shared."""
    if at in replacements:
        return replacements[at]
    node = _node_at(root, at)
    if not any(len(p) > len(at) and p[: len(at)] == at for p in replacements):
        return node
    kids = [
        _with_replacements(bridge, root, replacements, at + (i,))
        for i in range(node.children().size())
    ]
    return node.withNewChildren(bridge.seq(kids))


# -- join rewrites: filter-based joins (criss.joins.prefilter / runtime / bloom) --


def operator_names(plan: JoinPlan, path: tuple[int, ...]) -> list[str]:
    """Class simple names of the operators from the root down to ``path`` (inclusive)."""
    node, names = plan.root, [str(plan.root.getClass().getSimpleName())]
    for index in path:
        node = node.children().apply(index)
        names.append(str(node.getClass().getSimpleName()))
    return names


# -- join rewrites: Bloom filters (criss.joins.bloom) --
#
# Spark 4's own runtime-filter expressions (InjectRuntimeFilter builds the same ones):
# BloomFilterAggregate over xxhash64 of the keys (a partial filter per partition, merged by
# the aggregate: one job, one binary value) and BloomFilterMightContain probing it.

_BLOOM_MAX_BITS = "spark.sql.optimizer.runtime.bloomFilter.maxNumBits"
_BLOOM_MAX_ITEMS = "spark.sql.optimizer.runtime.bloomFilter.maxNumItems"
#: Bloom literals kept alive (and content-named in captured plans), most recent last.
_BLOOM_LITERALS_KEPT = 16


def _expressions(plan: JoinPlan, path: tuple[int, ...], expr_paths: list[tuple[int, ...]]) -> Any:
    """The join condition's sub-expressions at ``expr_paths`` as a Scala Seq."""
    found = []
    for expr_path in expr_paths:
        expr = plan.node_at(path).condition().get()
        for index in expr_path:
            expr = expr.children().apply(index)
        found.append(expr)
    return plan.bridge.seq(found)


def _long_literal(bridge: CatalystBridge, value: int) -> Any:
    """A foldable LONG expression (py4j hands small ints over as Integer, which a LONG
    Literal rejects, so an INT literal cast to LONG)."""
    E = bridge.jvm.org.apache.spark.sql.catalyst.expressions
    types = bridge.jvm.org.apache.spark.sql.types.DataTypes
    literal = E.Literal.create(int(value), types.IntegerType)
    return E.Cast(literal, types.LongType, bridge._none, E.EvalMode.LEGACY())


def bloom_limits(bridge: CatalystBridge) -> tuple[int, int]:
    """Spark's caps on a Bloom filter aggregate: (max bits, max expected items)."""
    conf = bridge.spark.conf
    return int(conf.get(_BLOOM_MAX_BITS, "67108864")), int(conf.get(_BLOOM_MAX_ITEMS, "4000000"))


def build_bloom_filter(
    plan: JoinPlan,
    path: tuple[int, ...],
    which: str,
    expr_paths: list[tuple[int, ...]],
    items: int,
    bits: int,
) -> bytes | None:
    """Serialized Bloom filter of xxhash64 of the key tuple of the join's ``which`` input,
    over its rows whose keys are all non-NULL (NULL never equals anything). Built
    distributed by ``BloomFilterAggregate``: one job; None when no row has keys."""
    bridge = plan.bridge
    E = bridge.jvm.org.apache.spark.sql.catalyst.expressions
    keys = _expressions(plan, path, expr_paths)
    aggregate = E.aggregate.BloomFilterAggregate(
        E.XxHash64(keys), _long_literal(bridge, items), _long_literal(bridge, bits)
    ).toAggregateExpression()
    frame = plan.side(path, which)
    columns = [bridge.column(keys.apply(i)) for i in range(keys.size())]
    frame = frame.where(functools.reduce(lambda a, b: a & b, [c.isNotNull() for c in columns]))
    value = frame.agg(bridge.column(aggregate).alias("bloom")).first()[0]
    return bytes(value) if value is not None else None


def bloom_might_contain(
    plan: JoinPlan, path: tuple[int, ...], expr_paths: list[tuple[int, ...]], bloom: bytes
) -> Column:
    """``might_contain(bloom, xxhash64(keys))`` over the join's other input's key tuple."""
    bridge = plan.bridge
    E = bridge.jvm.org.apache.spark.sql.catalyst.expressions
    hashed = E.XxHash64(_expressions(plan, path, expr_paths))
    probe = E.BloomFilterMightContain(bridge.bloom_literal(bloom), hashed)
    return bridge.column(probe)


# --- plan inspection used by experiments ------------------------------------------------------


def _plan(df: DataFrame, phase: str) -> Any:
    qe = df._jdf.queryExecution()
    if phase == "analyzed":
        return qe.analyzed()
    if phase == "optimized":
        return qe.optimizedPlan()
    raise BridgeError(f"unknown plan phase {phase!r}; use one of {PHASES}")


def subtree_semantic_hashes(df: DataFrame, phase: str = "analyzed") -> list[int]:
    """Catalyst's semantic hash of every operator subtree of ``df``'s plan, in pre-order.

    Equal hashes mean "same result" inside one JVM only: never persist them.
    """
    hashes: list[int] = []
    stack = [_plan(df, phase)]
    while stack:
        node = stack.pop()
        hashes.append(int(node.semanticHash()))
        children = node.children()
        stack.extend(children.apply(i) for i in reversed(range(children.size())))
    return hashes


def plan_overlap(original: DataFrame, variant: DataFrame, phase: str = "analyzed") -> float:
    """Share of ``variant``'s operators whose whole subtree also occurs in ``original``'s plan."""
    seen = set(subtree_semantic_hashes(original, phase))
    mine = subtree_semantic_hashes(variant, phase)
    return sum(h in seen for h in mine) / len(mine)


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


def _final_stage_rows(physical: Any) -> int | None:
    """Rows read by the final stage of an adaptive plan whose earlier stages have run, if
    every operator of that stage is row-bounded (``_ROW_BOUNDED``); else None."""
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


def _read_arrow(files: list[str]) -> Any:
    """Cached Parquet files as one Arrow table (a damaged file raises BridgeError)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        return pa.concat_tables([pq.read_table(name) for name in files])
    except (OSError, pa.ArrowException) as exc:
        raise BridgeError(f"cached files could not be read: {exc}") from exc


def _arrow_exact(data_type: Any) -> bool:
    """Whether values of ``data_type`` survive Parquet → Arrow → Spark unchanged.

    Timestamps stay with Spark: its INT96 Parquet timestamps read back without a time zone.
    Strings only with the default collation.
    """
    from pyspark.sql import types as T

    if isinstance(data_type, T.StringType):
        return data_type == T.StringType()
    return isinstance(
        data_type,
        (
            T.BooleanType,
            T.ByteType,
            T.ShortType,
            T.IntegerType,
            T.LongType,
            T.FloatType,
            T.DoubleType,
            T.DecimalType,
            T.DateType,
            T.BinaryType,
        ),
    )


def spark_order(table: Any, order: tuple[SortKey, ...]) -> Any:
    """``table``'s rows in the order Spark's Sort gives them for ``order`` (ties in any order).

    Spark's orderings: NaN above every other float (and equal to NaN), -0.0 equal to 0.0,
    strings and binaries by unsigned bytes (for UTF-8, code point order), nulls where
    ``nulls_first`` says. Stable passes from the last key to the first.
    """
    indices = list(range(table.num_rows))
    for key in reversed(order):
        values = table.column(key.column).to_pylist()
        # reverse=True keeps equal elements in order; place nulls so they land right after it
        null_rank = 0 if key.nulls_first != key.descending else 2

        def rank(i: int, values: list = values, null_rank: int = null_rank) -> tuple:
            value = values[i]
            if value is None:
                return (null_rank,)
            if isinstance(value, float) and value != value:
                return (1, 1)
            return (1, 0, value)

        indices.sort(key=rank, reverse=key.descending)
    return table.take(indices)
