"""Where ``cs.sql()`` spends TPC-H first sights (session 62): cProfile of ``cs.sql()`` over
the first N positions of a drift stream (fresh parameters: nearly all first sights), each
statement run once in plain Spark first (its optimizer timed apart), then once through
Criss in one home, settled after its action. From the repository root:

    .venv/bin/python planning_profile.py SF N
"""

import cProfile
import pstats
import sys
import tempfile
import time

import criss
from criss.bridge.plans import optimized_plan
from criss.sparksession import local_spark
from criss.workload.streams import make_stream
from criss.workload.tpch.data import register_views

sf, n = float(sys.argv[1]), int(sys.argv[2])
spark = local_spark("pp", master="local[2]", conf={"spark.sql.shuffle.partitions": "8"})
register_views(spark, f"data/tpch/sf{sys.argv[1]}")
cs = criss.session(spark, home=tempfile.mkdtemp())
profile = cProfile.Profile()
tot_sql = tot_plan = tot_plain_opt = 0.0
phases: dict[str, float] = {}
for q in make_stream("drift", n, seed=3, sf=sf):
    d = spark.sql(q.sql)
    t = time.perf_counter()
    optimized_plan(d)
    tot_plain_opt += time.perf_counter() - t
    d.collect()
    t = time.perf_counter()
    profile.enable()
    df = cs.sql(q.sql)
    profile.disable()
    tot_sql += time.perf_counter() - t
    df.collect()
    s = cs.last_query_summary()
    tot_plan += s.get("planning_seconds", 0)
    for k, v in (s.get("phase_seconds") or {}).items():
        phases[k] = phases.get(k, 0) + v
print(
    f"{n} statements: cs.sql total {tot_sql:.2f} s, planning {tot_plan:.2f} s, "
    f"plain optimizer {tot_plain_opt:.2f} s"
)
print("phases", {k: round(v, 3) for k, v in sorted(phases.items(), key=lambda kv: -kv[1])})
pstats.Stats(profile).sort_stats("cumulative").print_stats(60)
