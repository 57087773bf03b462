"""First sight of each TPC-H template, in an application of its own per mode.

Modes: ``plain`` (spark.sql().collect()), ``criss`` (cs.sql().collect(), a fresh home), and
``tee`` (plain Spark's DataFrame persisted MEMORY_AND_DISK, then collected: what a plan
costs that fills Spark's cache with the whole statement). Every template is first run once
with other literals (JVM, page cache), then each once with new literals, timed; classes
compiled per statement come from Spark's code generation count and the compile
milliseconds from its log (stderr, between the MARK/END lines).

    python first_sight_by_template.py MODE SEED OUT.json 2> OUT.err

(The runs committed here were made with the log level set inline, as ``log_compile_times``
does; ``summarize.py`` reads the outputs.)
"""

import json
import sys
import tempfile
import time

from pyspark import StorageLevel

import criss
from criss.bridge import compiled_classes, log_compile_times
from criss.sparksession import local_spark
from criss.workload.benchmarks import parquet_data
from criss.workload.streams import no_repeat_stream

mode, seed, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
data = sys.argv[4] if len(sys.argv) > 4 else "data/tpch/sf1"
spark = local_spark("probe-" + mode)
parquet_data("tpch").register_views(spark, data)
log_compile_times(spark)
statements: dict[str, list[str]] = {}
for item in no_repeat_stream(22 * 4, seed, 1.0):
    statements.setdefault(item.query, []).append(item.sql)
names = sorted(statements, key=lambda q: int(q[1:]))
for q in names:  # warm: JVM and page cache, other literals
    spark.sql(statements[q][0]).collect()
cs = criss.session(spark, home=tempfile.mkdtemp()) if mode == "criss" else None
rows = []
for q in names:
    sql = statements[q][1]
    print("MARK", q, file=sys.stderr, flush=True)
    before = compiled_classes(spark)
    started = time.perf_counter()
    extra = {}
    if mode == "plain":
        spark.sql(sql).collect()
    elif mode == "tee":
        spark.conf.set("spark.sql.optimizer.canChangeCachedPlanOutputPartitioning", "true")
        df = spark.sql(sql).persist(StorageLevel.MEMORY_AND_DISK)
        spark.conf.unset("spark.sql.optimizer.canChangeCachedPlanOutputPartitioning")
        df.collect()
    else:
        planned = cs.sql(sql)
        in_sql = time.perf_counter()
        planned.collect()
        extra = {"sql": round(in_sql - started, 4), "act": round(time.perf_counter() - in_sql, 4)}
    seconds = time.perf_counter() - started
    classes = compiled_classes(spark) - before
    if mode == "tee":
        df.unpersist(blocking=True)
    if cs is not None:
        cs.settle_harvests()
        record = cs.last_record
        extra.update(
            plan=round(record.planning_seconds, 4),
            phases={k: round(v * 1000) for k, v in record.phase_seconds.items()},
            c=dict(record.counters),
        )
    rows.append({"q": q, "s": round(seconds, 4), "classes": classes, **extra})
    print(mode, rows[-1], flush=True)
    print("END", q, file=sys.stderr, flush=True)
    time.sleep(0.3)
with open(out, "w") as f:
    json.dump(rows, f)
spark.stop()
