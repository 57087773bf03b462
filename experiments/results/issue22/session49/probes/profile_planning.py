"""cProfile of cs.sql() over every TPC-DS query's first sight (one home, each statement
run plain first, untimed); prints the top functions by own time and by cumulative time,
Criss's own by cumulative time, and the callers of each JVM call, and dumps the profile
(argv: data directory, profile file)."""

import cProfile
import pstats
import sys
import tempfile
from pathlib import Path

import criss
from criss.sparksession import local_spark
from criss.workload.tpcds.data import register_views
from criss.workload.tpcds.queries import query, query_ids

spark = local_spark(app_name="profile-planning")
register_views(spark, Path(sys.argv[1]))
names = [q for q in query_ids() if q != "q90"]
profile = cProfile.Profile()
with criss.session(spark, home=tempfile.mkdtemp()) as cs:
    for name in names:
        text = query(name)
        spark.sql(text).collect()
        profile.enable()
        df = cs.sql(text)
        profile.disable()
        df.collect()
        cs.settle_harvests()
profile.dump_stats(sys.argv[2] if len(sys.argv) > 2 else "/tmp/planning.prof")
stats = pstats.Stats(profile)
stats.sort_stats("tottime").print_stats(40)
stats.sort_stats("cumulative").print_stats(80)
stats.sort_stats("cumulative").print_stats("criss/", 150)
stats.sort_stats("tottime").print_callers("java_gateway.py:1353")
spark.stop()
