"""What Catalyst's ``toJSON`` of a canonicalized plan costs a TPC-DS first sight (session
53): every TPC-DS query file parsed and optimized in plain Spark, then its canonicalized
plan serialised twice (the second call on the same JVM plan object), the text parsed in
Python. Two passes over the queries; the second pass is reported (the JVM warmed by the
first). Derived from TPC-DS, not comparable. From the repository root:

    .venv/bin/python experiments/results/issue22/session53/probes/catalyst_json_cost.py 0.1
"""

import json
import statistics
import sys
import time

from criss.bridge.plans import canonicalized, optimized_plan, plan_json
from criss.sparksession import local_spark
from criss.workload.tpcds.data import register_views
from criss.workload.tpcds.queries import query, query_ids

STEPS = ("canonicalized", "toJSON", "toJSON again", "json.loads")


def measure(spark, name):
    """Seconds of each of STEPS for query ``name``, and the JSON's length; None if Spark
    cannot plan it."""
    try:
        plan = optimized_plan(spark.sql(query(name)))
    except Exception:
        return None
    started = time.perf_counter()
    canonical = canonicalized(plan)
    made = time.perf_counter()
    text = plan_json(canonical)
    first = time.perf_counter()
    plan_json(canonical)
    second = time.perf_counter()
    json.loads(text)
    parsed = time.perf_counter()
    return (made - started, first - made, second - first, parsed - second), len(text)


def main():
    sf = float(sys.argv[1]) if len(sys.argv) > 1 else 0.1
    spark = local_spark("catalyst-json-cost", conf={"spark.sql.shuffle.partitions": "8"})
    register_views(spark, f"data/tpcds/sf{sf:g}")
    for _ in range(2):  # the first pass warms the JVM
        rows = {n: m for n in query_ids() if (m := measure(spark, n)) is not None}
    print(f"TPC-DS SF {sf:g}, {len(rows)} queries, second pass, ms per query")
    for i, step in enumerate(STEPS):
        values = [seconds[i] * 1000 for seconds, _ in rows.values()]
        mean, median = statistics.mean(values), statistics.median(values)
        print(f"  {step:14s} mean {mean:7.1f}  median {median:7.1f}")
    chars = [length for _, length in rows.values()]
    mean, median = statistics.mean(chars), statistics.median(chars)
    print(f"  JSON characters: mean {mean:,.0f}, median {median:,.0f}")
    print("dearest toJSON (ms: canonicalized, toJSON, again, json.loads; characters):")
    for name, (seconds, length) in sorted(rows.items(), key=lambda r: -r[1][0][1])[:8]:
        print(f"  {name:6s}", [round(s * 1000, 1) for s in seconds], f"{length:,}")


if __name__ == "__main__":
    main()
