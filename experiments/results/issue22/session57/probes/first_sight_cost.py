"""What caching a first-seen result adds to the user's time, apart from Criss's planning,
side by side in one SparkSession (issue 22: the first-sight decision charges
``FIRST_SIGHT_COST`` = 6 % of Texec for it, measured at SF 1).

- ``plain``: Spark alone.
- ``planned``: Criss planning every first sight, caching nothing (``eager_results`` off,
  no lifts): what planning alone adds.
- ``cached``: Criss caching every first sight in the user's action (each statement runs
  once more through it, untimed, so its home learns one repeat per statement and keeps
  caching first sights); what Criss writes after the action is waited for, untimed.

Every path runs a statement new to it, the paths in every order in turn from one template
to the next, after an untimed plain run of the same template.

    .venv/bin/python experiments/results/issue22/session57/probes/first_sight_cost.py \
        --sf 0.05 --rounds 4 --out F
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import criss
from criss.sparksession import local_spark
from criss.workload.replay import run_order
from criss.workload.tpch.data import register_views
from criss.workload.tpch.queries import QUERY_IDS, statement

PATHS = ("plain", "planned", "cached")


def _runners(spark, planned, cached) -> dict:
    def plain(sql: str) -> dict:
        started = time.perf_counter()
        rows = spark.sql(sql).collect()
        return {"seconds": time.perf_counter() - started, "rows": len(rows)}

    def through(cs, sql: str, again: bool) -> dict:
        started = time.perf_counter()
        df = cs.sql(sql)
        planning = time.perf_counter() - started
        rows = df.collect()
        seconds = time.perf_counter() - started
        summary = cs.last_query_summary()
        cs.settle_harvests()  # Criss's work after the action, untimed for the user
        if again:  # a repeat, untimed: the home keeps expecting repeats
            cs.sql(sql).collect()
            cs.settle_harvests()
        return {
            "seconds": seconds,
            "planning": planning,
            "rows": len(rows),
            "cached": summary.get("operators_cached", 0),
            "fallback": summary.get("fallback"),
        }

    return {
        "plain": plain,
        "planned": lambda sql: through(planned, sql, again=False),
        "cached": lambda sql: through(cached, sql, again=True),
    }


def _run(runners: dict, rounds: int) -> list[dict]:
    runs, seed, turn = [], 5000, 0
    for round_ in range(rounds):
        for qid in QUERY_IDS:
            order = run_order(PATHS, turn)
            turn += 1
            seed += 1
            runners["plain"](statement(qid, seed=seed).sql)  # warm-up, not recorded
            for path in order:
                seed += 1
                run = runners[path](statement(qid, seed=seed).sql)
                runs.append({"round": round_, "query": f"Q{qid}", "path": path, **run})
            print(" ".join(f"{r['path']} {r['seconds']:.3f}s" for r in runs[-3:]), f"Q{qid}")
    return runs


def _summary(runs: list[dict]) -> dict:
    def total(path: str, field: str = "seconds") -> float:
        return sum(r.get(field, 0.0) for r in runs if r["path"] == path)

    plain = total("plain")
    return {
        "totals": {p: round(total(p), 3) for p in PATHS},
        "ratios": {p: round(total(p) / plain, 4) for p in PATHS},
        "planning": {p: round(total(p, "planning"), 3) for p in PATHS[1:]},
        "caching_cost_share_of_plain": round((total("cached") - total("planned")) / plain, 4),
        "first_sights_cached": sum(1 for r in runs if r["path"] == "cached" and r["cached"]),
        "first_sights": sum(1 for r in runs if r["path"] == "cached"),
        "planned_cached_anything": sum(1 for r in runs if r["path"] == "planned" and r["cached"]),
        "fallbacks": sum(1 for r in runs if r.get("fallback")),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sf", default="0.05")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    spark = local_spark(app_name="first-sight-cost")
    register_views(spark, Path("data/tpch") / f"sf{args.sf}")
    planned = criss.session(
        spark,
        home=tempfile.mkdtemp(prefix="criss-planned-"),
        eager_results=False,
        lift_aggregates="off",
    )
    cached = criss.session(
        spark, home=tempfile.mkdtemp(prefix="criss-cached-"), lift_aggregates="off"
    )
    for qid in QUERY_IDS[:3]:  # JVM warm-up, not timed
        spark.sql(statement(qid, seed=1).sql).collect()
    runs = _run(_runners(spark, planned, cached), args.rounds)
    summary = _summary(runs)
    print(json.dumps(summary, indent=1))
    args.out.write_text(
        json.dumps(
            {"sf": args.sf, "rounds": args.rounds, "summary": summary, "runs": runs}, indent=1
        )
    )
    planned.close()
    cached.close()
    spark.stop()


if __name__ == "__main__":
    main()
