"""Why some first sights' actions run longer through Criss than plain (session 47's split:
q5a 12.6 s against 5.0 s): a home grown over PRIOR queries, then each TARGET timed plain and
through Criss (alternating), with the jobs each ran and what Criss cached, and how often
each cached operator's fingerprint occurs in the query's tree.

    .venv/bin/python PROBE [--data-dir data/tpcds/sf1] --prior q1,q2 --targets q5a
"""

import argparse
import collections
import tempfile
import time
from pathlib import Path

import criss
from criss.sparksession import local_spark
from criss.workload.tpcds.data import register_views
from criss.workload.tpcds.queries import query


def run(spark, df_of, text):
    tracker = spark.sparkContext.statusTracker()
    before = set(tracker.getJobIdsForGroup(None))
    started = time.perf_counter()
    df = df_of(text)
    planned = time.perf_counter()
    df.collect()
    ended = time.perf_counter()
    jobs = len(set(tracker.getJobIdsForGroup(None)) - before)
    return df, planned - started, ended - planned, jobs


def cached_copies(cs, df):
    record = cs.record(df)
    counts = collections.Counter(o.fingerprint for o in record.operators)
    return [
        (o.op, o.path, counts.get(o.fingerprint, 0))
        for o in record.operators
        if o.decision.action == "cache"
    ]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--data-dir", default="data/tpcds/sf1")
    parser.add_argument("--prior", default="")
    parser.add_argument("--targets", required=True)
    args = parser.parse_args()
    spark = local_spark(app_name="action-excess")
    register_views(spark, Path(args.data_dir))
    prior = [query(n) for n in args.prior.split(",") if n]
    targets = args.targets.split(",")
    for name in targets:
        for _ in range(2):
            spark.sql(query(name)).collect()
    with criss.session(spark, home=tempfile.mkdtemp(prefix="excess-")) as cs:
        for text in prior:
            cs.sql(text).collect()
            cs.settle_harvests()
        for name in targets:
            text = query(name)
            _, psql, pact, pjobs = run(spark, spark.sql, text)
            df, csql, cact, cjobs = run(spark, cs.sql, text)
            print(
                f"{name}: plain {psql + pact:.2f} s ({pjobs} jobs); criss sql {csql:.2f} "
                f"action {cact:.2f} s ({cjobs} jobs)",
                flush=True,
            )
            print("  cached (op, path, copies in tree):", cached_copies(cs, df))
            cs.settle_harvests()
    spark.stop()


if __name__ == "__main__":
    main()
