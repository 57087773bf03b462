"""Where a first-seen query's planning time goes, phase by phase, and what a first
materialization costs against plain Spark's collect. Numbers are in
``experiments/results/planning-profile.md``; each run writes
``experiments/results/planning-profile-<what>.json``.

    .venv/bin/python -m experiments.planning_profile phases        # ms per phase, 66 statements
    .venv/bin/python -m experiments.planning_profile materialize   # write job vs driver write
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import shutil
import subprocess
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

import criss
from criss.bridge import canonicalized, executed_plan, optimized_plan, plan_json, tree_string
from criss.bridge.execution import write_on_driver
from criss.localio import read_arrow
from criss.sparksession import local_spark
from criss.workload.tpch.data import ensure_tpch, register_views
from criss.workload.tpch.queries import QUERY_IDS, statement


class Timer:
    def __init__(self) -> None:
        self.seconds: dict[str, float] = defaultdict(float)

    def __call__(self, phase: str, work: Callable[[], object]) -> object:
        started = time.perf_counter()
        out = work()
        self.seconds[phase] += time.perf_counter() - started
        return out


def phases(spark, cs, rounds: int = 3) -> dict[str, float]:
    """Mean ms per statement of each planning step, over ``rounds`` seeds of Q1..Q22."""
    timer, count = Timer(), 0
    for seed in range(10, 10 + rounds):
        for qid in QUERY_IDS:
            count += 1
            sql = statement(qid, seed=seed).sql
            df = timer("Spark parse and analysis", lambda sql=sql: spark.sql(sql))
            root = timer("Spark optimization", lambda df=df: optimized_plan(df))
            canonical = timer("canonicalized()", lambda root=root: canonicalized(root))
            timer("toJSON of the canonical plan", lambda c=canonical: plan_json(c))
            timer("treeString (for comparison)", lambda root=root: tree_string(root))
            timer("capture (JSON + listings + checks)", lambda df=df: cs.bridge.capture(df))
            timer(
                "re-optimization by Dataset.ofRows",
                lambda root=root: optimized_plan(cs.bridge.dataframe_of(root)),
            )
            timer("physical planning", lambda df=df: executed_plan(df))
    return {phase: round(s / count * 1000, 1) for phase, s in timer.seconds.items()}


def materialize(spark, cs, qids=(6, 14, 4, 13, 16, 3, 10), runs: int = 3) -> dict[str, float]:
    """Seconds in all, side by side: plain collect, Spark write job + read-back, driver write."""
    bridge = cs.bridge

    def plain(sql: str) -> None:
        spark.sql(sql).collect()

    def through(sql: str, on_driver: bool) -> None:
        result = bridge.partitioned(optimized_plan(spark.sql(sql)))
        staged = Path(tempfile.mkdtemp(prefix="criss-profile-"))
        try:
            if on_driver:
                write_on_driver(result.bridge, result.frame(), staged, result.width)
            else:
                result.frame().write.mode("overwrite").parquet(str(staged))
            files = sorted(str(p) for p in staged.glob("part-*.parquet"))
            schema = result.frame().schema
            table = read_arrow(files)
            spark.createDataFrame(table, schema).collect()
        finally:
            shutil.rmtree(staged, ignore_errors=True)

    ways = {
        "plain collect": plain,
        "write job + read-back": lambda sql: through(sql, False),
        "driver write": lambda sql: through(sql, True),
    }
    totals: dict[str, float] = defaultdict(float)
    for qid in qids:
        sql = statement(qid, seed=1).sql
        for way in ways.values():
            way(sql)  # warm: Spark's code generation cache favours whoever runs second
        for run in range(runs):
            order = list(ways.items()) if run % 2 == 0 else list(reversed(ways.items()))
            for name, way in order:
                started = time.perf_counter()
                way(sql)
                totals[name] += time.perf_counter() - started
    return {name: round(seconds, 2) for name, seconds in totals.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("what", choices=("phases", "materialize"))
    parser.add_argument("--sf", type=float, default=1.0)
    args = parser.parse_args()
    spark = local_spark("criss-profile", conf={"spark.sql.shuffle.partitions": "8"})
    register_views(spark, ensure_tpch(args.sf, quiet=True))
    with criss.session(spark, home=tempfile.mkdtemp(prefix="criss-profile-home-")) as cs:
        measured = phases(spark, cs) if args.what == "phases" else materialize(spark, cs)
    unit = "ms per statement" if args.what == "phases" else "seconds in all"
    result = {
        "what": args.what,
        "unit": unit,
        "sf": args.sf,
        "created": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "engine": _engine_revision(),
        "machine": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "spark": spark.version,
        },
        "measured": measured,
    }
    out = Path(__file__).parent / "results" / f"planning-profile-{args.what}.json"
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"| {args.what} | {unit} |\n|---|---|")
    for name, value in measured.items():
        print(f"| {name} | {value} |")
    print(f"written to {out}")


def _engine_revision() -> str:
    try:
        return subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
            cwd=Path(__file__).parent,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


if __name__ == "__main__":
    main()
