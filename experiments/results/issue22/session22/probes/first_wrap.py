"""Probe (session 22): does the first run of a template whose result is computed into
Spark's columnar cache (as Criss's in-action caching does) cost more than later ones,
for code compiled for the cache?

Per TPC-H template, five fresh statements in one application: plain twice, through a
relation of Spark's cache twice (``CachedResult``, built before the timer starts in the
plain runs' place: its construction plans the query physically, which plain Spark does in
its action), plain once more. Found (SF 1): 37.31 s for the first cached runs of the 22
templates against 37.08 s for the second: no first-run cost to speak of.

    .venv/bin/python experiments/results/issue22/session22/probes/first_wrap.py data/tpch/sf1
"""

import json
import random
import sys
import tempfile
import time

import criss
from criss.bridge.spark_cache import CachedResult
from criss.sparksession import local_spark
from criss.workload.tpch import queries as tpch
from criss.workload.tpch.data import register_views


def main(data_dir: str) -> None:
    spark = local_spark(app_name="first-wrap")
    register_views(spark, data_dir)
    cs = criss.session(spark, home=tempfile.mkdtemp(prefix="first-wrap-"))
    rng = random.Random(5)
    totals = [0.0] * 5
    for qid in tpch.QUERY_IDS:
        runs = [
            _timed(spark, cs, _statement(qid, rng), cached)
            for cached in (False, False, True, True, False)
        ]
        totals = [a + b for a, b in zip(totals, runs, strict=True)]
        names = ("plain1", "plain2", "cached1", "cached2", "plain3")
        print(json.dumps({"q": qid, **dict(zip(names, runs, strict=True))}), flush=True)
    print(json.dumps({"totals": [round(x, 2) for x in totals]}))


def _statement(qid: int, rng: random.Random) -> str:
    return tpch.variant_statement(qid, "orig", tpch.random_params(qid, rng, 1)).sql


def _timed(spark, cs, sql: str, cached: bool) -> float:
    df = spark.sql(sql)
    started = time.perf_counter()
    relation = None
    if cached:
        relation = CachedResult(cs.bridge, df, f"probe-{time.time_ns()}")
        df = relation.positional_frame()
    df.collect()
    seconds = time.perf_counter() - started
    if relation is not None:
        relation.unpersist()
    return round(seconds, 3)


if __name__ == "__main__":
    main(sys.argv[1])
