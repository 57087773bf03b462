"""Where the slowest range-join tests spend their time: planning, Criss's action, plain
Spark's action, and comparing the rows in Python. Run from the repository root."""

import dataclasses
import sys
import tempfile
import time

sys.path.insert(0, ".")

import criss  # noqa: E402
from criss.sparksession import local_spark  # noqa: E402
from tests.rowcompare import assert_same_rows  # noqa: E402
from tests.test_range_join import (  # noqa: E402
    INTERVALS,
    NO_CACHING,
    ONE_SIDED,
    POINTS,
    RANGE_INDEX_JOINS,
    RELAXED,
)

CONF = {"spark.sql.shuffle.partitions": "4", "spark.criss.min.texec": "0"}
CASES = {
    "between": RANGE_INDEX_JOINS["between"],
    "timestamp": RANGE_INDEX_JOINS["timestamp"],
    "point-above": ONE_SIDED["point-above"],
}

spark = local_spark("range-join-probe", master="local[2]", conf=CONF)
spark.sql(POINTS).createOrReplaceTempView("rj_points")
spark.sql(INTERVALS).createOrReplaceTempView("rj_intervals")
cs = criss.session(spark, home=tempfile.mkdtemp(), **RELAXED, **NO_CACHING)
cs.options = dataclasses.replace(cs.options, range_join_method="index")
for name, query in CASES.items():
    started = time.perf_counter()
    got = cs.sql(query)
    planned = time.perf_counter()
    rows = got.collect()
    through_criss = time.perf_counter()
    expected = spark.sql(query).collect()
    plain = time.perf_counter()
    assert_same_rows(rows, expected)
    compared = time.perf_counter()
    print(
        name,
        len(rows),
        f"plan {planned - started:.2f} criss {through_criss - planned:.2f}",
        f"plain {plain - through_criss:.2f} compare {compared - plain:.2f}",
        flush=True,
    )
