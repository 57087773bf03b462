"""What a first-seen query's result costs the user on each path that caches it, side by
side in one SparkSession (issue 22: "no job of its own on first sight").

- ``plain``: Spark alone.
- ``job``: Criss with ``cache_in_action=False``: the stages below the result run in
  ``cs.sql``, its last stage is collected as Arrow and written (on the driver when small),
  and the user's action reads a local relation built from those rows.
- ``action``: Criss's default: the stages below run in the same way, the last one runs in
  the user's own action, into Spark's cache, and Criss writes the cached partitions after
  the action (``background`` is that write's time, waited for untimed after each query).

Every path runs a statement new to it (fresh substitution parameters), the paths in every
order in turn from one template to the next, after an untimed plain run of the same
template (so no path pays alone for compiling the template's code). Criss does not lift
aggregates here: every template recurs under other parameters, and a lift's cost is not
what caching a result costs. Ratios are each path's total over plain's.

    .venv/bin/python -m experiments.first_sight_paths --sf 1 --rounds 2
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import tempfile
import time
from pathlib import Path

import criss
from criss.sparksession import local_spark
from criss.workload.replay import run_order
from criss.workload.tpch.data import register_views
from criss.workload.tpch.queries import QUERY_IDS, statement

PATHS = ("plain", "job", "action")


def _paths(spark, job, action) -> dict:
    """Each path as a function of a statement: (foreground s, background s, rows)."""

    def plain(sql: str) -> tuple[float, float, int]:
        started = time.perf_counter()
        rows = spark.sql(sql).collect()
        return time.perf_counter() - started, 0.0, len(rows)

    def through(cs, sql: str) -> tuple[float, float, int]:
        started = time.perf_counter()
        rows = cs.sql(sql).collect()
        foreground = time.perf_counter() - started
        started = time.perf_counter()
        cs.settle_harvests()  # what it does after the action, untimed for the user
        return foreground, time.perf_counter() - started, len(rows)

    return {
        "plain": plain,
        "job": lambda sql: through(job, sql),
        "action": lambda sql: through(action, sql),
    }


def _run(runners: dict, rounds: int) -> list[dict]:
    """Every template ``rounds`` times per path, a statement new to that path each time,
    the paths in every order in turn; before each template's turn, plain Spark runs it once
    more, untimed, so whichever path goes first does not alone pay for compiling the
    template's code."""
    runs, seed, turn = [], 1000, 0
    seen: dict[str, set[str]] = {path: set() for path in PATHS}
    for round_ in range(rounds):
        for qid in QUERY_IDS:
            order = run_order(PATHS, turn)
            turn += 1
            seed += 1
            runners["plain"](statement(qid, seed=seed).sql)  # warm-up, not recorded
            for path in order:
                seed, sql = _new_statement(qid, seed, seen[path])
                seconds, background, rows = runners[path](sql)
                runs.append(
                    {
                        "round": round_,
                        "query": f"Q{qid}",
                        "path": path,
                        "seed": seed,
                        "seconds": round(seconds, 4),
                        "background": round(background, 4),
                        "rows": rows,
                    }
                )
            print(" ".join(f"{r['path']} {r['seconds']:.2f}s" for r in runs[-3:]), f"Q{qid}")
    return runs


def _new_statement(qid: int, seed: int, seen: set[str]) -> tuple[int, str]:
    """The next seed's statement of template ``qid`` that is not in ``seen`` (some
    templates have few parameter values: Q18's quantity takes 4), and that seed."""
    for _ in range(50):
        seed += 1
        sql = statement(qid, seed=seed).sql
        if sql not in seen:
            seen.add(sql)
            return seed, sql
    return seed, sql


def _summary(runs: list[dict]) -> dict:
    totals = {p: sum(r["seconds"] for r in runs if r["path"] == p) for p in PATHS}
    background = {p: sum(r["background"] for r in runs if r["path"] == p) for p in PATHS}
    return {
        "totals": {p: round(t, 2) for p, t in totals.items()},
        "ratios": {p: round(totals[p] / totals["plain"], 3) for p in PATHS},
        "background_seconds": {p: round(t, 2) for p, t in background.items()},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sf", default="1")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    spark = local_spark(app_name="first-sight-paths")
    register_views(spark, Path("data/tpch") / f"sf{args.sf}")
    # no lifts: each template recurs under other parameters here, and a lift is a cost of
    # its own (an aggregate computed at a finer grain), not what caching a result costs
    job = criss.session(
        spark,
        home=tempfile.mkdtemp(prefix="criss-first-sight-job-"),
        cache_in_action=False,
        lift_aggregates=False,
    )
    action = criss.session(
        spark, home=tempfile.mkdtemp(prefix="criss-first-sight-"), lift_aggregates=False
    )
    for qid in QUERY_IDS[:3]:  # JVM warm-up, not timed
        spark.sql(statement(qid, seed=1).sql).collect()
    runs = _run(_paths(spark, job, action), args.rounds)
    summary = _summary(runs)
    print(json.dumps(summary, indent=1))
    out = args.out or Path(f"experiments/results/issue22/first-sight-paths-sf{args.sf}.json")
    created = dt.datetime.now().isoformat(timespec="seconds")
    out.write_text(
        json.dumps(
            {
                "created": created,
                "sf": args.sf,
                "rounds": args.rounds,
                "summary": summary,
                "runs": runs,
            },
            indent=1,
        )
    )
    job.close()
    action.close()
    spark.stop()


if __name__ == "__main__":
    main()
