"""A TPC-H template's first sight in one application (session 52): plain Spark against
Criss, and against Criss with Spark's columnar cache uncompressed
(``spark.sql.inMemoryColumnarStorage.compressed=false``), so that the size of a cached
relation, as AQE reads it when choosing a join's broadcast side, is nearer the rows it
holds. Rotating order (reversed every other round), idle machine before each run:

    .venv/bin/python experiments/results/issue22/session52/probes/uncompressed_cache.py 17 8
"""

import statistics
import sys
import tempfile
import time
from pathlib import Path

import criss
from criss.bridge.plans import executed_plan
from criss.sparksession import local_spark
from criss.workload.idle import wait_for_idle
from criss.workload.tpch.data import register_views
from criss.workload.tpch.queries import statement

spark = local_spark(app_name="uncompressed")
register_views(spark, Path("data/tpch/sf1"))
qid = int(sys.argv[1])
rounds = int(sys.argv[2])
sql = statement(qid).sql
spark.sql(sql).collect()
variants = ["plain", "criss", "uncompressed"]
times = {v: [] for v in variants}
KEY = "spark.sql.inMemoryColumnarStorage.compressed"
for r in range(rounds):
    order = variants[r % 3 :] + variants[: r % 3]
    if r % 2:
        order = order[::-1]
    for v in order:
        cs = None
        spark.conf.set(KEY, "false" if v == "uncompressed" else "true")
        if v != "plain":
            cs = criss.session(spark, home=tempfile.mkdtemp(prefix="unc-"))
            cs.sql(f"SELECT n_name FROM nation WHERE n_nationkey = {r}").collect()
            cs.last_query_summary()
        wait_for_idle(3.0)
        t = time.perf_counter()
        df = spark.sql(sql) if cs is None else cs.sql(sql)
        df.collect()
        total = time.perf_counter() - t
        extra = ""
        if cs is not None:
            s = cs.last_query_summary()
            extra = f"cached {s.get('operators_cached', 0)}"
            if r == 1:
                plan = str(executed_plan(df).toString())
                joins = [
                    line.strip()[:60] for line in plan.split("\n") if "BroadcastHashJoin" in line
                ]
                extra += " broadcasts:" + ",".join(joins)
            cs.close()
        times[v].append(total)
        print(f"round {r} {v:13s} {total:.3f} {extra}", flush=True)
for v in variants:
    print(f"{v:13s} median {statistics.median(times[v]):.3f} mean {statistics.mean(times[v]):.3f}")
