"""First sights of every TPC-H template (or TPC-DS query) through Criss, paired with plain
Spark in one application (session 52): the replays' first-occurrence ratio without the
spread between applications. TPC-DS results are derived from TPC-DS, not comparable.

Per template: one untimed plain run and one untimed first sight (each JVM path compiled
before any timed run), then ``--rounds`` rounds, each a plain run and a first sight in a
new home, the order alternating from round to round and the machine idle before each
(``criss.workload.idle``). Run from the repository root with the TPC-H data generated:

    .venv/bin/python experiments/results/issue22/session52/probes/first_sights_balanced.py \
        --sf 1 --rounds 4
    .venv/bin/python experiments/results/issue22/session52/probes/first_sights_balanced.py \
        --benchmark tpcds --sf 0.1 --rounds 2 --queries 30 [--skip 30]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import criss
from criss.sparksession import local_spark
from criss.workload.idle import wait_for_idle
from criss.workload.tpcds import data as tpcds_data
from criss.workload.tpcds import queries as tpcds_queries
from criss.workload.tpch import data as tpch_data
from criss.workload.tpch import queries as tpch_queries


def statements(args: argparse.Namespace) -> list[tuple[str, str, str]]:
    """(name, statement, a small query of the same data) of each template asked for."""
    if args.benchmark == "tpch":
        return [
            (
                f"Q{qid}",
                tpch_queries.statement(qid).sql,
                f"SELECT n_name FROM nation WHERE n_nationkey = {qid}",
            )
            for qid in args.templates
        ]
    names = tpcds_queries.query_ids()[args.skip : args.skip + args.queries]
    return [
        (name, tpcds_queries.query(name), f"SELECT d_year FROM date_dim WHERE d_date_sk = {i}")
        for i, name in enumerate(names, args.skip)
    ]


def first_sight(spark, sql: str, warm_query: str) -> tuple[float, dict]:
    """Seconds of ``sql``'s first sight in a new home, and its summary."""
    cs = criss.session(spark, home=tempfile.mkdtemp(prefix="first-sights-"))
    try:
        cs.sql(warm_query).collect()  # a session's first query pays its set-up
        cs.last_query_summary()
        wait_for_idle(3.0)
        started = time.perf_counter()
        cs.sql(sql).collect()
        seconds = time.perf_counter() - started
        return seconds, cs.last_query_summary()  # settles the writes after the action
    finally:
        cs.close()


def plain(spark, sql: str) -> float:
    wait_for_idle(3.0)
    started = time.perf_counter()
    spark.sql(sql).collect()
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sf", default="1")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--templates", type=int, nargs="+", default=list(range(1, 23)))
    parser.add_argument("--benchmark", choices=("tpch", "tpcds"), default="tpch")
    parser.add_argument("--queries", type=int, default=40, help="TPC-DS: N queries ...")
    parser.add_argument("--skip", type=int, default=0, help="... after the first SKIP")
    args = parser.parse_args()
    spark = local_spark(app_name="first-sights-balanced")
    data = tpch_data if args.benchmark == "tpch" else tpcds_data
    data.register_views(spark, Path("data") / args.benchmark / f"sf{args.sf}")
    totals = {"plain": 0.0, "criss": 0.0}
    by_order = {"plain first": [0.0, 0.0], "criss first": [0.0, 0.0]}
    for name, sql, warm in statements(args):
        try:
            plain(spark, sql)  # untimed: compile both paths
        except Exception as exc:  # plain Spark's own error (TPC-DS divides by zero at SF 0.1)
            print(f"{name}: plain Spark fails ({type(exc).__name__}), left out", flush=True)
            continue
        first_sight(spark, sql, warm)
        pairs = []
        for round_ in range(args.rounds):
            criss_first = round_ % 2 == 1
            if criss_first:
                mine, summary = first_sight(spark, sql, warm)
                theirs = plain(spark, sql)
            else:
                theirs = plain(spark, sql)
                mine, summary = first_sight(spark, sql, warm)
            pairs.append((theirs, mine))
            order = by_order["criss first" if criss_first else "plain first"]
            order[0] += theirs
            order[1] += mine
            print(
                f"{name} round {round_} plain {theirs:.3f} criss {mine:.3f}"
                f" cached {summary.get('operators_cached', 0)}"
                f" planning {summary.get('planning_seconds', 0):.3f}",
                flush=True,
            )
        theirs = sum(p for p, _ in pairs)
        mine = sum(c for _, c in pairs)
        totals["plain"] += theirs
        totals["criss"] += mine
        excess = statistics.median(c - p for p, c in pairs)
        print(
            f"{name}: plain {theirs:.2f} criss {mine:.2f} ratio {mine / theirs:.3f}"
            f" median excess {excess:+.3f} s",
            flush=True,
        )
    for name, (theirs, mine) in by_order.items():
        print(f"{name}: plain {theirs:.2f} criss {mine:.2f} ratio {mine / theirs:.3f}")
    ratio = totals["criss"] / totals["plain"]
    print(f"all: plain {totals['plain']:.2f} criss {totals['criss']:.2f} ratio {ratio:.3f}")


if __name__ == "__main__":
    main()
