"""What a cached copy of a template's constant selection would give a drifting template
that no reuse kind serves today (issue 20: drift seed 3's Q19 at 10 positions, Q12 at 2).

TPC-H Q19's lineitem filter holds conditions every statement of the template shares
(``l_shipmode IN ('AIR', 'AIR REG') AND l_shipinstruct = 'DELIVER IN PERSON'``) beside
the quantity ranges its parameters choose; Q12's holds ``l_commitdate < l_receiptdate AND
l_shipdate < l_commitdate`` beside its ship modes and year. A copy of lineitem under the
shared conditions alone, with the columns the template reads, would serve every later
statement of the template through filter subsumption (the varying conditions as the
residual). This probe writes such a copy as Parquet to /dev/shm (the memory tier's
medium), points each statement at it by name, and times plain Spark against it on the
same fresh statements in one application, the order alternating by round; rows are
compared every round. Nothing of Criss runs: it prices a reuse kind not built.

From the repository root (this file's path as PROBE, ROUNDS 4 unless given):

    .venv/bin/python PROBE [ROUNDS]
"""

import re
import shutil
import statistics
import sys
import time
from pathlib import Path

from criss.sparksession import local_spark
from criss.workload.tpch.data import register_views
from criss.workload.tpch.queries import statement

#: Template → (the conditions its statements share, the lineitem columns it reads).
CASES = {
    19: (
        "l_shipmode in ('AIR', 'AIR REG') and l_shipinstruct = 'DELIVER IN PERSON'",
        "l_partkey, l_quantity, l_extendedprice, l_discount, l_shipmode, l_shipinstruct",
    ),
    12: (
        "l_commitdate < l_receiptdate and l_shipdate < l_commitdate",
        "l_orderkey, l_shipmode, l_commitdate, l_receiptdate, l_shipdate",
    ),
}


def _rounded(seconds: list[float]) -> list[float]:
    return [round(x, 2) for x in seconds]


def main(rounds: int) -> None:
    spark = local_spark(app_name="constant-selection-copy")
    register_views(spark, "data/tpch/sf1")
    for template, (shared, columns) in CASES.items():
        copy = Path(f"/dev/shm/constant-selection-q{template}")
        shutil.rmtree(copy, ignore_errors=True)
        started = time.perf_counter()
        spark.sql(f"select {columns} from lineitem where {shared}").write.parquet(str(copy))
        built = time.perf_counter() - started
        spark.read.parquet(str(copy)).createOrReplaceTempView("lineitem_copy")
        rows = spark.read.parquet(str(copy)).count()
        size = sum(f.stat().st_size for f in copy.glob("*.parquet"))
        times: dict[str, list[float]] = {"plain": [], "copy": []}
        for turn in range(rounds):
            sql = statement(template, seed=700 + turn).sql
            over_copy = re.sub(r"\blineitem\b", "lineitem_copy", sql)
            runs = [("plain", sql), ("copy", over_copy)]
            for label, text in runs if turn % 2 else runs[::-1]:
                started = time.perf_counter()
                spark.sql(text).collect()
                times[label].append(time.perf_counter() - started)
            same = sorted(map(tuple, spark.sql(sql).collect())) == sorted(
                map(tuple, spark.sql(over_copy).collect())
            )
            assert same, f"Q{template} round {turn}: rows differ over the copy"
        plain, over = (statistics.median(times[k]) for k in ("plain", "copy"))
        print(
            f"Q{template}: copy of {rows:,} rows, {size / 1e6:.1f} MB, built in {built:.2f} s; "
            f"plain median {plain:.3f} s, over the copy {over:.3f} s ({over / plain:.2f}x); "
            f"plain {_rounded(times['plain'])}, copy {_rounded(times['copy'])}",
            flush=True,
        )
        shutil.rmtree(copy, ignore_errors=True)
    spark.stop()


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 4)
