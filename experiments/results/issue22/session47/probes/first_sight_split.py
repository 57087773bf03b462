"""Where a TPC-DS first sight's excess over plain Spark goes, both in one warm application:
each statement warmed up as a replay does (plain, then through Criss in a throwaway home,
twice), then timed once plain and once as a first sight through Criss (a new home grows
over the sequence, as in a replay), in alternating order. Per statement: plain's total,
Criss's cs.sql() and action apart, Criss's phases, and each DataFrame's own Spark phases
(QueryPlanningTracker) and number of jobs.

    .venv/bin/python PROBE [--data-dir data/tpcds/sf1] [--queries q1,q2] [--out F.json]
"""

import argparse
import collections
import json
import tempfile
import time
from pathlib import Path

import criss
from criss.bridge.plans import planning_phases as tracker_phases
from criss.sparksession import local_spark
from criss.workload.tpcds.data import register_views
from criss.workload.tpcds.queries import query, query_ids


def warm_up(spark, texts: list[str]) -> None:
    """As a replay warms an application: plain twice, then through Criss twice."""
    for text in texts * 2:
        spark.sql(text).collect()
    with tempfile.TemporaryDirectory() as scratch, criss.session(spark, home=scratch) as cs:
        for _ in range(2):
            for text in texts:
                cs.sql(text).collect()
                cs.settle_harvests()


def timed_run(spark, cs, mode: str, text: str) -> dict:
    """One statement plain or through Criss: its seconds, jobs and phases."""
    tracker = spark.sparkContext.statusTracker()
    jobs = len(tracker.getJobIdsForGroup(None))
    started = time.perf_counter()
    df = spark.sql(text) if mode == "plain" else cs.sql(text)
    planned = time.perf_counter()
    df.collect()
    ended = time.perf_counter()
    run = {
        "seconds": ended - started,
        "sql": planned - started,
        "action": ended - planned,
        "jobs": len(tracker.getJobIdsForGroup(None)) - jobs,
        "spark_phases": tracker_phases(df),
    }
    if mode == "criss":
        record = cs.record(df)
        run["phases"] = dict(record.phase_seconds)
        run["planning"] = record.planning_seconds
        run["cached"] = record.counters.get("operators_cached_in_action", 0)
        cs.settle_harvests()
    return run


def print_row(name: str, row: dict) -> None:
    p, c = row["plain"], row["criss"]
    print(
        f"{name:6} plain {p['seconds']:.3f} criss {c['seconds']:.3f} "
        f"(sql {c['sql']:.3f} plan {c['planning']:.3f} action {c['action']:.3f}, "
        f"plain sql {p['sql']:.3f} action {p['action']:.3f}) "
        f"jobs {p['jobs']}/{c['jobs']} "
        f"cached {c['cached']}",
        flush=True,
    )


def totals(rows: list[dict]) -> collections.Counter:
    total = collections.Counter()
    for row in rows:
        for mode in ("plain", "criss"):
            for key in ("seconds", "sql", "action", "jobs"):
                total[f"{mode} {key}"] += row[mode][key]
            for key, value in row[mode]["spark_phases"].items():
                total[f"{mode} spark {key}"] += value
        total["criss planning"] += row["criss"]["planning"]
        for key, value in row["criss"]["phases"].items():
            total[f"criss phase {key}"] += value
    return total


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data-dir", default="data/tpcds/sf1")
    parser.add_argument("--queries", default="")
    parser.add_argument("--out", default="")
    args = parser.parse_args()
    names = args.queries.split(",") if args.queries else [q for q in query_ids() if q != "q90"]
    spark = local_spark(app_name="first-sight-split")
    register_views(spark, Path(args.data_dir))
    texts = [query(n) for n in names]
    warm_up(spark, texts)
    rows = []
    with criss.session(spark, home=tempfile.mkdtemp(prefix="split-")) as cs:
        for i, (name, text) in enumerate(zip(names, texts, strict=True)):
            modes = ("plain", "criss") if i % 2 == 0 else ("criss", "plain")
            row = {"query": name, **{mode: timed_run(spark, cs, mode, text) for mode in modes}}
            rows.append(row)
            print_row(name, row)
    total = totals(rows)
    print({k: round(v, 3) for k, v in sorted(total.items())})
    if args.out:
        Path(args.out).write_text(json.dumps({"rows": rows, "total": total}, indent=1))
    spark.stop()


if __name__ == "__main__":
    main()
