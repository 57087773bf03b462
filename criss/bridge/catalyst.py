"""``CatalystBridge``: one SparkSession's Catalyst, its JVM classes resolved once.

The engine's single handle on the JVM. Each method is a short door into the module doing
that job: capture, rewrite, execution, joins, Bloom filters.
"""

from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING, Any

from criss.bridge.bloom import BloomLiterals
from criss.bridge.capture import (
    REMEMBERED_PLANS,
    CapturedPlan,
    KnownRelations,
    PlanTree,
    RememberedTrees,
)
from criss.bridge.errors import jvm_errors
from criss.bridge.execution import PartitionedResult
from criss.bridge.joins import JoinPlan
from criss.bridge.lift import lifted_aggregate, lifted_row_width, widened_selection
from criss.bridge.lossy import settings_of
from criss.bridge.plans import optimized_plan
from criss.bridge.rewrite import ReadPlans, with_replacements
from criss.bridge.versions import (
    DATASET_CLASS,
    EXPRESSION_COLUMN_NODE_CLASS,
    FastGateway,
    jvm_class,
    require_supported_spark,
)
from criss.bridge.writethrough import WrittenStep, write_through_plan, written_steps

#: Why a query calling a ``try_*`` function is left to plain Spark. ``try_add(a, b)`` is
#: ``a + b`` evaluated in TRY mode (NULL on overflow), and ``try_cast`` a cast in TRY mode
#: (NULL where it cannot convert); Catalyst's plan JSON writes no evaluation mode, so their
#: fingerprints would be those of ``a + b`` and ``cast``, which raise or wrap around.
TRY_FUNCTIONS = (
    "calls a try_* function, whose evaluation mode (TRY) Catalyst's plan JSON does not record"
)

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

    from criss.qtree.rewrite import SortKey
    from criss.qtree.subsume import Derivation, LiftSite


class CatalystBridge:
    """py4j access to one SparkSession's Catalyst, with JVM classes resolved once."""

    def __init__(self, spark: SparkSession, local_read_bytes: int = 0) -> None:
        require_supported_spark(spark.version)
        self.spark = spark
        #: Cached files up to this many bytes in all are read on the driver and handed to
        #: Spark as a local relation (no read job: ~15 ms against ~130 ms for a small file).
        self.local_read_bytes = local_read_bytes
        #: ... and hold at most this many values (rows × columns; None: no bound), which the
        #: planner sets from what such reads were measured to take (criss.planner.learning).
        self.local_read_values: int | None = None
        #: Spark's default parallelism, which turns operators' task time into the compute
        #: seconds the learned per-stage rates use (not the task slots: ``task_slots``).
        self.parallelism = max(int(spark.sparkContext.defaultParallelism), 1)
        jvm = spark._jvm
        self.jvm = jvm
        self._utils = jvm.org.apache.spark.api.python.PythonUtils
        #: The session's SQL settings (those it runs plans under: ``lossy.RESULT_SETTINGS``).
        self._sql_conf = spark._jsparkSession.sessionState().conf()
        self._alias = jvm.org.apache.spark.sql.catalyst.expressions.Alias
        self._project = jvm.org.apache.spark.sql.catalyst.plans.logical.Project
        self._dataset = jvm_class(jvm, DATASET_CLASS)
        self._column_node = jvm_class(jvm, EXPRESSION_COLUMN_NODE_CLASS)
        self._column_class = jvm_class(jvm, "org.apache.spark.sql.Column")
        #: Static members resolved so far (see ``static``).
        self._statics: dict[str, Any] = {}
        #: Scala's ``None`` (an empty Option).
        self.none = jvm.scala.Option.empty()
        self._empty = self.seq([])
        self._reads = ReadPlans(self)
        self._blooms = BloomLiterals(self)
        self._trees = RememberedTrees(REMEMBERED_PLANS)
        #: File relations' fixed facts, so a capture lists each index and little else.
        self.known_relations = KnownRelations(jvm)
        self._fast_gateway = FastGateway(spark)
        self.speed_up_gateway()

    def static(self, name: str) -> Any:
        """The static method or constructor ``name`` ("package.Class.member", or a class),
        looked up once: py4j asks the JVM about every segment of a name on every use."""
        found = self._statics.get(name)
        if found is None:
            found = self._statics[name] = jvm_class(self.jvm, name)
        return found

    @cached_property
    def memory_and_disk(self) -> Any:
        """The JVM's ``StorageLevel.MEMORY_AND_DISK``, made once (a few JVM calls each time)."""
        from pyspark import StorageLevel

        return self.spark.sparkContext._getJavaStorageLevel(StorageLevel.MEMORY_AND_DISK)

    def seq(self, items: list[Any]) -> Any:
        """A Scala Seq from a Python list."""
        return self._utils.toSeq(items)

    def speed_up_gateway(self) -> None:
        """Turn off Nagle's algorithm on this thread's py4j connection (see FastGateway)."""
        self._fast_gateway()

    # --- capture --------------------------------------------------------------------------------

    @property
    def remembered_captures(self) -> int:
        """Captures whose tree was remembered from an equal plan (no ``toJSON``)."""
        return self._trees.hits

    def plan_tree(self, canonical: Any) -> PlanTree:
        """The plain-Python tree of a canonicalized plan (see RememberedTrees)."""
        # the effective mode: ``conf.get(key, default)`` returns ``default`` for a setting
        # never set, not Spark's default (ANSI on since Spark 4)
        ansi = bool(self._sql_conf.ansiEnabled())
        settings = settings_of(str(self._sql_conf.getAllConfs().toString()))
        return self._trees.tree(canonical, self._blooms.names, ansi, self.jvm, settings)

    def capture(self, df: DataFrame) -> CapturedPlan:
        """``df``'s optimized plan, captured (see CapturedPlan); a plan of a query calling a
        ``try_*`` function is never cached nor served (``TRY_FUNCTIONS``)."""
        captured = self.capture_plan(self._optimized(df))
        if "try_" in str(df._jdf.queryExecution().analyzed().toString()).lower():
            captured.refuse(TRY_FUNCTIONS)
        return captured

    def capture_plan(self, optimized: Any, refresh_listings: bool = True) -> CapturedPlan:
        """An optimized logical plan held in the JVM, captured (see CapturedPlan)."""
        self.speed_up_gateway()
        return CapturedPlan(self, optimized, refresh_listings)

    @jvm_errors("optimize the query")
    def _optimized(self, df: DataFrame) -> Any:
        return optimized_plan(df)

    # --- rewrite --------------------------------------------------------------------------------

    def cached_read_plan(
        self,
        original: Any,
        key: str,
        files: list[str],
        schema_json: str,
        columns: tuple[int, ...] | None = None,
        order: tuple[SortKey, ...] = (),
        table: Any = None,
    ) -> Any | None:
        """A plan reading cached files that outputs ``original``'s attributes (same exprIds).

        Files hold positional columns ``c0..cN``; a Project of Aliases restores each
        original attribute's name and exprId so every ancestor still resolves. ``columns``
        picks, for each original attribute, the cached column holding it (default: same
        position). With ``order`` (keys over cached columns), the rows come as a local
        relation already in that order, to stand in for ``original``, a Sort: Spark then
        runs no job at all (sorting even a few rows costs a range-partitioning shuffle).
        None when the entry is too big to be read and sorted on the driver. ``table``, the
        files' rows as Arrow when the caller still holds them, spares reading them back.
        """
        return self._reads.cached_read_plan(
            original, key, files, schema_json, columns, order, table
        )

    @jvm_errors("compute an operator from a cached result")
    def derived_read_plan(
        self,
        original: Any,
        key: str,
        files: list[str],
        schema_json: str,
        derivation: Derivation,
        table: Any = None,
    ) -> Any:
        """A plan computing ``original``'s rows from cached files as ``derivation`` says
        (filter again, aggregate again), outputting ``original``'s attributes."""
        return self._reads.derived_read_plan(original, key, files, schema_json, derivation, table)

    @jvm_errors("compute an operator from a result in Spark's cache")
    def derived_plan(self, original: Any, read: DataFrame, derivation: Derivation) -> Any:
        """A plan computing ``original``'s rows from ``read``, a DataFrame of a cached
        result (``CachedResult.positional_frame``), as ``derivation`` says."""
        return self._reads.derived_plan(original, read, derivation)

    @jvm_errors("lift the aggregate over its parameters")
    def lifted_aggregate(self, aggregate: Any, sites: list[LiftSite]) -> DataFrame:
        """``aggregate`` grouped also by the columns its parameters filter, without those
        conditions: for each site, the columns at its positions of the input of the Filter
        at its relative path (see criss.bridge.lift)."""
        return lifted_aggregate(self, aggregate, sites)

    @jvm_errors("widen the selection to the conditions its template shares")
    def widened_selection(self, selection: Any, sites: list[LiftSite]) -> DataFrame:
        """``selection`` without the conditions that read only the columns at each site's
        positions of the input of the Filter at its relative path, which it outputs
        instead (see criss.bridge.lift)."""
        return widened_selection(self, selection, sites)

    def row_width(self, df: DataFrame) -> int:
        """Spark's default width in bytes of a row of ``df``."""
        return int(df._jdf.schema().defaultSize())

    def lifted_row_width(self, aggregate: Any, sites: list[LiftSite]) -> int:
        """Spark's default width in bytes of a row of ``aggregate`` lifted over ``sites``."""
        return lifted_row_width(aggregate, sites)

    def forget_reads(self) -> None:
        self._reads.forget()

    def take_local_reads(self) -> list[tuple[int, float]]:
        """(values, seconds) of each cached entry read on the driver since the last call."""
        taken, self._reads.local_reads = self._reads.local_reads, []
        return taken

    def substitute(
        self,
        captured: CapturedPlan,
        replacements: dict[tuple[int, ...], Any],
        at: tuple[int, ...] = (),
    ) -> Any:
        """The plan under ``at`` with every subtree at a path in ``replacements`` swapped."""
        return with_replacements(self, captured.nodes, replacements, at)

    def with_children(self, node: Any, children: list[Any]) -> Any:
        """The JVM plan ``node`` with ``children`` (JVM plans) in place of its own."""
        return node.withNewChildren(self.seq(children))

    def project(self, attributes: Any, child: Any) -> Any:
        """A logical Project of ``attributes`` (a Scala Seq of named expressions) over
        ``child``."""
        return self._project(attributes, child)

    def alias_as(self, expression: Any, attribute: Any) -> Any:
        """``expression`` aliased to ``attribute``'s name, exprId and qualifier."""
        return self._alias(
            expression,
            attribute.name(),
            attribute.exprId(),
            attribute.qualifier(),
            self.none,
            self._empty,
        )

    def dataframe_of(self, plan: Any) -> DataFrame:
        """Wrap a JVM logical plan as a PySpark DataFrame (Spark re-analyzes and re-optimizes)."""
        from pyspark.sql import DataFrame

        return DataFrame(self._dataset.ofRows(self.spark._jsparkSession, plan), self.spark)

    def column(self, expression: Any) -> Column:
        """A PySpark Column wrapping a resolved Catalyst expression (exprIds kept)."""
        from pyspark.sql import Column

        node = self._column_node.apply(expression)
        return Column(self._column_class(node))

    # --- execution and joins --------------------------------------------------------------------

    def partitioned(self, plan: Any) -> PartitionedResult:
        """Prepare ``plan``'s result for a partition-by-partition write (see PartitionedResult)."""
        return PartitionedResult(self, self.dataframe_of(plan))

    @jvm_errors("put a write-through step in the plan")
    def write_through(self, plan: Any, schema_json: str, staged: str, token: str) -> Any:
        """``plan`` (of positional schema ``schema_json``) under a step whose tasks write
        its partitions into ``staged`` as they pass them on (see criss.bridge.writethrough)."""
        return write_through_plan(self, plan, schema_json, staged, token)

    @jvm_errors("find what an action's write-through steps wrote")
    def written_steps(self, query_execution: Any) -> list[WrittenStep]:
        """The write-through steps an action ran, with their partitions' count and layout."""
        return written_steps(self, query_execution)

    @jvm_errors("inspect the plan's joins")
    def join_plan(self, df: DataFrame, captured: CapturedPlan | None = None) -> JoinPlan:
        """``df``'s optimized plan (``captured``'s if already captured) with its joins
        exposed for rewriting (see JoinPlan)."""
        if captured is None:
            return JoinPlan(self, df)
        return JoinPlan(self, df, captured.nodes, captured.tree)

    @jvm_errors("read Spark's broadcast join threshold")
    def broadcast_threshold(self) -> int:
        """Bytes under which Spark broadcasts a join's input
        (``spark.sql.autoBroadcastJoinThreshold``; negative: it broadcasts none)."""
        return int(self.spark._jsparkSession.sessionState().conf().autoBroadcastJoinThreshold())

    @jvm_errors("count Spark's task slots")
    def task_slots(self) -> int:
        """Tasks Spark can run at once now (the executors' cores over the cores a task
        takes), for turning task time into wall time; the default parallelism while no
        executor is registered."""
        context = self.spark.sparkContext._jsc.sc()
        profile = context.resourceProfileManager().defaultResourceProfile()
        slots = int(context.maxNumConcurrentTasks(profile))
        return slots if slots > 0 else self.parallelism

    @jvm_errors("list Spark's executors")
    def executor_hosts(self) -> tuple[str, tuple[str, ...], int]:
        """The driver's host, the hosts of the executors registered now, and how many
        executors that is (Spark's list also holds the driver, under its own host)."""
        context = self.spark.sparkContext
        infos = context._jsc.sc().statusTracker().getExecutorInfos()
        driver = context.getConf().get("spark.driver.host", "")
        return driver, tuple(sorted({info.host() for info in infos})), max(len(infos) - 1, 0)

    def bloom_literal(self, bloom: bytes) -> Any:
        """A BINARY Literal holding ``bloom``, one per content (see BloomLiterals)."""
        return self._blooms.literal(bloom)
