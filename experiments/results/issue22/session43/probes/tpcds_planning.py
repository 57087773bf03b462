"""What Criss spends on each TPC-DS query's first sight: planning in ``cs.sql()``, and the
work it does after the action (statistics read off the executed plan, the result written
from Spark's cache), which the replays wait for untimed (their "after actions").

Every query of Spark's TPC-DS files (SF 0.1), in one application and one new Criss home:
plain Spark runs it first (untimed: Spark's own caches warm, its optimizer's time
measured), then Criss plans it (timed), its action runs (timed) and Criss settles (timed).

    .venv/bin/python PROBE --out FILE.json
"""

import argparse
import json
import tempfile
import time
from pathlib import Path

from pyspark.errors import PySparkException

import criss
from criss.bridge import optimized_plan
from criss.sparksession import local_spark
from criss.workload.tpcds.data import register_views
from criss.workload.tpcds.queries import query, query_ids


def measure(spark, cs) -> list[dict]:
    rows = []
    for name in query_ids():
        text = query(name)
        frame = spark.sql(text)
        started = time.perf_counter()
        optimized_plan(frame)
        optimize = time.perf_counter() - started
        try:
            frame.collect()
        except PySparkException as exc:  # q90 divides by zero at small scales (ANSI mode)
            print(json.dumps({"query": name, "skipped": str(exc)[:80]}), flush=True)
            continue
        started = time.perf_counter()
        df = cs.sql(text)
        planning = time.perf_counter() - started
        started = time.perf_counter()
        df.collect()
        action = time.perf_counter() - started
        started = time.perf_counter()
        cs.settle_harvests()
        after = time.perf_counter() - started
        record = cs.record(df)
        rows.append(
            {
                "query": name,
                "optimize": round(optimize, 4),
                "planning": round(planning, 4),
                "action": round(action, 4),
                "after": round(after, 4),
                "phases": {k: round(v, 4) for k, v in record.phase_seconds.items()},
            }
        )
        print(json.dumps(rows[-1]), flush=True)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sf", default="0.1")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    spark = local_spark(app_name="tpcds-planning")
    register_views(spark, Path("data/tpcds") / f"sf{args.sf}")
    with criss.session(spark, home=tempfile.mkdtemp(prefix="tpcds-planning-")) as cs:
        rows = measure(spark, cs)
    totals = {
        k: round(sum(r[k] for r in rows), 2) for k in ("optimize", "planning", "action", "after")
    }
    args.out.write_text(json.dumps({"sf": args.sf, "totals": totals, "queries": rows}, indent=1))
    print(json.dumps(totals))
    spark.stop()


if __name__ == "__main__":
    main()
