"""Seconds and classes compiled of a TPC-H template's first three runs, each with new
literals, in one application (plain Spark). Ran with the CodegenMetrics count read inline;
that read is now ``criss.bridge.compiled_classes``."""

import time

from criss.bridge import compiled_classes
from criss.sparksession import local_spark
from criss.workload.benchmarks import parquet_data
from criss.workload.streams import no_repeat_stream

spark = local_spark()
parquet_data("tpch").register_views(spark, "data/tpch/sf1")
stream = no_repeat_stream(88, 9, 1.0)
for q in stream[:22]:  # warm JVM with other salts
    spark.sql(q.sql).collect()
bytempl = {}
for q in stream[22:]:
    bytempl.setdefault(q.query, []).append(q.sql)
tot = [0, 0, 0]
for t, sqls in sorted(bytempl.items()):
    out = []
    for i, sql in enumerate(sqls[:3]):
        c0 = compiled_classes(spark)
        st = time.perf_counter()
        spark.sql(sql).collect()
        el = time.perf_counter() - st
        out.append((round(el, 3), compiled_classes(spark) - c0))
        tot[i] += el
    print(t, out, flush=True)
print([round(x, 2) for x in tot])
