"""Does reading a cached intermediate pay? Per template: two parameter values through Criss
(the parameter-independent subtree is cached at the second), then N more values, each run
plain and through Criss (the order alternating); eager results and lifting off, so only
the intermediate differs. Prints each value's seconds and what was read.

    python reuse_probe.py 8,16,11,7,17 8 OUT.json   (from the repository root, SF 1 data)

``reuse-1`` ran on engine e664a7f (before an intermediate kept its measured Texec).
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


def main() -> None:
    templates = [int(x) for x in sys.argv[1].split(",")]
    n, out = int(sys.argv[2]), sys.argv[3]
    spark = local_spark("probe-reuse")
    parquet_data("tpch").register_views(spark, "data/tpch/sf1")
    cs = criss.session(spark, home=tempfile.mkdtemp(), lift_aggregates="off", eager_results=False)
    rows = []
    for q in templates:
        drawn = (statement(q, "orig", seed=5000 + q * 100 + i).sql for i in range(n + 8))
        sqls = list(dict.fromkeys(drawn))[: n + 3]
        spark.sql(sqls[-1]).collect()  # warm
        for sql in sqls[:2]:
            cs.sql(sql).collect()
            cs.settle_harvests()
        cached = [
            (o.op, o.decision.reason, dict(o.decision.numbers))
            for o in cs.last_record.operators
            if o.decision.action == "cache"
        ]
        print(q, "cached at 2nd:", cached, flush=True)
        for i, sql in enumerate(sqls[2:-1]):
            row = {"q": q, "i": i}
            for mode in ("plain", "criss") if i % 2 == 0 else ("criss", "plain"):
                if mode == "plain":
                    row["plain"] = round(timed(spark.sql(sql).collect), 3)
                    continue
                df = cs.sql(sql)
                row["criss"] = round(timed(df.collect), 3)
                cs.settle_harvests()
                counters = cs.last_record.counters
                row["reused"] = counters.get("operators_reused", 0)
                row["bytes_read"] = counters.get("bytes_read", 0)
                row["cached"] = counters.get("operators_cached", 0)
            print(json.dumps(row), flush=True)
            rows.append(row)
        served = [r for r in rows if r["q"] == q and r["reused"]]
        if served:
            plain = sum(r["plain"] for r in served)
            through = sum(r["criss"] for r in served)
            print(
                q,
                "served",
                len(served),
                "plain",
                round(plain, 2),
                "criss",
                round(through, 2),
                "ratio",
                round(through / plain, 3),
                flush=True,
            )
    with open(out, "w") as f:
        json.dump(rows, f, indent=1)
    spark.stop()


if __name__ == "__main__":
    main()
