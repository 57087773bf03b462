"""Write-through steps in a plan, and what they wrote once an action ran them.

A step is Spark's ``MapInArrow`` over the operator to cache, running
``criss.storage.writethrough.partition_writer`` in the tasks; a Project over it gives the
operator's attributes back (names and exprIds), so every ancestor still resolves. After an
action, :func:`written_steps` finds the steps in its executed plan and describes each one's
partitions the way ``PartitionedResult`` does (count and layout), so the files it wrote
can be cached as an entry that a later recomputation may complete.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from criss.bridge.execution import layout_fingerprint, layout_settings
from criss.bridge.plans import analyzed_plan
from criss.localio import arrow_exact
from criss.storage.writethrough import WRITER_PREFIX, partition_writer

if TYPE_CHECKING:
    from criss.bridge.catalyst import CatalystBridge

#: Physical write-through steps (Spark 4's name, and 3.x's).
_STEP_NODES = ("MapInArrowExec", "PythonMapInArrowExec")
#: Physical operators whose task computes partition i of their child's output as their own
#: partition i. A task knows only its stage's partition id, so a step's files carry the
#: right partition index only if everything above it in its stage is one of these (a
#: Union or a coalesce renumbers partitions: what such a step wrote is discarded).
_SAME_PARTITION = frozenset(
    {
        "WholeStageCodegenExec",
        "InputAdapter",
        "ProjectExec",
        "FilterExec",
        "SortExec",
        "HashAggregateExec",
        "ObjectHashAggregateExec",
        "SortAggregateExec",
        "WindowExec",
        "ExpandExec",
        "GenerateExec",
        "LocalLimitExec",
        "CollectLimitExec",
        "CollectTailExec",
        "TakeOrderedAndProjectExec",
        "SortMergeJoinExec",
        "ShuffledHashJoinExec",
        "BroadcastHashJoinExec",
        "BroadcastNestedLoopJoinExec",
        "ColumnarToRowExec",
        "RowToColumnarExec",
        "DeserializeToObjectExec",
        "SerializeFromObjectExec",
        "MapPartitionsExec",
        "MapElementsExec",
        "ArrowEvalPythonExec",
        "BatchEvalPythonExec",
        "MapInPandasExec",
        "MapInArrowExec",
        "PythonMapInArrowExec",
        "AdaptiveSparkPlanExec",
        "ResultQueryStageExec",
        "WriteFilesExec",
        "DataWritingCommandExec",
    }
)
#: Where a stage ends: above these, tasks of another stage run.
_STAGE_ROOTS = ("ShuffleExchangeExec", "BroadcastExchangeExec", "QueryStageExec")


def write_through_blocker(df_schema: Any) -> str | None:
    """Why a result with this (PySpark) schema cannot be written through, or None."""
    names = [f.name for f in df_schema.fields]
    if len(set(names)) != len(names):
        return "its columns have duplicate names (Arrow batches need distinct ones)"
    for f in df_schema.fields:
        if not arrow_exact(f.dataType):
            return f"column {f.name} ({f.dataType.simpleString()}) may not survive Arrow unchanged"
    return None


def write_through_plan(
    bridge: CatalystBridge, plan: Any, schema_json: str, staged: str, token: str
) -> Any:
    """``plan`` under a write-through step into ``staged``, with ``plan``'s output;
    ``schema_json`` is its positional schema (``positional_schema``)."""
    from pyspark.sql.types import StructType

    schema = StructType.fromJson(json.loads(schema_json))
    step = analyzed_plan(
        bridge.dataframe_of(plan).mapInArrow(partition_writer(staged, token), schema)
    )
    new_attrs, old_attrs = step.output(), plan.output()
    aliases = [
        bridge.alias_as(new_attrs.apply(i), old_attrs.apply(i)) for i in range(old_attrs.size())
    ]
    return bridge.project(bridge.seq(aliases), step)


@dataclass(frozen=True)
class WrittenStep:
    """A write-through step an action ran: its token, the partitions of its input
    (count and layout, comparable with ``PartitionedResult``'s) and whether its tasks'
    partition ids were its own partition indices (see ``_SAME_PARTITION``)."""

    token: str
    num_partitions: int
    layout: str
    aligned: bool


def written_steps(bridge: CatalystBridge, query_execution: Any) -> list[WrittenStep]:
    """The write-through steps in an action's executed plan."""
    found: list[WrittenStep] = []
    settings = layout_settings(bridge.spark)
    # (node, whether every node above it in its stage keeps partition indices)
    stack = [(query_execution.executedPlan(), True)]
    while stack:
        node, aligned = stack.pop()
        name = node.getClass().getSimpleName()
        if name == "AdaptiveSparkPlanExec":
            stack.append((node.executedPlan(), aligned))
            continue
        if name.endswith("QueryStageExec"):  # a leaf holding its stage's plan
            stack.append((node.plan(), aligned if name == "ResultQueryStageExec" else True))
            continue
        if name == "ReusedExchangeExec":
            continue
        if name == "EmptyRelationExec":  # AQE found the stages below empty: they still ran
            stack.extend((stage, True) for stage in _stages_in(node.logical()))
            continue
        if name in _STEP_NODES:
            udf = str(node.func().name())
            if udf.startswith(WRITER_PREFIX):
                found.append(_describe(node, udf[len(WRITER_PREFIX) :], aligned, settings))
        kids = node.children()
        # below an exchange a new stage starts: its tasks' ids are its own partitions
        below = True if name.endswith(_STAGE_ROOTS) else aligned and name in _SAME_PARTITION
        stack.extend((kids.apply(i), below) for i in range(kids.size()))
    return found


def _stages_in(logical: Any) -> list[Any]:
    """The physical query stages inside a logical plan AQE re-planned above them."""
    stages, stack = [], [logical]
    while stack:
        node = stack.pop()
        if node.getClass().getSimpleName() == "LogicalQueryStage":
            stages.append(node.physicalPlan())
            continue
        kids = node.children()
        stack.extend(kids.apply(i) for i in range(kids.size()))
    return stages


def _describe(node: Any, token: str, aligned: bool, settings: list[str | None]) -> WrittenStep:
    child = node.child()
    rdd = child.execute()  # the stages below ran: this only builds the RDD over their output
    specs = [str(p.toString()) for p in rdd.partitions()]
    layout = layout_fingerprint(str(child.toString()), specs, settings)
    return WrittenStep(token, len(specs), layout, aligned)
