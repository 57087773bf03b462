"""Jobs, stages and tasks of a first sight's action with and without its result cached by
the action, in one application: each template under three draws of its values, plain
Spark (after an untimed plain run of the same statement) and then Criss in a new home.
Counted with Spark's status tracker over a job group per action.

    python experiments/results/issue22/session37/probes/first_sight_jobs.py 4 15 3 10
"""

import sys
import tempfile
import time
from pathlib import Path

import criss
from criss.sparksession import local_spark
from criss.workload.tpch.data import register_views
from criss.workload.tpch.queries import statement


def counted(spark, run, sql: str) -> tuple[float, int, int, int]:
    """Seconds, jobs, stages and tasks of collecting ``run(sql)``."""
    context, group = spark.sparkContext, f"probe-{time.perf_counter_ns()}"
    context.setJobGroup(group, group)
    started = time.perf_counter()
    run(sql).collect()
    seconds = time.perf_counter() - started
    tracker = context.statusTracker()
    jobs = tracker.getJobIdsForGroup(group)
    stages = [s for j in jobs if (job := tracker.getJobInfo(j)) for s in job.stageIds]
    tasks = sum(info.numTasks for s in stages if (info := tracker.getStageInfo(s)))
    return seconds, len(jobs), len(stages), tasks


def main(templates: list[int]) -> None:
    spark = local_spark(app_name="first-sight-jobs")
    register_views(spark, Path("data/tpch/sf1"))
    for qid in templates:
        for draw in range(3):
            sql = statement(qid, seed=200 + draw).sql
            spark.sql(sql).collect()  # compiles plain Spark's code, untimed
            plain = counted(spark, spark.sql, sql)
            cs = criss.session(spark, home=tempfile.mkdtemp(prefix="criss-jobs-"))
            mine = counted(spark, cs.sql, sql)
            cs.settle_harvests()
            cached = cs.last_record.counters.get("operators_cached_in_action", 0)
            print(
                f"Q{qid} plain {plain[0]:.2f}s jobs {plain[1]} stages {plain[2]} tasks {plain[3]}"
                f" | Criss {mine[0]:.2f}s jobs {mine[1]} stages {mine[2]} tasks {mine[3]}"
                f" cached in the action {cached}",
                flush=True,
            )


if __name__ == "__main__":
    main([int(arg) for arg in sys.argv[1:]])
