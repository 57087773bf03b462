"""Where q14a's planning goes through Criss (session 53): the query once in plain Spark,
then three times through Criss in one home, at SF 0.01 as the suite runs it, each
``cs.sql()`` under cProfile; prints each run's seconds and phases, and the profiles of
the first two runs. Derived from TPC-DS, not comparable. From the repository root:

    .venv/bin/python experiments/results/issue22/session53/probes/q14a_planning.py \\
        q14a cumulative 60
"""

import cProfile
import pstats
import sys
import tempfile
import time

import criss
from criss.sparksession import local_spark
from criss.workload.tpcds.data import register_views
from criss.workload.tpcds.queries import query

CONF = {
    "spark.sql.shuffle.partitions": "4",
    "spark.sql.autoBroadcastJoinThreshold": str(1024 * 1024),
    "spark.criss.min.texec": "0",
    "spark.criss.codec.rate": "20m",
}


def profile_runs(spark, cs, name, order, lines):
    sql = query(name)
    started = time.perf_counter()
    spark.sql(sql).collect()
    print(name, "plain", round(time.perf_counter() - started, 2))
    for run in range(3):
        profile = cProfile.Profile()
        started = time.perf_counter()
        profile.enable()
        df = cs.sql(sql)
        profile.disable()
        planned = time.perf_counter()
        df.collect()
        done = time.perf_counter()
        phases = {k: round(v, 2) for k, v in cs.record(df).phase_seconds.items()}
        reused = cs.last_query_summary().get("operators_reused")
        print(name, run, "sql", round(planned - started, 2), "collect", round(done - planned, 2))
        print(" ", phases, reused)
        if run < 2 and order:
            pstats.Stats(profile).sort_stats(order).print_stats(lines)


def main():
    names = sys.argv[1].split(",")
    order = sys.argv[2] if len(sys.argv) > 2 else None
    lines = int(sys.argv[3]) if len(sys.argv) > 3 else 45
    spark = local_spark("q14a-planning", master="local[2]", conf=CONF)
    register_views(spark, "data/tpcds/sf0.01")
    cs = criss.session(spark, home=tempfile.mkdtemp())
    for name in names:
        profile_runs(spark, cs, name, order, lines)


if __name__ == "__main__":
    main()
