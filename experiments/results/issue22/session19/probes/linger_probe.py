"""Is the machine busy after a query (and Criss's settle) returned? Per statement: run it
(plain, or through Criss and settled), then sample the share of the machine's CPU time
that was busy, every 100 ms for 2 s.

    python linger_probe.py plain|criss   (from the repository root, SF 1 data)

``linger-*.out`` ran on engine f6f78da, one after the other, nothing else running.
"""

import sys
import tempfile
import time

import criss
from criss.sparksession import local_spark
from criss.workload.benchmarks import parquet_data
from criss.workload.tpch.queries import statement


def cpu_times() -> tuple[int, int]:
    with open("/proc/stat") as stat:
        fields = [int(x) for x in stat.readline().split()[1:]]
    return sum(fields), fields[3] + fields[4]


def main() -> None:
    mode = sys.argv[1]
    spark = local_spark("probe-linger-" + mode)
    parquet_data("tpch").register_views(spark, "data/tpch/sf1")
    cs = criss.session(spark, home=tempfile.mkdtemp()) if mode != "plain" else None
    for q in (3, 10, 7, 18, 5, 9, 1, 17):
        sql = statement(q, "orig", seed=900 + q).sql
        started = time.perf_counter()
        if cs is None:
            spark.sql(sql).collect()
        else:
            cs.sql(sql).collect()
            cs.settle_harvests()
        took = time.perf_counter() - started
        busy, before = [], cpu_times()
        for _ in range(20):
            time.sleep(0.1)
            after = cpu_times()
            total, idle = after[0] - before[0], after[1] - before[1]
            busy.append(round(1 - idle / total, 2) if total else 0)
            before = after
        print(mode, f"Q{q}", round(took, 2), busy, flush=True)
    spark.stop()


if __name__ == "__main__":
    main()
