"""A lifted aggregate computed by the user's action or by a job of Criss's own, side by side
in one application: per round a fresh pair of parameter values of one TPC-H template; each
Criss mode (a home of its own) sees the first value, then the second (the lift, timed), then
a third (the roll-up, timed); plain Spark runs the second value. Modes in a seeded order.
(``lift-q4.json`` was made by an earlier draft of this script, the same steps, on engine
63f2d2c, before the fix of the retained heap, which slows every mode alike; its keys ``r``
and ``next_s`` are ``round`` and ``rollup_s`` here.)

    python lift_by_action_or_job.py QID ROUNDS DATA_DIR OUT.json
"""

import json
import random
import sys
import tempfile
import time

import criss
from criss.sparksession import local_spark
from criss.workload.benchmarks import parquet_data
from criss.workload.tpch.queries import statement


def main() -> None:
    qid, rounds, data, out = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]
    spark = local_spark("lift-by-action-or-job")
    parquet_data("tpch").register_views(spark, data)
    sqls = list(dict.fromkeys(statement(qid, seed=s, sf=1.0).sql for s in range(1, 200)))
    spark.sql(sqls[-1]).collect()  # warm: JVM and page cache
    order = random.Random(qid)
    rows = []
    for r in range(rounds):
        first, second, third = sqls[2 * r], sqls[2 * r + 1], sqls[-2 - r]
        modes = ["action", "job", "plain"]
        order.shuffle(modes)
        for mode in modes:
            if mode == "plain":
                started = time.perf_counter()
                spark.sql(second).collect()
                rows.append({"round": r, "mode": mode, "lift_s": time.perf_counter() - started})
                continue
            home = tempfile.mkdtemp()
            # min_texec=0: the first value's own timing never keeps the lift from being tried
            with criss.session(
                spark, home=home, cache_in_action=mode == "action", min_texec=0
            ) as cs:
                cs.sql(first).collect()
                cs.settle_harvests()
                started = time.perf_counter()
                cs.sql(second).collect()
                lift_s = time.perf_counter() - started
                lifted = cs.last_query_summary()
                cs.settle_harvests()
                started = time.perf_counter()
                cs.sql(third).collect()
                rollup_s = time.perf_counter() - started
                rolled = cs.last_query_summary()
            rows.append(
                {
                    "round": r,
                    "mode": mode,
                    "lift_s": lift_s,
                    "rollup_s": rollup_s,
                    "lifted": lifted.get("aggregates_lifted", 0),
                    "lifted_in_action": lifted.get("aggregates_lifted_in_action", 0),
                    "rolled_up": rolled.get("rewrites_aggregate_rollup", 0),
                }
            )
            time.sleep(0.3)
    with open(out, "w") as f:
        json.dump(rows, f, indent=1)
    for mode in ("plain", "job", "action"):
        mine = [x for x in rows if x["mode"] == mode and x["round"] > 0]  # round 0 warms up
        lift = sum(x["lift_s"] for x in mine) / len(mine)
        rollup = sum(x.get("rollup_s", 0.0) for x in mine) / len(mine)
        print(f"Q{qid} {mode}: second value {lift:.3f} s, third value {rollup:.3f} s")
    spark.stop()


if __name__ == "__main__":
    main()
