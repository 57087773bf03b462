"""Probe (session 22): a first sight through Criss against plain Spark, in one application.

Each fresh TPC-H statement (new parameters every round, rounds after the first timed) runs
once plain and once through Criss, in alternating order, after an idle machine; Criss is
kept expecting repeats, so it caches each first-seen result in the user's action, as on
Zipf-QS. Found (engine 8909800, SF 1, 40 statements): Criss 1.039x plain, of which
``cs.sql()`` took 97 ms a statement (Spark's own optimizing and physical planning, ~37 ms,
among it) and the actions 0.98x plain.

    .venv/bin/python experiments/results/issue22/session22/probes/first_sight_ab.py \
        data/tpch/sf1 2 > first_sight_ab.out
"""

import json
import random
import sys
import tempfile
import time

import criss
from criss.sparksession import local_spark
from criss.workload.idle import wait_for_idle
from criss.workload.tpch import queries as tpch
from criss.workload.tpch.data import register_views


def main(data_dir: str, rounds: int) -> None:
    spark = local_spark(app_name="first-sight-ab")
    register_views(spark, data_dir)
    cs = criss.session(spark, home=tempfile.mkdtemp(prefix="first-ab-"), lift_aggregates="off")
    rng = random.Random(11)
    totals = {"plain": 0.0, "criss": 0.0, "plan": 0.0}
    counted = cached = 0
    for round_ in range(rounds + 1):
        for k, qid in enumerate(tpch.QUERY_IDS):
            sql = tpch.variant_statement(qid, "orig", tpch.random_params(qid, rng, 1)).sql
            for _ in range(3):  # a home where first-seen results come again
                cs.learning.learn_repeat(True)
            times = _both(spark, cs, sql, plain_first=(k + round_) % 2 == 0)
            summary = cs.last_query_summary()
            if round_ == 0 or summary.get("operators_reused"):
                continue
            counted += 1
            cached += bool(summary.get("operators_cached"))
            for key in totals:
                totals[key] += times[key]
            print(json.dumps({"q": qid, **{k: round(v, 3) for k, v in times.items()}}), flush=True)
    print(
        json.dumps(
            {
                "statements": counted,
                "cached": cached,
                **{k: round(v, 2) for k, v in totals.items()},
                "ratio": round(totals["criss"] / totals["plain"], 3),
                "ratio_without_planning": round(
                    (totals["criss"] - totals["plan"]) / totals["plain"], 3
                ),
            }
        )
    )


def _both(spark, cs, sql: str, plain_first: bool) -> dict[str, float]:
    times = {}
    for mode in ("plain", "criss") if plain_first else ("criss", "plain"):
        wait_for_idle(3.0)
        started = time.perf_counter()
        if mode == "plain":
            spark.sql(sql).collect()
        else:
            df = cs.sql(sql)
            times["plan"] = time.perf_counter() - started
            df.collect()
        times[mode] = time.perf_counter() - started
        if mode == "criss":
            cs.settle_harvests()
    return times


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
