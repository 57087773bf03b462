"""Where Criss's planning of TPC-DS first sights goes: the parts of ``cs.sql()`` timed by
wrapping them (no profiler, so the timings are the real ones), every query in one
application and one new home, each run plain first (untimed).

    .venv/bin/python PROBE [--data-dir data/tpcds/sf0.1] [--queries q14a,q64] [--rounds N]
"""

import argparse
import collections
import functools
import tempfile
import time
from pathlib import Path

import criss
import criss.bridge.capture as capture
import criss.bridge.catalyst as catalyst
import criss.engine as engine
import criss.planner as planner
from criss.sparksession import local_spark
from criss.workload.tpcds.data import register_views
from criss.workload.tpcds.queries import query, query_ids

SECONDS: collections.Counter = collections.Counter()


def timed(owner, name: str, label: str) -> None:
    wrapped = getattr(owner, name)

    @functools.wraps(wrapped)
    def run(*args, **kwargs):
        started = time.perf_counter()
        try:
            return wrapped(*args, **kwargs)
        finally:
            SECONDS[label] += time.perf_counter() - started

    setattr(owner, name, run)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", default="data/tpcds/sf0.1")
    parser.add_argument("--queries", default="")
    parser.add_argument("--rounds", type=int, default=1)
    args = parser.parse_args()
    timed(capture.RememberedTrees, "tree", "toJSON, loads, tree")
    timed(capture.CapturedPlan, "_annotate", "annotate")
    timed(catalyst, "optimized_plan", "Spark's optimizer")
    timed(engine, "canonicalize", "canonicalize")
    timed(engine, "fingerprint_tree", "fingerprint")
    timed(planner, "widen", "widen")
    names = args.queries.split(",") if args.queries else [q for q in query_ids() if q != "q90"]
    spark = local_spark(app_name="planning-parts")
    register_views(spark, Path(args.data_dir))
    for _ in range(args.rounds):
        SECONDS.clear()
        planning = analysis = 0.0
        with criss.session(spark, home=tempfile.mkdtemp(prefix="planning-parts-")) as cs:
            for name in names:
                text = query(name)
                spark.sql(text).collect()
                started = time.perf_counter()
                spark.sql(text)
                analysis += time.perf_counter() - started
                started = time.perf_counter()
                df = cs.sql(text)
                planning += time.perf_counter() - started
                df.collect()
                cs.settle_harvests()
        print(f"{len(names)} queries: planning {planning:.2f} s, analysis {analysis:.2f} s")
        print({k: round(v, 2) for k, v in SECONDS.items()}, flush=True)
    spark.stop()


if __name__ == "__main__":
    main()
