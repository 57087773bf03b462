"""Warm first sights (session 65): after a warm-up on another seed's statements (through
Criss in a throwaway home, and plain Spark), each first sight of a seeded stream runs
plain Spark first, then through Criss in one home. Milliseconds per first sight: plain
Spark's whole run, ``cs.sql()``'s wall time and the Python process's CPU time in it,
Criss's action and its recorded planning by phase. From the repository root:

    .venv/bin/python -m experiments.results.issue22.session65.probes.small_first_sights_warm \
        [STREAM SF QUERIES SEED]
"""

import collections
import sys
import tempfile
import time
from pathlib import Path

import criss
from criss.sparksession import local_spark
from criss.workload.streams import make_stream
from criss.workload.tpch.data import register_views


def first_sights(kind: str, n: int, seed: int, sf: float):
    seen: set[str] = set()
    for q in make_stream(kind, n, seed, sf):
        if q.sql not in seen:
            seen.add(q.sql)
            yield q


def main() -> None:
    kind, sf, n, seed = (sys.argv[1:] + ["drift-hot", "0.05", "40", "202"][len(sys.argv) - 1 :])[:4]
    spark = local_spark(app_name="small-first-sights-warm", fixed_heap=True)
    register_views(spark, Path("data/tpch") / f"sf{sf}")
    warm = criss.session(spark, home=tempfile.mkdtemp(prefix="warm-"))
    for q in first_sights(kind, int(n), int(seed) + 1000, float(sf)):
        warm.sql(q.sql).collect()
        spark.sql(q.sql).collect()
    warm.close()
    cs = criss.session(spark, home=tempfile.mkdtemp(prefix="first-sights-"))
    totals: collections.Counter = collections.Counter()
    phases: collections.Counter = collections.Counter()
    count = 0
    for q in first_sights(kind, int(n), int(seed), float(sf)):
        count += 1
        started = time.perf_counter()
        spark.sql(q.sql).collect()
        totals["plain total"] += time.perf_counter() - started
        started, cpu = time.perf_counter(), time.process_time()
        df = cs.sql(q.sql)
        totals["cs.sql wall"] += time.perf_counter() - started
        totals["cs.sql python cpu"] += time.process_time() - cpu
        started = time.perf_counter()
        df.collect()
        totals["criss action"] += time.perf_counter() - started
        summary = cs.last_query_summary()
        totals["planning recorded"] += summary.get("planning_seconds", 0.0)
        phases.update(summary.get("phase_seconds") or {})
    print(f"# {kind} SF {sf} {n} queries seed {seed}: {count} first sights, ms each (warm)")
    for name, seconds in totals.items():
        print(f"{name:24s} {seconds / count * 1000:7.1f}")
    for name, seconds in phases.most_common():
        print(f"  phase {name:18s} {seconds / count * 1000:7.1f}")
    cs.close()
    spark.stop()


if __name__ == "__main__":
    main()
