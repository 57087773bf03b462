"""The driver JVM's collector time, query by query, in a plain and a Criss application
(session 62): in the replays, Criss's first sights of heavy statements sometimes spent more
time in the collector than plain Spark's at the same positions. Runs the first N queries of
a stream in one mode, in an application of its own, with the replay's driver settings
(criss.sparksession.LOCAL_DEFAULTS), each distinct statement first run once untimed through
plain Spark, and prints after each query its seconds and the collector's seconds during it
(criss.bridge.jvm_gc_seconds). From the repository root:

    .venv/bin/python heap_by_mode.py MODE STREAM SEED N   # MODE: spark or criss
"""

import sys
import tempfile
import time

import criss
from criss.bridge import jvm_gc_seconds
from criss.sparksession import local_spark
from criss.workload.streams import make_stream
from criss.workload.tpch.data import register_views

mode, stream, seed, n = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
spark = local_spark(f"heap-{mode}", master="local[2]", conf={"spark.sql.shuffle.partitions": "8"})
register_views(spark, "data/tpch/sf1")
cs = criss.session(spark, home=tempfile.mkdtemp()) if mode == "criss" else None
queries = make_stream(stream, n, seed=seed, sf=1.0)
for q in dict((q.sql, q) for q in queries).values():  # warm-up: each statement once, plain
    spark.sql(q.sql).collect()
seen: set[str] = set()
totals = {"seconds": 0.0, "collector": 0.0, "first_seconds": 0.0, "first_collector": 0.0}
print("position query first seconds collector_seconds")
for q in queries:
    before = jvm_gc_seconds(spark)
    t = time.perf_counter()
    (cs.sql(q.sql) if cs else spark.sql(q.sql)).collect()
    seconds = time.perf_counter() - t
    if cs:
        cs.last_query_summary()  # settle what the action wrote through
    collector = jvm_gc_seconds(spark) - before
    first = q.sql not in seen
    seen.add(q.sql)
    totals["seconds"] += seconds
    totals["collector"] += collector
    if first:
        totals["first_seconds"] += seconds
        totals["first_collector"] += collector
    print(q.position, q.name, int(first), f"{seconds:.2f}", f"{collector:.3f}")
print("totals", {k: round(v, 2) for k, v in totals.items()})
