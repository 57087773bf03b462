"""The driver JVM's live data and collections, query by query, in a plain and a Criss
application (session 62): Criss's first sights of heavy statements spent more time in the
collector than plain Spark's at the same positions. Runs the first N queries of a stream in
one mode, in an application of its own, with the replay's driver settings
(criss.sparksession.LOCAL_DEFAULTS), and prints after each query: its seconds, the old
generation's occupancy after its last collection, and the young and full collections'
counts and seconds during the query. From the repository root:

    .venv/bin/python heap_by_mode.py MODE STREAM SEED N   # MODE: spark or criss
"""

import sys
import tempfile
import time

import criss
from criss.sparksession import local_spark
from criss.workload.streams import make_stream
from criss.workload.tpch.data import register_views

mode, stream, seed, n = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
spark = local_spark(f"heap-{mode}", master="local[2]", conf={"spark.sql.shuffle.partitions": "8"})
register_views(spark, "data/tpch/sf1")
jvm = spark._jvm
factory = jvm.java.lang.management.ManagementFactory


def collectors():
    out = {}
    beans = factory.getGarbageCollectorMXBeans()
    for i in range(beans.size()):
        b = beans.get(i)
        out[str(b.getName())] = (int(b.getCollectionCount()), int(b.getCollectionTime()) / 1000)
    return out


def old_after_gc():
    pools = factory.getMemoryPoolMXBeans()
    for i in range(pools.size()):
        p = pools.get(i)
        if "Old" in str(p.getName()):
            usage = p.getCollectionUsage()
            return int(usage.getUsed()) >> 20, int(p.getUsage().getUsed()) >> 20
    return None, None


cs = criss.session(spark, home=tempfile.mkdtemp()) if mode == "criss" else None
queries = make_stream(stream, n, seed=seed, sf=1.0)
for q in dict((q.sql, q) for q in queries).values():  # warm-up: each statement once, plain
    spark.sql(q.sql).collect()
seen = set()
totals = {}
print("pos query first seconds old_after_gc_MB old_now_MB young(n,s) full(n,s)")
for q in queries:
    before = collectors()
    t = time.perf_counter()
    (cs.sql(q.sql) if cs else spark.sql(q.sql)).collect()
    seconds = time.perf_counter() - t
    if cs:
        cs.last_query_summary()  # settle what the action wrote through
    after = collectors()
    delta = {k: (after[k][0] - before[k][0], round(after[k][1] - before[k][1], 3)) for k in after}
    for k, v in delta.items():
        totals[k] = (totals.get(k, (0, 0.0))[0] + v[0], totals.get(k, (0, 0.0))[1] + v[1])
    first = q.sql not in seen
    seen.add(q.sql)
    print(
        q.position,
        q.name if hasattr(q, "name") else q.qid,
        int(first),
        f"{seconds:.2f}",
        *old_after_gc(),
        *delta.values(),
    )
print("totals", totals)
