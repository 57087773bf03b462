"""One TPC-H template under fresh parameters, plain Spark and Criss in turn in one
application (the order alternating), after three untimed plain runs: per pair, the
seconds of ``sql`` (Criss: with its planning) and of ``collect``, and Criss's counters.

    cd /tmp/bench && .venv/bin/python <this file> 2 12     # template Q2, 12 pairs
"""

import statistics
import sys
import tempfile
import time
from pathlib import Path

import criss
from criss.sparksession import local_spark
from criss.workload.tpch.data import register_views
from criss.workload.tpch.queries import statement


def _timed(run, sql: str) -> tuple[float, float, object]:
    started = time.perf_counter()
    df = run(sql)
    planned = time.perf_counter()
    df.collect()
    return planned - started, time.perf_counter() - planned, df


def _pair(spark, cs, qid: int, seed: int, order: tuple[str, str]) -> dict:
    pair = {}
    for offset, path in enumerate(order):
        sql = statement(qid, seed=seed + offset).sql
        run = spark.sql if path == "plain" else cs.sql
        planned, collected, df = _timed(run, sql)
        pair[path] = {"sql": planned, "collect": collected}
        if path == "criss":
            record = cs.record(df)
            cs.settle_harvests()
            pair[path]["planning"] = record.planning_seconds
            pair[path]["counters"] = {k: v for k, v in record.counters.items() if v}
    return pair


def main(qid: int, rounds: int) -> None:
    spark = local_spark(app_name="planning-of-one-template")
    register_views(spark, Path("data/tpch/sf1"))
    cs = criss.session(spark, home=tempfile.mkdtemp(prefix="criss-q-"))
    for seed in range(900, 903):
        spark.sql(statement(qid, seed=seed).sql).collect()
    pairs = []
    for turn in range(rounds):
        order = ("plain", "criss") if turn % 2 == 0 else ("criss", "plain")
        pair = _pair(spark, cs, qid, 1000 + 2 * turn, order)
        pairs.append(pair)
        plain, ours = pair["plain"], pair["criss"]
        print(
            f"{order[0]:6} plain sql {plain['sql']:.3f} collect {plain['collect']:.3f} | "
            f"criss sql {ours['sql']:.3f} (plan {ours['planning']:.3f}) "
            f"collect {ours['collect']:.3f}  {ours['counters']}"
        )
    for key in ("sql", "collect"):
        medians = [statistics.median(p[path][key] for p in pairs) for path in ("plain", "criss")]
        print(f"median {key}: plain {medians[0]:.3f} criss {medians[1]:.3f}")
    spark.stop()


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]))
