"""What the action of a DataFrame Criss hands out spends in Spark's own planning (analysis,
optimization, physical planning), against plain Spark's action of the same statement,
read from each QueryExecution's QueryPlanningTracker. (The committed output came from an
earlier version that compared Dataset objects, so labelled every query "new"; this one
labels by the parsing phase, as the output's note does.) Every TPC-DS query once, one new home,
plain first.

    .venv/bin/python PROBE [--data-dir data/tpcds/sf1] [--queries q1,q2]
"""

import argparse
import collections
import tempfile
import time
from pathlib import Path

import criss
from criss.bridge.plans import planning_phases as phases
from criss.sparksession import local_spark
from criss.workload.tpcds.data import register_views
from criss.workload.tpcds.queries import query, query_ids


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data-dir", default="data/tpcds/sf1")
    parser.add_argument("--queries", default="")
    args = parser.parse_args()
    names = args.queries.split(",") if args.queries else [q for q in query_ids() if q != "q90"]
    spark = local_spark(app_name="reoptimize")
    register_views(spark, Path(args.data_dir))
    totals = collections.Counter()
    rewritten = 0
    with criss.session(spark, home=tempfile.mkdtemp(prefix="reoptimize-")) as cs:
        for name in names:
            text = query(name)
            plain = spark.sql(text)
            started = time.perf_counter()
            plain.collect()
            totals["plain action"] += time.perf_counter() - started
            for phase, seconds in phases(plain).items():
                totals["plain " + phase] += seconds
            started = time.perf_counter()
            df = cs.sql(text)
            totals["criss planning"] += time.perf_counter() - started
            started = time.perf_counter()
            df.collect()
            totals["criss action"] += time.perf_counter() - started
            mine = phases(df)
            same = "parsing" in mine  # the query's own DataFrame, not rebuilt
            for phase, seconds in mine.items():
                totals["criss " + phase] += seconds
            if not same:
                rewritten += 1
            cs.settle_harvests()
            print(
                name,
                "same" if same else "new",
                {k: round(v, 3) for k, v in mine.items()},
                {k: round(v, 3) for k, v in phases(plain).items()},
                flush=True,
            )
    print(f"{len(names)} queries, {rewritten} handed out as a new DataFrame")
    print({k: round(v, 2) for k, v in sorted(totals.items())}, flush=True)
    spark.stop()


if __name__ == "__main__":
    main()
