"""Probe (session 23): does Criss's own warm-up slow plain Spark's next statements?

One application per run: the 22 TPC-H templates (fixed parameters) run once through plain
Spark, as the replay's warm-up does; then, by variant, nothing (``none``), a Criss warm-up
over a small table of its own, longs to booleans, cached and served, after the statements
(``criss-after``, the replay's order before session 23) or before them (``criss-first``),
or the statements through Criss twice in a throwaway home (``criss-stmts``, session 23's
warm-up). Then eight of the statements run again through plain Spark, timed, each after an
idle machine. Found (SF 1, two runs of each): none 21.00 / 20.39 s, criss-after 22.97 /
22.80 s, criss-first 21.32 / 22.13 s (``warmup_pollution.out``).

    .venv/bin/python experiments/results/issue22/session23/probes/warmup_pollution.py \
        data/tpch/sf1 VARIANT
"""

import json
import random
import sys
import tempfile
import time
from pathlib import Path

import criss
from criss.sparksession import local_spark
from criss.workload.idle import wait_for_idle
from criss.workload.tpch import queries as tpch
from criss.workload.tpch.data import register_views
from criss.workload.warmup import warm_up_criss

TABLE = "criss_warmup_table"
COLUMNS = (
    "id % 37 AS g",
    "CAST(id % 9973 AS INT) AS k",
    "id * 7 % 1009 AS v",
    "CAST((id % 100003) / 100.0 AS DECIMAL(15,2)) AS price",
    "(id % 97) * 0.5 AS x",
    "concat('name#', id % 5003) AS name",
    "date_add(DATE'1995-01-01', CAST(id % 2000 AS INT)) AS day",
    "id % 3 = 0 AS flag",
)
STATEMENTS = (
    "SELECT g, count(*) AS n, sum(v) AS s, sum(price) AS revenue, avg(x) AS ax, "
    f"min(day) AS first_day, max(name) AS last_name FROM {TABLE} GROUP BY g ORDER BY g",
    f"SELECT a.g, sum(a.v) AS s FROM {TABLE} a JOIN (SELECT g, max(v) AS m FROM {TABLE} "
    "GROUP BY g) b ON a.g = b.g WHERE a.v < b.m GROUP BY a.g ORDER BY s DESC LIMIT 5",
    "SELECT k, max(name) AS name, max(price) AS price, sum(price * (1 - x / 100)) AS revenue, "
    f"max(day) AS day, count_if(flag) AS flagged FROM {TABLE} "
    "WHERE day < DATE'1999-06-01' GROUP BY k ORDER BY revenue DESC LIMIT 20",
)


def warm_up_table(spark) -> None:
    """The replay's Criss warm-up as it was: a table of its own, each statement twice."""
    with tempfile.TemporaryDirectory() as scratch:
        path = str(Path(scratch) / "table.parquet")
        spark.range(100_000).selectExpr(*COLUMNS).write.parquet(path)
        spark.read.parquet(path).createOrReplaceTempView(TABLE)
        with criss.session(spark, home=str(Path(scratch) / "home")) as cs:
            for _ in range(2):
                for sql in STATEMENTS:
                    cs.sql(sql).collect()
                    cs.settle_harvests()
        spark.catalog.dropTempView(TABLE)


def main(data_dir: str, variant: str) -> None:
    spark = local_spark(app_name="warmup-pollution-" + variant)
    register_views(spark, data_dir)
    rng = random.Random(8)
    statements = {
        q: tpch.variant_statement(q, "orig", tpch.random_params(q, rng, 1)).sql
        for q in tpch.QUERY_IDS
    }
    if variant == "criss-first":
        warm_up_table(spark)
    for sql in statements.values():
        spark.sql(sql).collect()
    if variant == "criss-after":
        warm_up_table(spark)
    if variant == "criss-stmts":
        warm_up_criss(spark, {}, list(statements.values()))
    times = {}
    for q in (1, 10, 13, 18, 3, 5, 7, 9):
        wait_for_idle(3.0)
        started = time.perf_counter()
        spark.sql(statements[q]).collect()
        times[q] = round(time.perf_counter() - started, 3)
    print(json.dumps({"variant": variant, "times": times, "total": round(sum(times.values()), 2)}))
    spark.stop()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
