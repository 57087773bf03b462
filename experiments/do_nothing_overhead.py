"""Where the time goes when Criss plans a query and then neither reuses nor caches
anything (issue 22's no-repeat stream: most of its positions), beside plain Spark in one
SparkSession.

Every template runs under fresh substitution parameters, once per path, the paths in both
orders in turn, after an untimed plain run of the same template (so neither path pays
alone for compiling its code). Each path's time is split where Spark's own work and
Criss's can be told apart:

- ``parse``: ``spark.sql`` (plain) — Criss's ``cs.sql`` starts with the same call;
- ``optimize``: forcing the optimized plan (plain; Criss's capture forces it too);
- ``planning``: Criss's own planning (its record's ``planning_seconds``), by phase;
- ``after_planning``: the rest of ``cs.sql`` (the query log, watching the DataFrame);
- ``collect``: the user's action;
- ``settle``: waiting, untimed for the user, for what Criss does after the action.

Only runs in which Criss cached and reused nothing are compared. Measured on 11d487d:
``experiments/results/issue22/session33/do-nothing-overhead-sf1-11d487d.json`` (RESULTS.md,
thirty-third session).

    .venv/bin/python -m experiments.do_nothing_overhead --sf 1 --rounds 2

``--template N`` (repeatable) runs only those templates; ``--explain`` prints, for each run
in which Criss did nothing, its ``explain`` and the physical plans Spark ran on both paths
(where they differ, the difference is in the plan and not in Criss's own work).
``--fresh-home`` gives each Criss run a new home: every run is then a first sight judged
on a new home's priors (what the first occurrences of a stream's first queries pay, caching
included); run once more with ``--option eager_results=false`` to see them not cache.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import statistics
import tempfile
import time
from pathlib import Path

import criss
from criss.bridge import executed_plan, optimized_plan
from criss.sparksession import local_spark
from criss.workload.tpch.data import register_views
from criss.workload.tpch.queries import QUERY_IDS, statement

PATHS = ("plain", "criss")


def _plain(spark, sql: str, plans: bool) -> dict:
    started = time.perf_counter()
    df = spark.sql(sql)
    parsed = time.perf_counter()
    optimized_plan(df)  # what Criss's capture forces, timed apart
    optimized = time.perf_counter()
    rows = df.collect()
    done = time.perf_counter()
    return {
        **({"executed": _executed(df)} if plans else {}),
        "parse": parsed - started,
        "optimize": optimized - parsed,
        "collect": done - optimized,
        "total": done - started,
        "rows": len(rows),
    }


def _executed(df) -> str:
    """The physical plan Spark ran (AQE's final one, after the action)."""
    return str(executed_plan(df).toString())


def _criss(cs, sql: str, plans: bool) -> dict:
    started = time.perf_counter()
    df = cs.sql(sql)
    planned = time.perf_counter()
    rows = df.collect()
    done = time.perf_counter()
    cs.settle_harvests()
    settled = time.perf_counter()
    record = cs.record(df)  # every DataFrame cs.sql hands out has one, a fallback's too
    counters = dict(record.counters)
    return {
        "sql": planned - started,
        "planning": record.planning_seconds,
        "phases": dict(record.phase_seconds),
        "collect": done - planned,
        "total": done - started,
        "settle": settled - done,
        "rows": len(rows),
        "did_nothing": not (counters.get("operators_cached") or counters.get("operators_reused")),
        "counters": {k: v for k, v in counters.items() if v},
        **({"explain": cs.explain(df), "executed": _executed(df)} if plans else {}),
    }


def _run(spark, session, rounds: int, templates: list[int], explain: bool) -> list[dict]:
    """Pairs of plain and Criss runs; ``session()``: the Criss session of the next pair."""
    runs, seed = [], 5000
    for round_ in range(rounds):
        for index, qid in enumerate(templates):
            seed += 1
            spark.sql(statement(qid, seed=seed).sql).collect()  # warm-up, not recorded
            # each template in both orders over the rounds, whatever their number
            order = PATHS if (index + round_) % 2 == 0 else PATHS[::-1]
            pair = {"query": f"Q{qid}", "first": order[0]}
            cs = session()
            for path in order:
                seed += 1
                sql = statement(qid, seed=seed).sql
                run = _plain(spark, sql, explain) if path == "plain" else _criss(cs, sql, explain)
                pair[path] = run
            runs.append(pair)
            print(
                f"Q{qid:<3} plain {pair['plain']['total']:.3f}s criss {pair['criss']['total']:.3f}s"
                f" (planning {pair['criss']['planning']:.3f}s)"
                f"{'' if pair['criss']['did_nothing'] else ' cached/reused'}"
            )
            if explain and pair["criss"]["did_nothing"]:
                _print_plans(pair)
    return runs


def _print_plans(pair: dict) -> None:
    print(pair["criss"]["explain"])
    same = pair["plain"]["executed"] == pair["criss"]["executed"]
    print(f"executed plans {'equal' if same else 'differ'} (ids aside, see below)")
    for path in PATHS:
        print(f"--- {path}\n{pair[path]['executed']}")


def _median(values) -> float:
    values = list(values)
    return round(statistics.median(values), 4) if values else 0.0


def _summary(runs: list[dict]) -> dict:
    idle = [(r["plain"], r["criss"], r["first"]) for r in runs if r["criss"]["did_nothing"]]
    ours = [c for _, c, _ in idle]
    phases = sorted({p for c in ours for p in c["phases"]})
    extra = [c["total"] - p["total"] for p, c, _ in idle]
    return {
        "pairs": len(runs),
        "did_nothing": len(idle),
        "plain_total": round(sum(p["total"] for p, _, _ in idle), 3),
        "criss_total": round(sum(c["total"] for c in ours), 3),
        "median_extra": _median(extra),
        "mean_extra": round(statistics.fmean(extra), 4) if extra else 0.0,
        "median_planning": _median(c["planning"] for c in ours),
        "median_after_planning": _median(
            c["sql"] - c["planning"] - p["parse"] - p["optimize"] for p, c, _ in idle
        ),
        "median_collect_extra": _median(c["collect"] - p["collect"] for p, c, _ in idle),
        "median_phases": {ph: _median(c["phases"].get(ph, 0.0) for c in ours) for ph in phases},
        "median_plain": {
            k: _median(p[k] for p, _, _ in idle) for k in ("parse", "optimize", "collect", "total")
        },
        "median_settle": _median(c["settle"] for c in ours),
        "median_extra_by_first": {
            path: _median(c["total"] - p["total"] for p, c, f in idle if f == path)
            for path in PATHS
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sf", default="1")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--out", type=Path)
    parser.add_argument("--option", action="append", default=[], help="name=value for Criss")
    parser.add_argument("--template", type=int, action="append", help="only these templates")
    parser.add_argument("--explain", action="store_true", help="print plans of idle runs")
    parser.add_argument("--fresh-home", action="store_true", help="a new home for each run")
    args = parser.parse_args()
    options = {k: json.loads(v) for k, v in (o.split("=", 1) for o in args.option)}
    spark = local_spark(app_name="do-nothing-overhead")
    register_views(spark, Path("data/tpch") / f"sf{args.sf}")
    sessions = []

    def session():
        if args.fresh_home or not sessions:
            if sessions:  # its listener would go on reading every later execution
                sessions.pop().close()
            home = tempfile.mkdtemp(prefix="criss-do-nothing-")
            sessions.append(criss.session(spark, home=home, **options))
        return sessions[-1]

    for qid in QUERY_IDS[:3]:  # JVM warm-up, not timed
        spark.sql(statement(qid, seed=1).sql).collect()
    runs = _run(spark, session, args.rounds, args.template or list(QUERY_IDS), args.explain)
    summary = _summary(runs)
    print(json.dumps(summary, indent=1))
    out = args.out or Path(f"experiments/results/issue22/do-nothing-overhead-sf{args.sf}.json")
    created = dt.datetime.now().isoformat(timespec="seconds")
    payload = {"created": created, "sf": args.sf, "options": options, "summary": summary}
    out.write_text(json.dumps({**payload, "runs": runs}, indent=1))
    for cs in sessions:
        cs.close()
    spark.stop()


if __name__ == "__main__":
    main()
