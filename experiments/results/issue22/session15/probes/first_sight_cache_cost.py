"""What caching a first-seen result in the user's action costs, on fresh literals, one JVM,
exclusive CPU: plain Spark, Criss without first-sight caching, Criss with it (rotated)."""

import itertools
import tempfile
import time

import criss
from criss.sparksession import local_spark
from criss.workload.benchmarks import parquet_data
from criss.workload.streams import no_repeat_stream

spark = local_spark()
parquet_data("tpch").register_views(spark, "data/tpch/sf1")
stream = no_repeat_stream(22 * 6, 5, 1.0)
by = {}
for q in stream:
    by.setdefault(q.query, []).append(q.sql)

names = ["Q3", "Q4", "Q5", "Q8", "Q10", "Q12", "Q13", "Q14", "Q16", "Q19", "Q20", "Q22"]
orders = list(itertools.permutations(["plain", "nocache", "cache"]))
tot = {"plain": 0.0, "nocache": 0.0, "cache": 0.0}
detail = {
    "cache.sql": 0.0,
    "cache.prepare": 0.0,
    "cache.collect": 0.0,
    "nocache.sql": 0.0,
    "nocache.collect": 0.0,
}
for i, name in enumerate(names):
    sqls = by[name]
    spark.sql(sqls[0]).collect()
    spark.sql(sqls[1]).collect()  # warm this template's code
    out = {}
    for j, mode in enumerate(orders[i % len(orders)]):
        sql = sqls[2 + j]
        if mode == "plain":
            t = time.perf_counter()
            spark.sql(sql).collect()
            out[mode] = time.perf_counter() - t
            continue
        cs = criss.session(
            spark, home=tempfile.mkdtemp(), **({} if mode == "cache" else {"eager_results": False})
        )
        t = time.perf_counter()
        df = cs.sql(sql)
        t1 = time.perf_counter()
        df.collect()
        t2 = time.perf_counter()
        rec = cs.last_record
        cs.settle_harvests()
        out[mode] = t2 - t
        detail[f"{mode}.sql"] += t1 - t
        detail[f"{mode}.collect"] += t2 - t1
        if mode == "cache":
            detail["cache.prepare"] += rec.materialize_seconds
        out[mode + ".cached"] = (
            rec.counters.get("operators_cached_in_action", 0) if hasattr(rec, "counters") else None
        )
        cs.close()
    for k in tot:
        tot[k] += out[k]
    print(
        name, {k: (round(v, 3) if isinstance(v, float) else v) for k, v in out.items()}, flush=True
    )
print(
    "TOTAL", {k: round(v, 2) for k, v in tot.items()}, {k: round(v, 2) for k, v in detail.items()}
)
