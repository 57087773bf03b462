"""What caching a parameter-independent intermediate in the user's action costs: per
template and trial, a fresh home sees value A, then value B (the intermediate is cached
in B's action); B is also run plain (the order alternating). Eager results and lifting
off; the media's bandwidths are given, so the decision is the same in every trial. Prints
the write bandwidth each home learned from its write (``write_bw``).

    python cache_cost_probe.py 8,7,17,18 2 OUT.json   (from the repository root, SF 1 data)

``cachecost-2`` ran on engine f6f78da.
"""

import json
import sys
import tempfile
import time

import criss
from criss.sparksession import local_spark
from criss.workload.benchmarks import parquet_data
from criss.workload.tpch.queries import statement


def timed(run) -> float:
    started = time.perf_counter()
    run()
    return time.perf_counter() - started


def trial(spark, q: int, t: int, a: str, b: str) -> dict:
    cs = criss.session(
        spark,
        home=tempfile.mkdtemp(),
        lift_aggregates="off",
        eager_results=False,
        codec_rate=3e7,
        disk_bandwidth=2e9,
        memory_bandwidth=3e9,
    )
    cs.sql(a).collect()
    cs.settle_harvests()
    row: dict = {"q": q, "t": t}
    for mode in ("plain", "criss") if t % 2 == 0 else ("criss", "plain"):
        if mode == "plain":
            row["plain"] = round(timed(spark.sql(b).collect), 3)
            continue
        df = cs.sql(b)
        row["criss"] = round(timed(df.collect), 3)
        started = time.perf_counter()
        cs.settle_harvests()
        row["settle"] = round(time.perf_counter() - started, 3)
        counters = cs.last_record.counters
        row["cached"] = counters.get("operators_cached", 0)
        row["bytes"] = counters.get("bytes_written", 0)
        row["decisions"] = [
            (o.op, round(o.decision.numbers.get("texec", 0), 3))
            for o in cs.last_record.operators
            if o.decision.action == "cache"
        ]
    print(json.dumps(row), flush=True)
    row["write_bw"] = cs.report()["write_bandwidth"]
    print(" write_bw", row["write_bw"], flush=True)
    cs.close()
    return row


def main() -> None:
    templates = [int(x) for x in sys.argv[1].split(",")]
    trials, out = int(sys.argv[2]), sys.argv[3]
    spark = local_spark("probe-cache-cost")
    parquet_data("tpch").register_views(spark, "data/tpch/sf1")
    rows = []
    for q in templates:
        drawn = (statement(q, "orig", seed=7000 + q * 100 + i).sql for i in range(3 * trials + 12))
        sqls = list(dict.fromkeys(drawn))
        spark.sql(sqls[-1]).collect()
        for t in range(trials):
            rows.append(trial(spark, q, t, sqls[2 * t], sqls[2 * t + 1]))
    with open(out, "w") as f:
        json.dump(rows, f, indent=1)
    spark.stop()


if __name__ == "__main__":
    main()
