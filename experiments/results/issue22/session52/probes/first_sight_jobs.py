"""The Spark jobs of a TPC-H template's first sight, plain Spark against Criss (default
options and ``reuse_scope="results"``), in one application (session 52).

Each round runs the three in rotating order, each Criss run in a new home. Every job the
action started is listed with its seconds (submission to completion, from Spark's status
store) and its task count, then the jobs Criss ran after the action. Run from the
repository root, with the TPC-H SF 1 data generated (the jobs are read from Spark's REST API,
so the application runs with its UI on):

    .venv/bin/python experiments/results/issue22/session52/probes/first_sight_jobs.py 17 3
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
import time
import urllib.request
from datetime import datetime
from pathlib import Path

import criss
from criss.sparksession import local_spark
from criss.workload.tpch.data import register_views
from criss.workload.tpch.queries import statement

VARIANTS = {"plain": None, "criss": {}, "results": {"reuse_scope": "results"}}


def moment(text: str) -> datetime:
    """A time as Spark's REST API writes it."""
    return datetime.strptime(text.replace("GMT", "+0000"), "%Y-%m-%dT%H:%M:%S.%f%z")


def jobs(api: str, first: int, end: int) -> list[str]:
    """Each job from ``first`` to ``end`` (excluded): seconds, tasks and name."""
    for _ in range(50):  # the status store hears of a job's end a little later
        with urllib.request.urlopen(api) as response:
            listed = {job["jobId"]: job for job in json.load(response)}
        if all("completionTime" in listed.get(job, {}) for job in range(first, end)):
            break
        time.sleep(0.1)
    lines = []
    for job in range(first, end):
        data = listed[job]
        seconds = (moment(data["completionTime"]) - moment(data["submissionTime"])).total_seconds()
        name = data["name"][:50]
        lines.append(f"job {job} {seconds:.3f}s {data['numTasks']} tasks {name}")
    return lines


def main() -> None:
    qid, rounds = int(sys.argv[1]), int(sys.argv[2])
    spark = local_spark(app_name="first-sight-jobs", conf={"spark.ui.enabled": "true"})
    register_views(spark, Path("data/tpch/sf1"))
    sql = statement(qid).sql
    spark.sql(sql).collect()  # compile its code, untimed
    context = spark.sparkContext
    api = f"{context.uiWebUrl}/api/v1/applications/{context.applicationId}/jobs"
    tracker = context.statusTracker()

    def next_job() -> int:
        ids = tracker.getJobIdsForGroup(None)
        return max(ids) + 1 if ids else 0

    names = list(VARIANTS)
    times: dict[str, list[float]] = {name: [] for name in names}
    for round_ in range(rounds):
        for name in names[round_ % 3 :] + names[: round_ % 3]:
            options = VARIANTS[name]
            cs = None
            if options is not None:
                cs = criss.session(spark, home=tempfile.mkdtemp(prefix="jobs-"), **options)
                cs.sql(f"SELECT n_name FROM nation WHERE n_nationkey = {round_}").collect()
                cs.last_query_summary()
            first = next_job()
            started = time.perf_counter()
            df = spark.sql(sql) if cs is None else cs.sql(sql)
            df.collect()
            seconds = time.perf_counter() - started
            action_end = next_job()
            counted = ""
            if cs is not None:
                summary = cs.last_query_summary()  # waits for the writes after the action
                counted = f"cached {summary.get('operators_cached', 0)}"
                cs.close()
            times[name].append(seconds)
            print(f"round {round_} {name:8s} {seconds:.3f} s {counted}", flush=True)
            for line in jobs(api, first, action_end):
                print(f"    action {line}")
            for line in jobs(api, action_end, next_job()):
                print(f"    after  {line}")
    for name in names:
        print(f"{name:8s} median {statistics.median(times[name]):.3f} s")


if __name__ == "__main__":
    main()
