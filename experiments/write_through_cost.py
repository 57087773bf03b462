"""What caching a first-seen result costs: plain Spark, a write-through step in the user's
action, and a materialization job inside ``cs.sql()``, side by side in one SparkSession.

Each case runs ``repeats`` times per mode in turn; every Criss run starts from an empty
home, so the result is always first-seen (cached eagerly). Small results are TPC-H queries
the user collects; the big one is a per-order aggregate of lineitem the user writes out.

    python -m experiments.write_through_cost --sf 1 \
        --out experiments/results/issue22/write-through-cost-sf1.json
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import criss
from criss.sparksession import local_spark
from criss.workload.tpch.data import ensure_tpch, register_views
from criss.workload.tpch.queries import statement

BIG = "select l_orderkey, sum(l_quantity) q, max(l_shipdate) d from lineitem group by l_orderkey"


def _cases(sf: float) -> dict[str, tuple[str, str]]:
    cases = {f"Q{q}": (statement(q, sf=sf).sql, "collect") for q in (1, 14, 15, 18, 20)}
    cases["per-order aggregate"] = (BIG, "write")
    return cases


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sf", type=float, default=1.0)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    spark = local_spark(app_name="write-through-cost", conf={"spark.sql.shuffle.partitions": "8"})
    spark.sparkContext.setLogLevel("ERROR")
    data = ensure_tpch(args.sf, Path(f"data/tpch/sf{args.sf:g}"), quiet=True)
    register_views(spark, data)
    scratch = Path(tempfile.mkdtemp(prefix="criss-wt-cost-"))
    options = {"codec_rate": "20m", "memory_bandwidth": "1g", "disk_bandwidth": "500m"}
    results = {}
    for name, (sql, action) in _cases(args.sf).items():

        def run(df, sql=sql, action=action):
            if action == "collect":
                df.collect()
            else:
                df.write.mode("overwrite").parquet(str(scratch / "out"))

        run(spark.sql(sql))  # warm: JVM, page cache, Python workers
        times: dict[str, list[float]] = {"plain": [], "write-through": [], "job": []}
        for _ in range(args.repeats):
            started = time.perf_counter()
            run(spark.sql(sql))
            times["plain"].append(time.perf_counter() - started)
            for mode, write_through in (("write-through", True), ("job", False)):
                home = scratch / mode
                shutil.rmtree(home, ignore_errors=True)
                cs = criss.session(spark, home=str(home), write_through=write_through, **options)
                started = time.perf_counter()
                run(cs.sql(sql))
                times[mode].append(time.perf_counter() - started)
                assert cs.last_query_summary().get("operators_cached", 0) >= 1, name
                cs.close()
        medians = {mode: statistics.median(values) for mode, values in times.items()}
        results[name] = {
            "action": action,
            "seconds": times,
            "median": medians,
            "ratio_to_plain": {m: round(v / medians["plain"], 3) for m, v in medians.items()},
        }
        print(name, results[name]["ratio_to_plain"], flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(
        json.dumps(
            {
                "sf": args.sf,
                "repeats": args.repeats,
                "spark": spark.version,
                "created": time.strftime("%Y-%m-%d %H:%M:%S"),
                "cases": results,
            },
            indent=1,
        )
    )
    shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
