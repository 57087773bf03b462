"""JVM round trips and time per phase of ``cs.sql`` for first-seen queries: what Criss's
planning asks of Spark's JVM. Each of Q1..Q22 twice, every statement with fresh parameters
(no repeats), after a short untimed warm-up; counts only the round trips ``cs.sql`` makes
on the main thread (see ``criss.bridge.roundtrips``).

    .venv/bin/python -m experiments.jvm_round_trips --sf 0.05
"""

from __future__ import annotations

import argparse
import collections
import datetime as dt
import json
import tempfile
import time
from pathlib import Path

import criss
from criss.bridge.roundtrips import RoundTripCounter
from criss.sparksession import local_spark
from criss.workload.tpch.data import register_views
from criss.workload.tpch.queries import QUERY_IDS, statement


def measure(cs) -> dict:
    counter, phases, planning, n = RoundTripCounter(), collections.Counter(), 0.0, 0
    try:
        for position, qid in enumerate(QUERY_IDS * 2):
            sql = statement(qid, seed=100 + position).sql
            started = time.perf_counter()
            counter.active = True
            df = cs.sql(sql)
            counter.active = False
            planning += time.perf_counter() - started
            df.collect()
            phases.update(cs.record(df).phase_seconds)
            n += 1
    finally:
        counter.close()
    return {
        "statements": n,
        "cs_sql_ms_per_query": round(planning / n * 1000, 1),
        "round_trips_per_query": round(sum(counter.calls.values()) / n, 1),
        "phase_ms_per_query": {k: round(v / n * 1000, 1) for k, v in phases.items()},
        "round_trips_per_query_by_site": {
            site: [round(c / n, 1), round(counter.seconds[site] / n * 1000, 1)]
            for site, c in counter.calls.most_common(25)
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sf", default="0.05")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    spark = local_spark(app_name="jvm-round-trips")
    register_views(spark, Path("data/tpch") / f"sf{args.sf}")
    cs = criss.session(spark, home=tempfile.mkdtemp(prefix="criss-round-trips-"))
    for qid in QUERY_IDS[:4]:
        cs.sql(statement(qid, seed=1).sql).collect()
    result = {"created": dt.datetime.now().isoformat(timespec="seconds"), "sf": args.sf}
    result |= measure(cs)
    print(json.dumps(result, indent=1))
    out = args.out or Path(f"experiments/results/issue22/jvm-round-trips-sf{args.sf}.json")
    out.write_text(json.dumps(result, indent=1))
    cs.close()
    spark.stop()


if __name__ == "__main__":
    main()
