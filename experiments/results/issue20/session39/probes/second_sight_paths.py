"""What a drifting template's second sight costs when Criss caches a measured
intermediate in the user's action, every path in one application.

On the drift stream a template's second sight under new values is where Criss caches the
operators the two statements share (measured by the first sight's execution, ref 2): TPC-H
Q2's 1.3 MB, Q7's 15 MB. Per template and round: a new home per Criss path sees the
template's first statement (untimed, as is plain Spark's run of it), then the second
statement runs on each path: ``plain`` (Spark), ``criss`` (default) and a third, in
``criss.workload.replay.run_order``'s orders: ``--third uncompressed`` (Criss with Spark's
columnar cache built without compression) or ``--third min-ref`` (Criss with ``min_ref``
above any count; it turned out to cache the same operators, ``min_ref`` holding back only
operators never measured, so that run shows two Criss paths apart by the noise alone). The
statements are those of a drift stream (``--seed``) at each template's first two positions.

    python -m experiments.results.issue20.session39.probes.second_sight_paths \\
        --seed 3 --rounds 4 --template 7 --template 2 --third uncompressed
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
from criss.workload.streams import drift_stream
from criss.workload.tpch.data import register_views

THIRDS = {"uncompressed": {}, "min-ref": {"min_ref": 1_000_000}}
COMPRESSED = "spark.sql.inMemoryColumnarStorage.compressed"


def first_two(seed: int, qids: list[int]) -> dict[int, tuple[str, str]]:
    """Each template's first two statements on drift stream ``seed`` (100 positions)."""
    seen: dict[int, list[str]] = {}
    for query in drift_stream(100, seed, 1.0):
        if query.qid in qids and query.sql not in seen.get(query.qid, []):
            seen.setdefault(query.qid, []).append(query.sql)
    return {qid: (sqls[0], sqls[1]) for qid, sqls in seen.items() if len(sqls) >= 2}


def timed(run) -> float:
    started = time.perf_counter()
    run()
    return time.perf_counter() - started


def second_sight(spark, path: str, first: str, second: str) -> dict:
    spark.conf.set(COMPRESSED, "false" if path == "uncompressed" else "true")
    if path == "plain":
        spark.sql(first).collect()  # untimed, as Criss's first sight
        return {"seconds": timed(lambda: spark.sql(second).collect())}
    options = THIRDS.get(path, {})
    cs = criss.session(spark, home=tempfile.mkdtemp(prefix="criss-second-"), **options)
    cs.sql(first).collect()
    cs.settle_harvests()
    df = cs.sql(second)
    seconds = timed(df.collect)
    cs.settle_harvests()
    record = cs.record(df)
    return {
        "seconds": seconds,
        "planning": record.planning_seconds,
        "cached": record.counters.get("operators_cached_in_action", 0),
        "bytes_written": record.counters.get("bytes_written", 0),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--template", type=int, action="append", required=True)
    parser.add_argument("--third", choices=sorted(THIRDS), default="uncompressed")
    args = parser.parse_args()
    paths = ("plain", "criss", args.third)
    spark = local_spark(app_name="second-sight-paths")
    register_views(spark, Path("data/tpch/sf1"))
    statements = first_two(args.seed, args.template)
    lines = []
    for round_ in range(args.rounds):
        for qid, (first, second) in statements.items():
            order = run_order(paths, len(lines))
            line = {"query": f"Q{qid}", "round": round_, "order": list(order)}
            for path in order:
                line[path] = second_sight(spark, path, first, second)
            lines.append(line)
            print(json.dumps(line, default=lambda x: round(x, 4)), flush=True)
    for qid in statements:
        rows = [line for line in lines if line["query"] == f"Q{qid}"]
        plain = statistics.median(r["plain"]["seconds"] for r in rows)
        cells = [
            f"{p} {statistics.median(r[p]['seconds'] for r in rows) / plain:.3f}x"
            for p in paths[1:]
        ]
        print(f"# Q{qid}: plain median {plain:.3f}s; " + ", ".join(cells))


if __name__ == "__main__":
    main()
