"""Probe (session 22): what ``cs.sql()`` costs a first-seen TPC-H statement, in seconds and
in JVM round trips, beside Spark's own parsing, analysing, optimizing and physical
planning of another fresh statement of the same template.

Rounds of the 22 templates with fresh parameters (the first round not counted; statements
served from the cache left out). Found on SF 1: 235.7 round trips and 67.7 ms a statement
on engine 8909800, 156.1 and 62.0 ms with 37723cd's changes; Spark's own 36.9-39.1 ms.

    .venv/bin/python experiments/results/issue22/session22/probes/first_sight_round_trips.py \
        data/tpch/sf1 3 after
"""

import json
import random
import sys
import tempfile
import time

import criss
from criss.bridge.plans import query_execution
from criss.bridge.roundtrips import RoundTripCounter
from criss.sparksession import local_spark
from criss.workload.tpch import queries as tpch
from criss.workload.tpch.data import register_views


def main(data_dir: str, rounds: int, label: str) -> None:
    counter = RoundTripCounter()
    spark = local_spark(app_name="first-sight-round-trips")
    register_views(spark, data_dir)
    cs = criss.session(spark, home=tempfile.mkdtemp(prefix="first-plan-"))
    rng = random.Random(7)
    rows = []
    for round_ in range(rounds):
        for qid in tpch.QUERY_IDS:
            started = time.perf_counter()
            query_execution(_fresh(qid, rng, spark)).executedPlan()
            spark_own = time.perf_counter() - started
            calls, started = sum(counter.calls.values()), time.perf_counter()
            counter.active = True
            df = cs.sql(tpch.variant_statement(qid, "orig", tpch.random_params(qid, rng, 1)).sql)
            counter.active = False
            seconds = time.perf_counter() - started
            calls = sum(counter.calls.values()) - calls
            df.collect()
            cs.settle_harvests()
            summary = cs.last_query_summary()
            if round_ > 0 and not summary.get("operators_reused"):
                rows.append((seconds, calls, spark_own, bool(summary.get("operators_cached"))))
    count = len(rows)
    print(
        json.dumps(
            {
                "label": label,
                "statements": count,
                "criss_sql_ms": round(1000 * sum(r[0] for r in rows) / count, 1),
                "jvm_round_trips": round(sum(r[1] for r in rows) / count, 1),
                "spark_own_ms": round(1000 * sum(r[2] for r in rows) / count, 1),
                "cached": sum(r[3] for r in rows),
            }
        )
    )


def _fresh(qid: int, rng: random.Random, spark):
    return spark.sql(tpch.variant_statement(qid, "orig", tpch.random_params(qid, rng, 1)).sql)


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), sys.argv[3])
