"""Classes Spark's code generation compiles for Criss's plans at templates' later sights,
with ``share_stage_code`` on (the default) or off: one application, one home; every TPC-H
template three times under new values, each statement run twice by plain Spark first (its
code compiled), then through Criss. Counts, not times (the machine was three times slower
than usual that day). Mean Janino compile time from Spark's ``CodegenMetrics``.

    .venv/bin/python experiments/results/issue22/session59/probes/second_sight_classes.py \
        0.05 [share_stage_code=false]
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import criss
from criss.bridge import compiled_classes, mean_compile_ms
from criss.sparksession import local_spark
from criss.workload.tpch.data import register_views
from criss.workload.tpch.queries import statement

WORK = (
    "operators_reused",
    "aggregates_lifted",
    "selections_widened",
    "operators_cached_in_action",
)


def main() -> None:
    spark = local_spark(app_name="second-sight-classes")
    register_views(spark, Path("data/tpch/sf" + sys.argv[1]))
    options = dict(a.split("=", 1) for a in sys.argv[2:])
    later = 0
    with criss.session(spark, home=tempfile.mkdtemp(prefix="classes-"), **options) as cs:
        for sight in range(3):
            for template in range(1, 23):
                sql = statement(template, seed=5000 + 100 * sight + template).sql
                spark.sql(sql).collect()
                spark.sql(sql).collect()
                before = compiled_classes(spark)
                cs.sql(sql).collect()
                compiled = compiled_classes(spark) - before
                work = {k: v for k, v in cs.last_record.counters.items() if v and k in WORK}
                cs.settle_harvests()
                print(f"sight {sight + 1} Q{template}: {compiled} classes, {work}", flush=True)
                later += compiled if sight else 0
        compile_ms = mean_compile_ms(spark)
        print(
            f"later sights' actions: {later} classes; the whole application: "
            f"{compiled_classes(spark)} classes, {compile_ms:.1f} ms each on average; "
            f"options {options}"
        )


if __name__ == "__main__":
    main()
