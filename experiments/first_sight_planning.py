"""What Criss's planning costs a first-seen statement, phase by phase, beside what Spark
itself spends parsing, analysing and optimizing it (which plain Spark pays too).

Every statement of the benchmark once (TPC-H: Q1..Q22 with fresh parameters per round;
TPC-DS: Spark's 118 query files), each new to the Criss session, planned as a dry run:
capture, join optimizations, match and decisions run as on any first sight, and nothing is
cached, so every statement is planned from scratch. Spark's own steps are timed on a
separate DataFrame of the same statement just before. Milliseconds per statement.

    .venv/bin/python -m experiments.first_sight_planning --benchmark tpcds --sf 0.1
"""

from __future__ import annotations

import argparse
import collections
import datetime as dt
import json
import tempfile
import time
from pathlib import Path

import criss
from criss.bridge import optimized_plan
from criss.sparksession import local_spark
from criss.workload.benchmarks import parquet_data

from .planning_profile import _engine_revision


def _statements(benchmark: str, rounds: int) -> list[tuple[str, str]]:
    if benchmark == "tpcds":
        from criss.workload.tpcds.queries import query, query_ids

        return [(name, query(name)) for name in query_ids()]
    from criss.workload.tpch.queries import QUERY_IDS, statement

    return [
        (f"Q{qid}", statement(qid, seed=seed).sql)
        for seed in range(10, 10 + rounds)
        for qid in QUERY_IDS
    ]


def measure(spark, cs, statements: list[tuple[str, str]]) -> dict[str, float]:
    """Mean ms per statement: Spark's own steps, then ``cs.sql`` and its phases."""
    seconds: collections.Counter = collections.Counter()
    for _, sql in statements[:3]:  # JVM warm-up, not timed
        spark.sql(sql).collect()
    for _, sql in statements:
        started = time.perf_counter()
        df = spark.sql(sql)
        analysed = time.perf_counter()
        optimized_plan(df)
        seconds["Spark: parse and analysis"] += analysed - started
        seconds["Spark: optimization"] += time.perf_counter() - analysed
        started = time.perf_counter()
        planned = cs.sql(sql)
        seconds["cs.sql (includes Spark's steps)"] += time.perf_counter() - started
        for phase, spent in cs.record(planned).phase_seconds.items():
            seconds[f"phase: {phase}"] += spent
    own = (
        seconds["cs.sql (includes Spark's steps)"]
        - seconds["Spark: parse and analysis"]
        - seconds["Spark: optimization"]
    )
    seconds["Criss's own (cs.sql less Spark's steps)"] = own
    return {name: round(s / len(statements) * 1000, 1) for name, s in seconds.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--benchmark", choices=("tpch", "tpcds"), default="tpcds")
    parser.add_argument("--sf", type=float, default=0.1)
    parser.add_argument("--rounds", type=int, default=3, help="TPC-H parameter rounds")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    spark = local_spark("criss-first-sight-planning", conf={"spark.sql.shuffle.partitions": "8"})
    data = parquet_data(args.benchmark)
    data.register_views(spark, data.ensure(args.sf, quiet=True))
    statements = _statements(args.benchmark, args.rounds)
    home = tempfile.mkdtemp(prefix="criss-first-sight-planning-")
    with criss.session(spark, home=home, dry_run=True) as cs:
        measured = measure(spark, cs, statements)
    result = {
        "benchmark": args.benchmark,
        "sf": args.sf,
        "statements": len(statements),
        "unit": "ms per first-seen statement",
        "created": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "engine": _engine_revision(),
        "measured": measured,
    }
    out = args.out or (
        Path(__file__).parent
        / "results"
        / f"first-sight-planning-{args.benchmark}-sf{args.sf:g}.json"
    )
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"| step | {result['unit']} |\n|---|---|")
    for name, value in measured.items():
        print(f"| {name} | {value} |")
    print(f"written to {out}")


if __name__ == "__main__":
    main()
