"""Range joins through the range index (``criss.joins.range_index``): when it may serve a
join, and the join it builds.

The distinct key hulls of the indexed side are collected and indexed on the driver; the
distinct probe hulls are paired with them in Python workers; Spark then joins the probe
rows on their hull (equi-join) and the indexed rows on theirs (broadcast equi-join), with
the original condition as the residual.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from criss.config import conf_key

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

    from criss.bridge import JoinPlan, JoinSite
    from criss.joins import JoinContext
    from criss.joins.range import _Side
    from criss.policies.joins import SideStats

#: the options bounding what the index collects (CrissOptions holds their values)
MAX_ROWS = "range_join_index_max_rows"
MAX_BYTES = "range_join_index_max_bytes"


def index_limits(context: JoinContext) -> tuple[int, int]:
    """(most rows, most bytes) the range index may collect to the driver: the session's
    ``range_join_index_max_rows`` and ``range_join_index_max_bytes``."""
    options = context.session.options
    return options.range_join_index_max_rows, options.range_join_index_max_bytes


def index_blocked(
    site: JoinSite, side: _Side, stats: SideStats, context: JoinContext
) -> str | None:
    """Why the range index cannot serve this join, or None."""
    max_rows, max_bytes = index_limits(context)
    if stats.rows > max_rows:
        return f"interval side has {stats.rows} rows > {max_rows} ({_named(MAX_ROWS)})"
    estimated = site.side(side.which).estimated_bytes
    if estimated > max_bytes:
        return f"interval side estimated {estimated} bytes > {max_bytes} ({_named(MAX_BYTES)})"
    return None


def _named(option: str) -> str:
    """``range_join_index_max_rows / spark.criss.range.join.index.max.rows``: the option as
    a ``criss.session()`` keyword and as its SparkConf key."""
    return f"{option} / {conf_key(option)}"


def index_join(
    plan: JoinPlan,
    site: JoinSite,
    probe: _Side,
    indexed: _Side,
    indexed_is_lower: bool | None,
    context: JoinContext,
    details: dict[str, Any],
) -> DataFrame | None:
    """``probe`` ⋈ ``indexed`` through the range index (see the module docstring).

    Rows of both sides stay in their original subtrees (same attributes; any column
    types), only doubles cross into Python. ``indexed_is_lower`` is None for intervals,
    else the one-sided bound's direction. Returns None (details say why) when the
    collected hulls exceed the byte budget.
    """
    built = _built_index(probe, indexed, indexed_is_lower, context, details)
    if built is None:
        return None
    index_value, hulls_value, facts = built
    details.update(facts)
    return _probe_join(plan, site, probe, indexed, index_value, hulls_value)


def _built_index(
    probe: _Side,
    indexed: _Side,
    indexed_is_lower: bool | None,
    context: JoinContext,
    details: dict[str, Any],
) -> tuple[Any, Any, dict[str, Any]] | None:
    """(broadcast index, broadcast hulls, facts) over ``indexed``'s key hulls; the one a
    repeated query built before (same input files and bounds) when there is one. None when
    the collected hulls exceed the byte budget."""
    from criss.joins import range_index

    artifact_key = ("range_index", indexed.meta_key(context), indexed_is_lower)
    artifacts = context.session.joins.artifacts
    built = artifacts.get(artifact_key)
    if built is not None:
        context.counters["range_indexes_reused"] += 1
        details["index_reused"] = True
        return built
    lo_i, hi_i = indexed.keys()
    started = time.perf_counter()
    lo, hi, nbytes = _collect_hulls(indexed.frame, lo_i, hi_i)
    _, max_bytes = index_limits(context)
    details["index_collected_bytes"] = nbytes
    if nbytes > max_bytes:
        details["index_fallback"] = (
            f"collected interval hulls {nbytes} B > {max_bytes} B ({_named(MAX_BYTES)})"
        )
        return None
    if indexed_is_lower is None:
        index = range_index.build(lo, hi)
    else:
        index = range_index.build_one_sided(lo, indexed_is_lower)
    sc = probe.frame.sparkSession.sparkContext
    index_value, hulls_value = sc.broadcast(index.to_plain()), sc.broadcast((lo, hi))
    facts = {
        "index_collected_bytes": nbytes,
        "index_build_s": round(time.perf_counter() - started, 3),
        "index_class_sizes": [len(c.rows) for c in index.classes],
        "index_distinct_hulls": len(lo),
    }
    built = (index_value, hulls_value, facts)
    artifacts.put(artifact_key, built, lambda: (index_value.unpersist(), hulls_value.unpersist()))
    context.counters["range_indexes_built"] += 1
    return built


def _probe_join(
    plan: JoinPlan,
    site: JoinSite,
    probe: _Side,
    indexed: _Side,
    index_value: Any,
    hulls_value: Any,
) -> DataFrame:
    """Pair the distinct probe hulls with indexed hulls in Python workers, then join both
    sides' rows on their hulls with the original condition as the residual."""
    from pyspark.cloudpickle import register_pickle_by_value
    from pyspark.sql import functions as F

    from criss.joins import range_index

    # by value: workers run this module's code without importing Criss (a worktree or a
    # cluster's executors may hold another version, or none)
    register_pickle_by_value(range_index)
    body = range_index.probe_batches

    def pairs_of(batches):  # a closure: pickled with the broadcast handles it uses
        return body(batches, index_value, hulls_value)

    lo_i, hi_i = indexed.keys()
    lo_p, hi_p = probe.keys()
    hulls = (
        probe.frame.select(lo_p.alias("__qlo"), hi_p.alias("__qhi"))
        .where(F.col("__qlo").isNotNull())
        .distinct()
    )
    pairs = hulls.mapInArrow(pairs_of, "__qlo double, __qhi double, __ilo double, __ihi double")
    probed = probe.frame.withColumn("__plo", lo_p).withColumn("__phi", hi_p)
    on_probe = (F.col("__plo") == F.col("__qlo")) & (F.col("__phi") == F.col("__qhi"))
    rows = indexed.frame.withColumn("__klo", lo_i).withColumn("__khi", hi_i)
    on_rows = (F.col("__ilo") == F.col("__klo")) & (F.col("__ihi") == F.col("__khi"))
    return probed.join(pairs, on_probe).join(
        F.broadcast(rows), on_rows & plan.condition_column(site.path)
    )


def _collect_hulls(frame: DataFrame, lo: Column, hi: Column) -> tuple[Any, Any, int]:
    """The distinct non-NULL key hulls of one side as NumPy arrays, and their bytes."""
    import numpy as np
    from pyspark.sql import functions as F

    arrow = (
        frame.select(lo.alias("lo"), hi.alias("hi")).where(F.col("lo").isNotNull()).distinct()
    ).toArrow()
    lo_np = arrow.column(0).to_numpy().astype(np.float64, copy=False)
    hi_np = arrow.column(1).to_numpy().astype(np.float64, copy=False)
    return lo_np, hi_np, int(arrow.nbytes)
