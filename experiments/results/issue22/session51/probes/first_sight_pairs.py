"""A template's first sight through Criss in a new home against plain Spark, in one
application, the two in alternating order, ``--rounds`` times per template (same statement,
TPC-H's default parameters, as a Zipf-QS stream runs it).

Run from a checkout whose engine is to be measured (session 51 ran it on df1d962 and
e0efeba in turn, each against its own plain runs):

    .venv/bin/python experiments/results/issue22/session51/probes/first_sight_pairs.py \
        --sf 1 --rounds 6 --templates 17 18 1 5 > OUT
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import criss
from criss.sparksession import local_spark
from criss.workload.tpch.data import register_views
from criss.workload.tpch.queries import statement


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sf", default="1")
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--templates", type=int, nargs="+", default=[17, 18, 1, 5])
    args = parser.parse_args()
    spark = local_spark(app_name="first-sight-pairs")
    register_views(spark, Path("data/tpch") / f"sf{args.sf}")
    for qid in args.templates:  # compile each template's code once, untimed
        spark.sql(statement(qid).sql).collect()
    for qid in args.templates:
        sql = statement(qid).sql
        pairs = []
        for round_ in range(args.rounds):
            timings = {}
            for path in ("plain", "criss") if round_ % 2 == 0 else ("criss", "plain"):
                started = time.perf_counter()
                if path == "plain":
                    spark.sql(sql).collect()
                else:
                    cs = criss.session(spark, home=tempfile.mkdtemp(prefix="criss-pairs-"))
                    # a session's first query pays its set-up; a stream's templates do not
                    cs.sql(f"SELECT n_name FROM nation WHERE n_nationkey = {round_}").collect()
                    cs.last_query_summary()
                    started = time.perf_counter()
                    cs.sql(sql).collect()
                timings[path] = time.perf_counter() - started
                if path == "criss":
                    summary = cs.last_query_summary()  # settles the work after the action
                    cs.close()
            pairs.append((timings["plain"], timings["criss"]))
            print(
                f"Q{qid} round {round_} plain {timings['plain']:.3f} criss {timings['criss']:.3f}"
                f" excess {timings['criss'] - timings['plain']:+.3f}"
                f" cached {summary.get('operators_cached', 0)}"
                f" planning {summary.get('planning_seconds', 0):.3f}",
                flush=True,
            )
        plain = sum(p for p, _ in pairs)
        mine = sum(c for _, c in pairs)
        excess = [c - p for p, c in pairs]
        print(
            f"Q{qid}: plain {plain:.2f} criss {mine:.2f} ratio {mine / plain:.3f} "
            f"median excess {statistics.median(excess):+.3f} s",
            flush=True,
        )


if __name__ == "__main__":
    main()
