"""How many classes Spark compiles for a first-seen statement, plain and through Criss.

Spark generates and compiles Java for each stage (whole-stage code generation) and keeps the
last hundred classes per JVM. A statement whose literals are new compiles again whatever
embeds them. Per TPC-H template, in one application: the template is run once with other
literals (its classes compiled), then plain Spark runs it with new literals, then Criss
runs it with new literals again, new to Criss (cached in the action on first sight). The
difference is what Criss's first sight compiles beyond plain Spark's (the read of Spark's
columnar cache, and whatever of the plan is above it), and the times show what that costs.

    .venv/bin/python -m experiments.first_sight_compiles --sf 1 --out FILE
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import tempfile
import time
from pathlib import Path

import criss
from criss.bridge import compiled_classes
from criss.sparksession import local_spark
from criss.workload.benchmarks import parquet_data
from criss.workload.streams import no_repeat_stream

from .planning_profile import _engine_revision

TEMPLATES = ("Q1", "Q3", "Q4", "Q5", "Q6", "Q8", "Q10", "Q12", "Q13", "Q14", "Q16", "Q18")


def measure(spark, cs, statements: dict[str, list[str]]) -> list[dict]:
    rows = []
    for name in TEMPLATES:
        warm, plain_sql, criss_sql = statements[name][:3]
        spark.sql(warm).collect()
        before = compiled_classes(spark)
        started = time.perf_counter()
        spark.sql(plain_sql).collect()
        plain_seconds = time.perf_counter() - started
        plain_classes = compiled_classes(spark) - before
        before = compiled_classes(spark)
        started = time.perf_counter()
        planned = cs.sql(criss_sql)
        planned_classes = compiled_classes(spark) - before
        planned.collect()
        criss_seconds = time.perf_counter() - started
        criss_classes = compiled_classes(spark) - before
        cs.settle_harvests()
        record = cs.last_record
        rows.append(
            {
                "template": name,
                "plain_classes": plain_classes,
                "plain_seconds": round(plain_seconds, 4),
                "criss_classes": criss_classes,
                "criss_classes_in_sql": planned_classes,
                "criss_seconds": round(criss_seconds, 4),
                "cached_in_action": record.counters.get("operators_cached_in_action", 0),
            }
        )
        print(rows[-1], flush=True)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sf", type=float, default=1.0)
    parser.add_argument("--data-dir", type=Path, default=None)
    parser.add_argument("--seed", type=int, default=9)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    data = parquet_data("tpch")
    where = data.ensure(args.sf, args.data_dir or data.dir_for(args.sf), quiet=True)
    spark = local_spark("criss-first-sight-compiles")
    data.register_views(spark, where)
    statements: dict[str, list[str]] = {}
    for item in no_repeat_stream(22 * 4, args.seed, args.sf):
        statements.setdefault(item.query, []).append(item.sql)
    with tempfile.TemporaryDirectory() as home:
        cs = criss.session(spark, home=home)
        rows = measure(spark, cs, statements)
        cs.close()
    totals = {
        key: round(sum(r[key] for r in rows), 3)
        for key in ("plain_classes", "criss_classes", "plain_seconds", "criss_seconds")
    }
    result = {
        "experiment": "first-sight-compiles",
        "sf": args.sf,
        "seed": args.seed,
        "engine": _engine_revision(),
        "created": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "templates": rows,
        "totals": totals,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1))
    print(totals)
    spark.stop()


if __name__ == "__main__":
    main()
