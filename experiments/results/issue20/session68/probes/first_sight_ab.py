"""First sights of one template in one application: plain Spark against Criss in a fresh
home (warmed with two other statements, untimed), and against Criss with options, in
turn, each repetition a statement new to every mode (fresh parameters) whose code plain
Spark compiled once before, untimed. Medians and their ratios to plain.

    .venv/bin/python -m experiments.results.issue20.session68.probes.first_sight_ab \\
        21 v60 10 eager_results=false
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

import criss
from criss.sparksession import local_spark
from criss.workload.tpch.data import register_views
from criss.workload.tpch.queries import statement


def _options(pairs: list[str]) -> dict:
    options = {}
    for pair in pairs:
        key, value = pair.split("=")
        options[key] = {"true": True, "false": False}.get(value, value)
    return options


def main() -> None:
    qid, variant, reps = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
    options = _options(sys.argv[4:])
    spark = local_spark(conf={"spark.driver.memory": "6g"}, fixed_heap=True)
    register_views(spark, Path("data/tpch/sf1"))
    for warm in (1, 3, 6, qid):
        spark.sql(statement(warm, seed=99).sql).collect()
    modes = ["plain", "criss"] + (["options"] if options else [])
    seconds: dict[str, list[float]] = {mode: [] for mode in modes}
    planning: dict[str, list[float]] = {mode: [] for mode in modes[1:]}
    for rep in range(reps):
        sql = statement(qid, variant, seed=1000 + rep).sql
        spark.sql(sql).collect()  # its code compiled once, untimed
        sessions = {}
        for mode in modes[1:]:
            home = tempfile.mkdtemp()
            cs = criss.session(spark, home=home, **(options if mode == "options" else {}))
            for warm in (6, 14):
                cs.sql(statement(warm, seed=98).sql).collect()
            cs.settle_harvests()
            sessions[mode] = cs
        for mode in modes[rep % len(modes) :] + modes[: rep % len(modes)]:
            started = time.perf_counter()
            if mode == "plain":
                spark.sql(sql).collect()
                seconds[mode].append(time.perf_counter() - started)
                continue
            df = sessions[mode].sql(sql)
            df.collect()
            seconds[mode].append(time.perf_counter() - started)
            planning[mode].append(sessions[mode].record(df).planning_seconds)
        for cs in sessions.values():
            cs.settle_harvests()
            cs.close()
        print(rep, {mode: round(values[-1], 3) for mode, values in seconds.items()}, flush=True)
    medians = {mode: statistics.median(values) for mode, values in seconds.items()}
    print("planning median", {m: round(statistics.median(v), 3) for m, v in planning.items()})
    print("median", {mode: round(value, 3) for mode, value in medians.items()})
    print("ratio", {mode: round(value / medians["plain"], 3) for mode, value in medians.items()})


if __name__ == "__main__":
    main()
