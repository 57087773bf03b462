"""First sights side by side in one application: plain Spark, Criss caching first-seen
results (``eager_results``) and Criss not caching them, each statement new to its path
(fresh substitution parameters), the paths in turn; medians per template.

    python fs_micro.py 19,14,6,12,4,13 6     # templates, rounds (run from a checkout
                                             # with data/tpch/sf1)
"""

import statistics
import sys
import tempfile
import time
from pathlib import Path

import criss
from criss.sparksession import local_spark
from criss.workload.replay import run_order
from criss.workload.tpch.data import register_views
from criss.workload.tpch.queries import statement


def main(templates: list[int], rounds: int) -> None:
    spark = local_spark(app_name="fs-micro")
    spark.sparkContext.setLogLevel("ERROR")
    register_views(spark, Path("data/tpch/sf1"))
    eager = criss.session(spark, home=tempfile.mkdtemp(prefix="m-e-"), lift_aggregates=False)
    lazy = criss.session(
        spark,
        home=tempfile.mkdtemp(prefix="m-n-"),
        lift_aggregates=False,
        eager_results=False,
    )

    def plain(sql: str) -> float:
        started = time.perf_counter()
        spark.sql(sql).collect()
        return time.perf_counter() - started

    def through(cs):
        def run(sql: str) -> float:
            started = time.perf_counter()
            cs.sql(sql).collect()
            seconds = time.perf_counter() - started
            cs.settle_harvests()
            return seconds

        return run

    paths = {"plain": plain, "eager": through(eager), "noeager": through(lazy)}
    times: dict[str, dict[int, list[float]]] = {p: {} for p in paths}
    seed, turn = 5000, 0
    for template in templates:  # compile each template's code before any path is timed
        for _ in range(2):
            spark.sql(statement(template, seed=seed).sql).collect()
            seed += 1
    for _ in range(rounds):
        for template in templates:
            for path in run_order(tuple(paths), turn):
                seed += 1
                seconds = paths[path](statement(template, seed=seed).sql)
                times[path].setdefault(template, []).append(seconds)
            turn += 1
    for template in templates:
        base = statistics.median(times["plain"][template])
        cells = []
        for path in paths:
            median = statistics.median(times[path][template])
            cells.append(f"{path} {median:.3f} ({median - base:+.3f})")
        print(f"Q{template}", " ".join(cells))


if __name__ == "__main__":
    main([int(x) for x in sys.argv[1].split(",")], int(sys.argv[2]))
