"""What caching a first-seen result in the user's action adds, every path in one
application and in turn (session 37 compared two applications: one caching, one not).

Per template and round, four paths run the template, each Criss path in a new home:
``plain`` (Spark), ``cached`` (Criss, first-seen results cached by the action: the
default), ``uncompressed`` (the same, Spark's columnar cache built without compression)
and ``not-cached`` (Criss with ``eager_results=false``: planning only). The paths run in
``criss.workload.replay.run_order``'s orders, as a replay's modes do: every permutation in
turn, so each path runs before each other one equally often (the path that runs earlier
is the slower one).

``--values fresh``: every path runs the template under values of its own (new code to
compile for each, as a stream's first occurrences do); ``--values same``: all paths run one
statement after an untimed run of it by plain Spark and by Criss (its code compiled, so
only execution differs). Prints one JSON line per template and round, then the totals.

    python -m experiments.results.issue22.session38.probes.first_sight_paths \\
        --values same --rounds 2 > first-sight-paths-same.out
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
from criss.workload.tpch.queries import QUERY_IDS, statement

PATHS = ("plain", "cached", "uncompressed", "not-cached")
COMPRESSED = "spark.sql.inMemoryColumnarStorage.compressed"


def run(spark, path: str, sql: str) -> dict:
    """Seconds of ``cs.sql`` and the action on ``path``, and what Criss cached."""
    spark.conf.set(COMPRESSED, "false" if path == "uncompressed" else "true")
    if path == "plain":
        started = time.perf_counter()
        spark.sql(sql).collect()
        return {"seconds": time.perf_counter() - started, "cached": 0}
    options = {"eager_results": False} if path == "not-cached" else {}
    cs = criss.session(spark, home=tempfile.mkdtemp(prefix="criss-paths-"), **options)
    started = time.perf_counter()
    df = cs.sql(sql)
    df.collect()
    seconds = time.perf_counter() - started
    cs.settle_harvests()  # untimed, as a replay's settle
    record = cs.record(df)
    return {
        "seconds": seconds,
        "planning": record.planning_seconds,
        "cached": record.counters.get("operators_cached_in_action", 0),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--values", choices=("fresh", "same"), default="same")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--sf", default="1")
    args = parser.parse_args()
    spark = local_spark(app_name="first-sight-paths")
    register_views(spark, Path(f"data/tpch/sf{args.sf}"))
    seed, pairs = 9000, []
    for round_ in range(args.rounds):
        for qid in QUERY_IDS:
            seed += 1
            warm = statement(qid, seed=seed).sql
            for path in ("plain", "cached") if args.values == "same" else ("plain",):
                run(spark, path, warm)  # untimed: compiles the code a timed path reuses
            order = run_order(PATHS, len(pairs))
            line = {"query": f"Q{qid}", "round": round_, "first": order[0]}
            for path in order:
                if args.values == "fresh":
                    seed += 1
                sql = warm if args.values == "same" else statement(qid, seed=seed).sql
                line[path] = run(spark, path, sql)
            pairs.append(line)
            print(json.dumps(line, default=lambda x: round(x, 4)), flush=True)
    plain = sum(p["plain"]["seconds"] for p in pairs)
    print(f"# {len(pairs)} templates x rounds, values {args.values}; plain {plain:.2f}s")
    for path in PATHS[1:]:
        total = sum(p[path]["seconds"] for p in pairs)
        extra = [p[path]["seconds"] - p["plain"]["seconds"] for p in pairs]
        print(
            f"# {path:<13} {total:.2f}s  {total / plain:.3f}x plain"
            f"  median extra {statistics.median(extra):+.3f}s"
        )
    cached = [p for p in pairs if p["cached"]["cached"]]
    gap = [p["cached"]["seconds"] - p["not-cached"]["seconds"] for p in cached]
    print(
        f"# cached - not-cached over the {len(cached)} where the action cached: "
        f"sum {sum(gap):+.2f}s, median {statistics.median(gap):+.3f}s"
    )


if __name__ == "__main__":
    main()
