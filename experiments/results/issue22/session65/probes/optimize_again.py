"""What optimizing a plan under a query's ordering or limit again costs (session 65): for
TPC-H templates 2, 3, 10, 7 and 14 under 11 parameter sets at SF 1, plain Spark's
optimizer and physical planning of the statement, then of the plan under its top
Sort/limit operators built as a DataFrame of its own (as Criss builds the plan of a result
it caches under a limit), which Spark analyses and optimizes again. Medians in ms over the
last 8 sets. From the repository root:

    .venv/bin/python experiments/results/issue22/session65/probes/optimize_again.py
"""

import statistics
import tempfile
import time
from pathlib import Path

import criss
from criss.bridge.plans import query_execution
from criss.sparksession import local_spark
from criss.workload.tpch.data import register_views
from criss.workload.tpch.queries import statement

TOP = ("GlobalLimit", "LocalLimit", "Sort")


def main() -> None:
    spark = local_spark(app_name="optimize-again", fixed_heap=True)
    register_views(spark, Path("data/tpch/sf1"))
    bridge = criss.session(spark, home=tempfile.mkdtemp(prefix="optimize-again-")).bridge
    for qid in (2, 3, 10, 7, 14):
        times: dict[str, list[float]] = {"optimize": [], "physical": [], "again": [], "its": []}
        for seed in range(1, 12):
            execution = query_execution(spark.sql(statement(qid, "orig", seed, 1.0).sql))
            started = time.perf_counter()
            plan = execution.optimizedPlan()
            times["optimize"].append(time.perf_counter() - started)
            started = time.perf_counter()
            execution.executedPlan()
            times["physical"].append(time.perf_counter() - started)
            while plan.nodeName() in TOP and plan.children().size() == 1:
                plan = plan.children().apply(0)
            under = query_execution(bridge.dataframe_of(plan))
            started = time.perf_counter()
            under.optimizedPlan()
            times["again"].append(time.perf_counter() - started)
            started = time.perf_counter()
            under.executedPlan()
            times["its"].append(time.perf_counter() - started)
        ms = {k: statistics.median(v[3:]) * 1000 for k, v in times.items()}
        print(
            f"Q{qid}: optimize {ms['optimize']:.1f} ms, physical {ms['physical']:.1f}; "
            f"the plan under its top optimized again {ms['again']:.1f}, "
            f"its physical {ms['its']:.1f}"
        )
    spark.stop()


if __name__ == "__main__":
    main()
