"""What each logical operator did when its plan ran: SQL metrics mapped back from the
executed physical plan to paths in the optimized logical plan."""

from __future__ import annotations

import logging
import re
import threading
import weakref
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from criss.bridge.catalyst import CatalystBridge

log = logging.getLogger("criss")


@dataclass
class OperatorMetrics:
    """One logical operator as it executed: rows out (None if no physical operator counted
    them), task seconds spent in its own physical operators (not its children's), and the
    default byte width of its output row."""

    rows: int | None = None
    task_seconds: float = 0.0
    row_width: int = 0
    #: Task seconds its file scans spent reading and decoding files (Spark's "scan time",
    #: already inside ``task_seconds``), and the bytes of the files they read.
    scan_seconds: float = 0.0
    file_bytes: int = 0


#: SQLMetric.toString: "SQLMetric(id: 12, name: Some(number of output rows), value: 57)".
_METRIC = re.compile(r"(\w+) -> SQLMetric\(id: \d+, name: (?:Some\([^)]*\)|None), value: (-?\d+)\)")
#: Metrics that time work (ms unless named in _NANOSECOND_METRICS); WholeStageCodegen's
#: pipelineTime includes the pipelines nested below it in the same stage, hence the
#: subtraction in ``_MetricsWalk._visit_codegen``.
_TIME_METRICS = {"pipelineTime", "collectTime", "buildTime", "shuffleWriteTime"}
_NANOSECOND_METRICS = {"shuffleWriteTime"}
#: A file scan's own reading time (ms; inside its pipeline's time) and the bytes it read.
_SCAN_TIME, _FILES_SIZE = "scanTime", "filesSize"
#: Physical nodes past which a pipeline does not continue (stage and exchange boundaries).
_PIPELINE_BREAKERS = ("Exchange", "QueryStageExec", "AdaptiveSparkPlanExec")

Path = tuple[int, ...]
#: Marks, among a pipeline's operators, one linked to no operator of the optimized plan.
_UNPLACED: Path = (-1,)
#: Logical operators that only select rows or columns (cheap beside a fused aggregate/join).
_ROW_SELECTING = frozenset({"Project", "Filter", "SubqueryAlias", "LocalLimit", "GlobalLimit"})


def operator_metrics(bridge: CatalystBridge, qe: Any, physical: Any) -> dict[Path, OperatorMetrics]:
    """Map the executed physical plan's SQL metrics back to logical operators.

    A physical node's ``logicalLink`` is an operator of the optimized plan, or, where AQE
    re-planned above finished stages, an operator over ``LogicalQueryStage``s; such links
    are matched after putting each stage's logical plan back in its place. Rows come from
    the topmost physical node of an operator (a final aggregate, not its partial one).
    """
    walk = _MetricsWalk(bridge, qe.optimizedPlan())
    walk.visit(physical, None)
    if walk.unplaced_seconds:
        walk.found.setdefault((), OperatorMetrics()).task_seconds += walk.unplaced_seconds
    for path, entry in walk.found.items():
        entry.row_width = int(walk.logical[path].schema().defaultSize())
    return walk.found


def _metrics_of(node: Any) -> tuple[dict[str, int], float]:
    """A physical node's SQL metrics by name, and the seconds its time metrics add up to."""
    metrics = {k: int(v) for k, v in _METRIC.findall(str(node.metrics().toString()))}
    seconds = sum(
        v / (1e9 if k in _NANOSECOND_METRICS else 1e3)
        for k, v in metrics.items()
        if k in _TIME_METRICS
    )
    return metrics, seconds


class _MetricsWalk:
    """One walk down an executed physical plan, collecting metrics per logical path."""

    def __init__(self, bridge: CatalystBridge, optimized: Any) -> None:
        self.bridge = bridge
        #: JVM map: logical operator → its path as "i,j,k" (JVM equality decides lookups).
        self.paths = bridge.jvm.java.util.HashMap()
        #: JVM map: node AQE planned over a stage → its restoration (``_restored``), by
        #: reference: the links of one executed plan share most of the layer above stages.
        self.restorations = bridge.jvm.java.util.IdentityHashMap()
        self.logical: dict[Path, Any] = {}
        self.found: dict[Path, OperatorMetrics] = {}
        #: Task seconds of physical operators linked to no operator of the optimized plan,
        #: not yet credited to an operator above them.
        self.unplaced_seconds = 0.0
        stack = [(optimized, ())]
        while stack:
            node, path = stack.pop()
            self.logical[path] = node
            self.paths.put(node, ",".join(map(str, path)))
            kids = node.children()
            stack.extend((kids.apply(i), (*path, i)) for i in range(kids.size()))

    def _restored(self, node: Any) -> Any:
        """``node`` with each ``LogicalQueryStage`` below it replaced by its logical plan,
        itself restored: a broadcast stage AQE plans over a finished shuffle stage (a
        subquery's result Spark reuses, TPC-H Q18's) keeps that stage's LogicalQueryStage
        as its logical plan.

        Only the layer AQE planned above its stages is walked, each node of it once: an
        operator of the optimized plan holds no stage, a node none of whose children
        changed is its own restoration, and a node restored for one link is remembered for
        the next. Rebuilding every subtree below every link instead cost TPC-DS q14a (1,684
        operators, 250 links over stages) 220,000 JVM calls and 18 s."""
        if self.paths.containsKey(node):
            return node
        done = self.restorations.get(node)
        if done is not None:
            return done
        if node.getClass().getSimpleName() == "LogicalQueryStage":
            restored = self._restored(node.logicalPlan())
        else:
            kids = node.children()
            children = [kids.apply(i) for i in range(kids.size())]
            below = [self._restored(child) for child in children]
            unchanged = all(new is old for new, old in zip(below, children, strict=True))
            restored = node if unchanged else self.bridge.with_children(node, below)
        self.restorations.put(node, restored)
        return restored

    def _path_of(self, p: Any) -> Path | Literal[False] | None:
        """The path of the operator ``p`` is linked to; None if it has no link (a node
        planning added: an exchange, a row conversion), False if its link is to no operator
        of the optimized plan (one this walk cannot place)."""
        link = p.logicalLink()
        if not link.isDefined():
            return None
        key = self.paths.get(link.get())
        if key is None:
            key = self.paths.get(self._restored(link.get()))
        return False if key is None else tuple(int(i) for i in key.split(",") if i)

    def visit(
        self, p: Any, enclosing: list[float] | None, members: list[Path] | None = None
    ) -> Path | None:
        """Record ``p``'s metrics; return the operator it belongs to (its own or its child's).

        ``enclosing`` collects the times of pipelines nested in the one above ``p`` (in the
        same stage), which that pipeline's own time includes; ``members`` the operators of
        the pipeline ``p`` is in.
        """
        name = p.getClass().getSimpleName()
        if name == "AdaptiveSparkPlanExec":
            return self.visit(p.executedPlan(), None)
        if name.endswith("QueryStageExec"):
            return self.visit(p.plan(), None)
        if name == "ReusedExchangeExec":
            return None  # counted where the exchange first ran
        metrics, seconds = _metrics_of(p)
        if name == "WholeStageCodegenExec":
            return self._visit_codegen(p, seconds, enclosing)
        breaker = name.endswith(_PIPELINE_BREAKERS)
        inner = None if breaker else enclosing
        kids = p.children()
        inside = None if breaker else members
        unplaced_before = self.unplaced_seconds
        child_paths = [self.visit(kids.apply(i), inner, inside) for i in range(kids.size())]
        own = self._path_of(p)  # the root's path () is falsy: compare with None and False
        below = next((c for c in child_paths if c is not None), None)
        if own is False:
            # a join or aggregate whose operator is unknown: its rows are not its child's,
            # and its time goes to the first placed operator above it (which computes it),
            # not to its child, which would look costly
            self.unplaced_seconds += seconds
            if inside is not None:
                inside.append(_UNPLACED)
            return below
        path = below if own is None else own
        if path is None:
            return None
        if own is not None:
            seconds += self.unplaced_seconds - unplaced_before
            self.unplaced_seconds = unplaced_before
        if inside is not None:
            inside.append(path)
        entry = self.found.setdefault(path, OperatorMetrics())
        if "numOutputRows" in metrics:
            entry.rows = metrics["numOutputRows"]  # visited after its children: topmost wins
        entry.task_seconds += seconds
        if _SCAN_TIME in metrics:
            entry.scan_seconds += metrics[_SCAN_TIME] / 1e3
            entry.file_bytes += metrics.get(_FILES_SIZE, 0)
        return path

    def _visit_codegen(self, p: Any, seconds: float, enclosing: list[float] | None) -> Path | None:
        """A whole-stage pipeline: its time, less the pipelines nested in it, goes to the
        lowest operator in it that does more than select rows or columns (the final
        aggregate under a HAVING's Filter and Project and the partial aggregate of an outer
        query, the join under its Project). The operators fused above it are in its time
        anyway (a Texec counts the subtree), while crediting the top one would leave the
        aggregate's or join's Texec without its own work. A pipeline of Filters and
        Projects only credits its top one."""
        nested: list[float] = []
        members: list[Path] = []
        path = self.visit(p.children().apply(0), nested, members)
        if enclosing is not None:
            enclosing.append(seconds)
        if path is None:
            return None
        working = [m for m in members if self._does_work(m)]
        if not working and _UNPLACED in members:
            # the pipeline's work is the unplaced operator's (a join AQE re-planned)
            self.unplaced_seconds += max(seconds - sum(nested), 0.0)
            return path
        credited = max(working, key=len) if working else path
        self.found.setdefault(credited, OperatorMetrics()).task_seconds += max(
            seconds - sum(nested), 0.0
        )
        return path

    def _does_work(self, path: Path) -> bool:
        node = self.logical.get(path)
        return node is not None and node.getClass().getSimpleName() not in _ROW_SELECTING


def _compilation_times(spark: Any) -> Any:
    """Spark's histogram of the time each class its code generation compiled took, in
    this JVM (``CodegenMetrics``)."""
    return spark._jvm.org.apache.spark.metrics.source.CodegenMetrics.METRIC_COMPILATION_TIME()


def compiled_classes(spark: Any) -> int:
    """How many classes Spark's code generation has compiled in this JVM so far: the
    difference around a statement is what it compiled."""
    return int(_compilation_times(spark).getCount())


def mean_compile_ms(spark: Any) -> float:
    """The mean milliseconds Spark's code generation took to compile a class in this JVM
    (a sample of the recent ones)."""
    return float(_compilation_times(spark).getSnapshot().getMean())


#: Spark's internal setting naming each class whole-stage code generation compiles after
#: the stage's number in its plan (``GeneratedIteratorForCodegenStage3``), for reading
#: generated code. Spark keeps compiled classes by their source text, name included.
STAGE_CLASS_NAMES = "spark.sql.codegen.useIdInClassName"


#: The SparkSessions whose naming Criss changed, with how many Criss sessions wrap each:
#: the last of them to close puts the setting back, not the first.
_SHARING: weakref.WeakKeyDictionary[Any, int] = weakref.WeakKeyDictionary()
_SHARING_LOCK = threading.Lock()


def share_stage_code(spark: Any) -> Callable[[], None] | None:
    """Have Spark name generated stage classes by their code alone, so a stage compiled in
    one plan is found compiled in another that numbers it differently; the setting is
    left as it is where the application set it. Returns what puts it back once every Criss
    session that shares it has called it (None where nothing was changed). A failure is
    logged and changes nothing: only compiling is at stake."""
    try:
        with _SHARING_LOCK:
            if spark in _SHARING:  # another Criss session set it: share it, not the app's
                _SHARING[spark] += 1
            elif spark.conf.get(STAGE_CLASS_NAMES, None) is not None:
                return None  # the application's own choice
            else:
                spark.conf.set(STAGE_CLASS_NAMES, "false")
                _SHARING[spark] = 1
    except Exception as exc:  # any type: Criss's own setting, never the user's error
        log.info("generated stage classes keep their stage numbers: %s", exc)
        return None

    def put_back() -> None:
        with _SHARING_LOCK:
            left = _SHARING.get(spark, 1) - 1
            if left > 0:
                _SHARING[spark] = left
                return
            _SHARING.pop(spark, None)
            if spark.conf.get(STAGE_CLASS_NAMES, None) == "false":
                spark.conf.unset(STAGE_CLASS_NAMES)

    return put_back


def log_compile_times(spark: Any, level: str = "INFO") -> None:
    """Have Spark log every class its code generation compiles, with the time it took
    (``CodeGenerator: Code generated in N ms``, at INFO; at DEBUG each class's source too;
    WARN stops it), leaving every other logger as it is."""
    log4j = spark._jvm.org.apache.logging.log4j
    log4j.core.config.Configurator.setLevel(
        "org.apache.spark.sql.catalyst.expressions.codegen.CodeGenerator",
        getattr(log4j.Level, level),
    )


def jvm_process_id(spark: Any) -> int:
    """The process id of the JVM that runs ``spark``'s driver (for ``jcmd``)."""
    return int(spark._jvm.java.lang.ProcessHandle.current().pid())


def collect_jvm_garbage(spark: Any) -> None:
    """Ask the driver's JVM for a full collection (``System.gc()``)."""
    spark._jvm.java.lang.System.gc()


def jvm_gc_seconds(spark: Any) -> float:
    """Seconds the driver's JVM has spent in garbage collection since it started (every
    collector's, as JMX counts them; in local mode the executors' tasks run there too)."""
    beans = spark._jvm.java.lang.management.ManagementFactory.getGarbageCollectorMXBeans()
    return sum(max(int(beans.get(i).getCollectionTime()), 0) for i in range(beans.size())) / 1e3


def jvm_objects_held_by_python() -> Counter[str]:
    """The JVM objects this Python process holds through py4j, by simple class name (each
    keeps its object, and all it references, alive in the JVM)."""
    import gc

    from py4j.java_gateway import JavaObject

    gc.collect()
    held: Counter[str] = Counter()
    for obj in gc.get_objects():
        if isinstance(obj, JavaObject):
            try:
                held[str(obj.getClass().getSimpleName())] += 1
            except Exception:  # detached from the JVM already
                pass
    return held
