"""The one place where Criss talks to Spark's JVM (Catalyst) through py4j.

Everything else in Criss works on plain Python values handed out from here. Each module
has one job:

- ``versions``: the oldest Spark supported, class names Spark 4 moved, py4j's TCP_NODELAY
- ``errors``: py4j/PySpark failures as ``BridgeError`` (``jvm_errors``, ``is_jvm_error``)
- ``plans``: a DataFrame's plans by phase; plan comparisons for experiments and tests
- ``capture``: optimized plans as plain-Python trees, file relations' identities
- ``rewrite``: plans reading cached files, subtree substitution
- ``execution``: results written partition by partition (``PartitionedResult``)
- ``listener``: every finished action of the session, reported from Spark's listener
- ``metrics``: SQL metrics of an executed plan mapped back to logical operators
- ``joins``: a plan's joins and their inputs for join rewrites
- ``bloom``: Bloom filter expressions for join rewrites
- ``catalyst``: ``CatalystBridge``, the session-wide handle that ties them together
- ``roundtrips``: counting the JVM round trips a step makes (for experiments)

Spark-version differences are absorbed in this package only. Each py4j call costs about
0.1 ms, so the bridge asks for whole strings (JSON, ``mkString``) rather than walking JVM
objects call by call.
"""

from __future__ import annotations

from criss.bridge.bloom import BloomLiterals, bloom_limits, bloom_might_contain, build_bloom_filter
from criss.bridge.capture import (
    REMEMBERED_PLANS,
    CapturedPlan,
    RememberedTrees,
    file_relation_identity,
)
from criss.bridge.catalyst import CatalystBridge
from criss.bridge.errors import is_jvm_error, jvm_errors, jvm_unreachable
from criss.bridge.execution import (
    LAYOUT_CONF,
    MATERIALIZE_CONF,
    PartitionedResult,
    normalize_physical_plan,
    positional_schema,
)
from criss.bridge.joins import JoinPlan, JoinSide, JoinSite, operator_names
from criss.bridge.listener import (
    ExecutionListener,
    FinishedExecution,
    execution_id,
    plan_identity,
)
from criss.bridge.metrics import (
    OperatorMetrics,
    collect_jvm_garbage,
    compiled_classes,
    jvm_gc_seconds,
    jvm_objects_held_by_python,
    jvm_process_id,
    log_compile_times,
    mean_compile_ms,
    share_stage_code,
)
from criss.bridge.plans import (
    PHASES,
    analyzed_plan,
    canonicalized,
    executed_plan,
    optimized_plan,
    plan_json,
    plan_overlap,
    subtree_semantic_hashes,
    tree_string,
)
from criss.bridge.rewrite import LOCAL_PLANS_BYTES
from criss.bridge.versions import OLDEST_SPARK, require_supported_spark
from criss.bridge.writethrough import WrittenStep, write_through_blocker

__all__ = [
    "LAYOUT_CONF",
    "LOCAL_PLANS_BYTES",
    "MATERIALIZE_CONF",
    "OLDEST_SPARK",
    "PHASES",
    "REMEMBERED_PLANS",
    "BloomLiterals",
    "CapturedPlan",
    "CatalystBridge",
    "ExecutionListener",
    "FinishedExecution",
    "JoinPlan",
    "JoinSide",
    "JoinSite",
    "OperatorMetrics",
    "PartitionedResult",
    "RememberedTrees",
    "WrittenStep",
    "analyzed_plan",
    "bloom_limits",
    "bloom_might_contain",
    "build_bloom_filter",
    "canonicalized",
    "collect_jvm_garbage",
    "jvm_gc_seconds",
    "compiled_classes",
    "executed_plan",
    "execution_id",
    "file_relation_identity",
    "is_jvm_error",
    "jvm_errors",
    "jvm_unreachable",
    "jvm_objects_held_by_python",
    "jvm_process_id",
    "log_compile_times",
    "mean_compile_ms",
    "normalize_physical_plan",
    "operator_names",
    "optimized_plan",
    "plan_json",
    "plan_identity",
    "plan_overlap",
    "positional_schema",
    "require_supported_spark",
    "share_stage_code",
    "subtree_semantic_hashes",
    "tree_string",
    "write_through_blocker",
]
