"""Spark jobs and seconds of one TPC-DS query's first sight through Criss, against plain
Spark, in one application (session 51; derived from TPC-DS, not comparable).

Per round: plain Spark, then Criss first sights in new homes with the default options,
``eager_results=False`` and ``lift_aggregates="off"``. Jobs are counted with Spark's status
tracker. Run from the repository, with the TPC-DS SF 0.1 data generated:

    .venv/bin/python experiments/results/issue22/session51/probes/tpcds_first_sight_jobs.py q23a
"""

from __future__ import annotations

import sys
import tempfile
import time

import criss
from criss.sparksession import local_spark
from criss.workload.tpcds.data import register_views
from criss.workload.tpcds.queries import query

VARIANTS = {
    "plain": None,
    "default": {},
    "no_eager": {"eager_results": False},
    "lift_off": {"lift_aggregates": "off"},
}


def main() -> None:
    spark = local_spark("local[2]")
    # as tests/test_tpcds_queries.py runs TPC-DS: customer_demographics is not broadcast
    spark.conf.set("spark.sql.autoBroadcastJoinThreshold", str(1024 * 1024))
    register_views(spark, "data/tpcds/sf0.1")
    tracker = spark.sparkContext.statusTracker()
    sql = query(sys.argv[1])
    for _ in range(2):  # compile its code, untimed
        spark.sql(sql).collect()

    def jobs_and_seconds(action) -> tuple[int, float]:
        before = set(tracker.getJobIdsForGroup(None))
        started = time.perf_counter()
        action()
        seconds = time.perf_counter() - started
        return len(set(tracker.getJobIdsForGroup(None)) - before), seconds

    for round_ in range(2):
        for label, options in VARIANTS.items():
            if options is None:
                jobs, seconds = jobs_and_seconds(lambda: spark.sql(sql).collect())
                print(round_, label, jobs, "jobs", f"{seconds:.2f}s", flush=True)
                continue
            cs = criss.session(spark, home=tempfile.mkdtemp(), **options)
            cs.sql("SELECT 1 AS one").collect()  # the session's set-up, untimed
            cs.last_query_summary()
            jobs, seconds = jobs_and_seconds(lambda cs=cs: cs.sql(sql).collect())
            summary = cs.last_query_summary()
            cs.close()
            print(
                round_,
                label,
                jobs,
                "jobs",
                f"{seconds:.2f}s",
                f"cached {summary.get('operators_cached')} planning "
                f"{summary.get('planning_seconds')}",
                flush=True,
            )


if __name__ == "__main__":
    main()
