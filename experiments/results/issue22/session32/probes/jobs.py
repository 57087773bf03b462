"""Spark jobs and stages of a first sight: plain Spark, Criss caching first-seen results and
Criss not caching them, four new statements per template, counted with the status tracker.

    python jobs.py 19,13,2     # templates (run from a checkout with data/tpch/sf1)
"""

import sys
import tempfile
import time
from pathlib import Path

import criss
from criss.sparksession import local_spark
from criss.workload.tpch.data import register_views
from criss.workload.tpch.queries import statement


def main(templates: list[int]) -> None:
    spark = local_spark(app_name="jobs")
    spark.sparkContext.setLogLevel("ERROR")
    register_views(spark, Path("data/tpch/sf1"))
    context = spark.sparkContext
    eager = criss.session(spark, home=tempfile.mkdtemp(prefix="m-j-"), lift_aggregates=False)
    lazy = criss.session(
        spark, home=tempfile.mkdtemp(prefix="m-j2-"), lift_aggregates=False, eager_results=False
    )

    def counted(run, group: str) -> tuple[float, int, int]:
        context.setJobGroup(group, group)
        started = time.perf_counter()
        run()
        seconds = time.perf_counter() - started
        context.setJobGroup("none", "none")
        tracker = context.statusTracker()
        jobs = tracker.getJobIdsForGroup(group)
        stages = sum(len(tracker.getJobInfo(job).stageIds) for job in jobs)
        return seconds, len(jobs), stages

    for template in templates:
        for index in range(4):
            sql = statement(template, seed=9000 + index).sql
            paths = {
                "plain": lambda sql=sql: spark.sql(sql).collect(),
                "eager": lambda sql=sql: eager.sql(sql).collect(),
                "noeager": lambda sql=sql: lazy.sql(sql).collect(),
            }
            for name, run in paths.items():
                seconds, jobs, stages = counted(run, f"{name}-{template}-{index}")
                eager.settle_harvests()
                lazy.settle_harvests()
                print(f"Q{template} {index} {name:8s} {seconds:.3f}s jobs {jobs} stages {stages}")


if __name__ == "__main__":
    main([int(x) for x in sys.argv[1].split(",")])
