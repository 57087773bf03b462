"""A TPC-H template's first sight in one application: plain Spark against Criss with the
caches under the query's result planned adaptively (as Criss does), statically with the
session's shuffle partitions, and statically with the partitions AQE's coalescing would
leave (session 52).

Needs ``static-plans-under-result.diff`` (next to this folder) applied to 9927e5d; the two
static variants are that patch, the adaptive one the patch's rule switched off. Each round
runs the four in rotating order (reversed every other round), each Criss run in a new home,
each after the machine is idle (``criss.workload.idle``). Run from the repository root:

    git apply experiments/results/issue22/session52/static-plans-under-result.diff
    .venv/bin/python experiments/results/issue22/session52/probes/under_result_variants.py 17 8
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

import criss
import criss.bridge.spark_cache as bridge_cache
import criss.planner.spark_cache as planner_cache
from criss.sparksession import local_spark
from criss.workload.idle import wait_for_idle
from criss.workload.tpch.data import register_views
from criss.workload.tpch.queries import statement

VARIANTS = ("plain", "adaptive", "static-session", "static-clamped")
CHOSEN = {"variant": "plain"}
_rule = planner_cache.plans_statically
_partitions = bridge_cache.static_shuffle_partitions


def _plans_statically(root, node):
    return CHOSEN["variant"] != "adaptive" and _rule(root, node)


def _static_partitions(input_bytes, *, session_partitions, parallelism, advisory_bytes):
    if CHOSEN["variant"] == "static-session":
        return session_partitions
    return _partitions(
        input_bytes,
        session_partitions=session_partitions,
        parallelism=parallelism,
        advisory_bytes=advisory_bytes,
    )


planner_cache.plans_statically = _plans_statically
bridge_cache.static_shuffle_partitions = _static_partitions


def main() -> None:
    qid, rounds = int(sys.argv[1]), int(sys.argv[2])
    spark = local_spark(app_name="under-result-variants")
    register_views(spark, Path("data/tpch/sf1"))
    sql = statement(qid).sql
    spark.sql(sql).collect()  # compile its code, untimed
    times: dict[str, list[float]] = {v: [] for v in VARIANTS}
    for round_ in range(rounds):
        order = list(VARIANTS[round_ % 4 :] + VARIANTS[: round_ % 4])
        if round_ % 2:
            order.reverse()
        for variant in order:
            CHOSEN["variant"] = variant
            cs = None
            if variant != "plain":
                cs = criss.session(spark, home=tempfile.mkdtemp(prefix="variants-"))
                cs.sql(f"SELECT n_name FROM nation WHERE n_nationkey = {round_}").collect()
                cs.last_query_summary()
            wait_for_idle(3.0)
            started = time.perf_counter()
            df = spark.sql(sql) if cs is None else cs.sql(sql)
            df.collect()
            seconds = time.perf_counter() - started
            counted = ""
            if cs is not None:
                summary = cs.last_query_summary()
                counted = (
                    f"cached {summary.get('operators_cached', 0)} "
                    f"static {summary.get('operators_cached_in_action_static', 0)}"
                )
                cs.close()
            times[variant].append(seconds)
            print(f"round {round_} {variant:15s} {seconds:.3f} {counted}", flush=True)
    for variant in VARIANTS:
        print(
            f"{variant:15s} median {statistics.median(times[variant]):.3f}"
            f" mean {statistics.mean(times[variant]):.3f}"
        )


if __name__ == "__main__":
    main()
