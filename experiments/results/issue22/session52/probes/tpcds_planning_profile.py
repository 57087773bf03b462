"""Where ``cs.sql()`` spends a TPC-DS first sight (session 52): cProfile of ``cs.sql()``
over the first N TPC-DS queries (q14a and q14b left out: one plan of 1,684 operators would
dominate), each run once in plain Spark first (its optimizer timed apart), then once
through Criss in one home, at SF 0.01 as the suite runs them. Derived from TPC-DS, not
comparable. From the repository root:

    .venv/bin/python experiments/results/issue22/session52/probes/tpcds_planning_profile.py 40
"""

import cProfile
import pstats
import sys
import tempfile
import time

import criss
from criss.bridge.plans import optimized_plan
from criss.sparksession import local_spark
from criss.workload.tpcds.data import register_views
from criss.workload.tpcds.queries import query, query_ids

spark = local_spark(
    "pp",
    master="local[2]",
    conf={
        "spark.sql.shuffle.partitions": "4",
        "spark.sql.autoBroadcastJoinThreshold": str(1024 * 1024),
    },
)
register_views(spark, "data/tpcds/sf0.01")
names = [n for n in query_ids() if n not in ("q14a", "q14b")][: int(sys.argv[1])]
cs = criss.session(spark, home=tempfile.mkdtemp())
pr = cProfile.Profile()
tot_sql = tot_plan = tot_plain_opt = 0
for n in names:
    sql = query(n)
    try:
        d = spark.sql(sql)
        t = time.perf_counter()
        optimized_plan(d)
        tot_plain_opt += time.perf_counter() - t
        d.collect()
    except Exception:
        continue
    t = time.perf_counter()
    pr.enable()
    df = cs.sql(sql)
    pr.disable()
    tot_sql += time.perf_counter() - t
    df.collect()
    s = cs.last_query_summary()
    tot_plan += s.get("planning_seconds", 0)
print(
    "cs.sql total",
    round(tot_sql, 2),
    "planning",
    round(tot_plan, 2),
    "plain optimizer",
    round(tot_plain_opt, 2),
)
pstats.Stats(pr).sort_stats("cumulative").print_stats(70)
