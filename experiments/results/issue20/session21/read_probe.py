"""Probe (session 21): what a sub-second query of the drift stream costs through Criss
when it reads a cached intermediate, against plain Spark in the same application.

Each statement of the named templates in drift seed 3's order runs plain, then through
Criss (planning and action timed apart), then plain again; Criss's record says what it
reused and cached. Found (engine 51a4a35): TPC-H Q11's partsupp-supplier-nation
intermediate read back in an action no faster than computing it (0.46 s against 0.47 s);
session 20's drift run had kept it at the Texec of the template's first run, 0.62 s.

    .venv/bin/python experiments/results/issue20/session21/read_probe.py \
        data/tpch/sf1 Q11 Q16 Q2 > read_probe.out
"""

import json
import sys
import tempfile
import time

import criss
from criss.sparksession import local_spark
from criss.workload.streams import drift_stream
from criss.workload.tpch.data import register_views


def main(data_dir: str, templates: list[str]) -> None:
    spark = local_spark(app_name="read-probe")
    register_views(spark, data_dir)
    cs = criss.session(spark, home=tempfile.mkdtemp(prefix="read-probe-"))
    statements: dict[str, list[str]] = {}
    for item in drift_stream(100, 3, 1):
        statements.setdefault(item.query, []).append(item.sql)
    for template in templates:
        for sql in statements[template][:2]:
            spark.sql(sql).collect()  # untimed: the template's code compiled
        for i, sql in enumerate(statements[template]):
            print(json.dumps({"q": template, "i": i, **_timed(spark, cs, sql)}), flush=True)


def _timed(spark, cs, sql: str) -> dict:
    started = time.perf_counter()
    spark.sql(sql).collect()
    plain = time.perf_counter() - started
    started = time.perf_counter()
    df = cs.sql(sql)
    planning = time.perf_counter() - started
    started = time.perf_counter()
    df.collect()
    action = time.perf_counter() - started
    cs.settle_harvests()
    started = time.perf_counter()
    spark.sql(sql).collect()
    plain_again = time.perf_counter() - started
    summary = cs.last_query_summary()
    phases = summary.get("phase_seconds", {})
    return {
        "plain": round(plain, 3),
        "plain2": round(plain_again, 3),
        "criss_plan": round(planning, 3),
        "criss_action": round(action, 3),
        "reused": summary.get("operators_reused"),
        "cached": summary.get("operators_cached"),
        "phases": {k: round(v, 3) for k, v in phases.items() if v > 0.004},
    }


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
