"""Where a first sight's time goes when Criss caches nothing: plain Spark against Criss
planning only (``eager_results=false``), with and without its join optimizations, every
path in one application and in turn (``run_order``), one statement per template (after an
untimed run of it by each path, so only execution differs).

    python -m experiments.results.issue22.session40.probes.planning_paths \\
        --queries Q10 Q16 Q20 Q22 --rounds 6
"""

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

import criss
from criss.sparksession import local_spark
from criss.workload.replay import run_order
from criss.workload.tpch.data import register_views
from criss.workload.tpch.queries import statement

PATHS = ("plain", "planned", "planned-no-joins")
NO_JOINS = {
    "range_join": False,
    "semi_prefilter": False,
    "bloom_join": False,
    "runtime_filters": False,
}


def run(spark, path: str, sql: str) -> dict:
    if path == "plain":
        started = time.perf_counter()
        spark.sql(sql).collect()
        return {"seconds": time.perf_counter() - started}
    options = {"eager_results": False, **(NO_JOINS if path == "planned-no-joins" else {})}
    cs = criss.session(spark, home=tempfile.mkdtemp(prefix="criss-paths-"), **options)
    started = time.perf_counter()
    df = cs.sql(sql)
    df.collect()
    seconds = time.perf_counter() - started
    cs.settle_harvests()
    record = cs.record(df)
    return {
        "seconds": seconds,
        "planning": record.planning_seconds,
        "rewrites": {k: v for k, v in record.counters.items() if "join" in k or "filter" in k},
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--queries", nargs="+", default=["Q10"])
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--data-dir", default="data/tpch/sf1")
    args = parser.parse_args()
    spark = local_spark(app_name="planning-paths")
    register_views(spark, Path(args.data_dir))
    totals: dict[str, dict[str, list[float]]] = {}
    for query in args.queries:
        sql = statement(int(query.lstrip("Q")), seed=1).sql
        for path in PATHS:
            run(spark, path, sql)  # untimed: compiled once by each path
        for round_ in range(args.rounds):
            for path in run_order(PATHS, round_):
                out = run(spark, path, sql)
                totals.setdefault(query, {}).setdefault(path, []).append(out["seconds"])
                print(
                    json.dumps({"query": query, "round": round_, "path": path, **out}), flush=True
                )
    for query, paths in totals.items():
        plain = statistics.median(paths["plain"])
        print(
            f"# {query}: "
            + ", ".join(
                f"{p} median {statistics.median(s):.3f}s ({statistics.median(s) / plain:.3f}x)"
                for p, s in paths.items()
            )
        )


if __name__ == "__main__":
    main()
