"""Probe (session 27): a drift stream through Criss alone, with `cs.explain()` printed before
the action at chosen positions, optionally after the replay's own warm-up (plain Spark, then
Criss in a throwaway home, as `criss replay --warmup` does).

Found (engine deccb4d, seed 3, with --warm): the exact repeat of TPC-H Q18 at position 83
computed its per-order aggregate again (3.9 s; 1.0 s at position 19, which read it): the
HAVING's Project above it had been measured at 0.127 s while the cache served the aggregate,
and an operator not worth reading hid everything under it. Without the warm-up the same
Project measured 0.218 s, above `min_texec`, and the repeat read the aggregate.

    .venv/bin/python experiments/results/issue20/session27/probes/stream_explain.py \\
        data/tpch/sf1 3 83 19,83 --warm > stream_explain.out
"""

import json
import sys
import tempfile
import time

import criss
from criss.sparksession import local_spark
from criss.workload.streams import drift_stream
from criss.workload.tpch.data import register_views
from criss.workload.warmup import warm_up, warm_up_criss


def main(data_dir: str, seed: int, last: int, watched: set[int], warm: bool) -> None:
    spark = local_spark(app_name="stream-explain")
    register_views(spark, data_dir)
    stream = drift_stream(100, seed, 1)
    if warm:
        warm_up(spark, stream)
        print(warm_up_criss(spark, {}, stream), flush=True)
    cs = criss.session(spark, home=tempfile.mkdtemp(prefix="stream-explain-"))
    for item in stream[: last + 1]:
        started = time.perf_counter()
        df = cs.sql(item.sql)
        if item.position in watched:
            print(f"==== {item.position} {item.query} {item.variant}\n{cs.explain(df)}", flush=True)
        df.collect()
        cs.settle_harvests()
        summary = cs.last_query_summary()
        record = {
            "pos": item.position,
            "q": item.query,
            "v": item.variant,
            "s": round(time.perf_counter() - started, 2),
            "reused": summary.get("operators_reused"),
            "cached": summary.get("operators_cached"),
        }
        print(json.dumps(record), flush=True)


if __name__ == "__main__":
    watched = {int(p) for p in sys.argv[4].split(",")} if len(sys.argv) > 4 else set()
    main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), watched, "--warm" in sys.argv)
