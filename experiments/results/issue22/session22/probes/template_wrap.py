"""Probe (session 22): one TPC-H template, plain Spark against the same plan computed into a
relation of Spark's cache (as Criss's in-action caching does), alternating, fresh parameters
each run, in one application; the medians leave out each mode's first run. Found (SF 1,
Q10, nine runs each): 1.634 s through the cache against 1.685 s plain.

    .venv/bin/python experiments/results/issue22/session22/probes/template_wrap.py \
        data/tpch/sf1 10 9
"""

import json
import random
import statistics
import sys
import tempfile
import time

import criss
from criss.bridge.spark_cache import CachedResult
from criss.sparksession import local_spark
from criss.workload.tpch import queries as tpch
from criss.workload.tpch.data import register_views


def main(data_dir: str, qid: int, runs: int) -> None:
    spark = local_spark(app_name="template-wrap")
    register_views(spark, data_dir)
    cs = criss.session(spark, home=tempfile.mkdtemp(prefix="template-wrap-"))
    rng = random.Random(3)
    times: dict[str, list[float]] = {"plain": [], "cached": []}
    for i in range(runs):
        for mode in ("plain", "cached") if i % 2 else ("cached", "plain"):
            sql = tpch.variant_statement(qid, "orig", tpch.random_params(qid, rng, 1)).sql
            df = spark.sql(sql)
            started = time.perf_counter()
            relation = None
            if mode == "cached":
                relation = CachedResult(cs.bridge, df, f"probe-{time.time_ns()}")
                df = relation.positional_frame()
            df.collect()
            times[mode].append(round(time.perf_counter() - started, 3))
            if relation is not None:
                relation.unpersist()
    print(json.dumps(times))
    print(json.dumps({k: round(statistics.median(v[1:]), 3) for k, v in times.items()}))


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]))
