"""Where a first sight's time goes at small scale (session 64): each statement of a seeded
stream (default drift-hot, SF 0.05, seed 202) run in one application, plain Spark first
(``spark.sql``, Catalyst's optimizer and the action timed apart), then through Criss in one
home, settled after its action. Repeats are left out. Milliseconds per first sight: what
plain Spark spends before its action, what ``cs.sql()`` spends, Criss's phases, and the JVM
round trips ``cs.sql()`` makes by site (``criss.bridge.roundtrips``). No cProfile: it
inflates code that calls the JVM. From the repository root:

    .venv/bin/python -m experiments.results.issue22.session64.probes.small_first_sights \
        [STREAM SF QUERIES SEED]
"""

import collections
import sys
import tempfile
import time
from pathlib import Path

import criss
from criss.bridge.plans import optimized_plan
from criss.bridge.roundtrips import RoundTripCounter
from criss.sparksession import local_spark
from criss.workload.streams import make_stream
from criss.workload.tpch.data import register_views


def main() -> None:
    kind, sf, n, seed = (sys.argv[1:] + ["drift-hot", "0.05", "40", "202"][len(sys.argv) - 1 :])[:4]
    stream = make_stream(kind, int(n), int(seed), float(sf))
    spark = local_spark(app_name="small-first-sights", fixed_heap=True)
    register_views(spark, Path("data/tpch") / f"sf{sf}")
    cs = criss.session(spark, home=tempfile.mkdtemp(prefix="small-first-sights-"))
    counter = RoundTripCounter()
    totals: collections.Counter = collections.Counter()
    phases: collections.Counter = collections.Counter()
    seen: set[str] = set()
    firsts = 0
    try:
        for q in stream:
            if q.sql in seen:
                continue
            seen.add(q.sql)
            firsts += 1
            started = time.perf_counter()
            plain = spark.sql(q.sql)
            totals["plain spark.sql"] += time.perf_counter() - started
            started = time.perf_counter()
            optimized_plan(plain)
            totals["plain optimizer"] += time.perf_counter() - started
            started = time.perf_counter()
            plain.collect()
            totals["plain action after optimizer"] += time.perf_counter() - started
            started = time.perf_counter()
            counter.active = True
            df = cs.sql(q.sql)
            counter.active = False
            totals["criss cs.sql"] += time.perf_counter() - started
            started = time.perf_counter()
            df.collect()
            totals["criss action"] += time.perf_counter() - started
            summary = cs.last_query_summary()
            totals["criss planning (recorded)"] += summary.get("planning_seconds", 0.0)
            phases.update(summary.get("phase_seconds") or {})
    finally:
        counter.close()
    print(f"# {kind} SF {sf} {n} queries seed {seed}: {firsts} first sights, ms per first sight")
    for name, seconds in totals.items():
        print(f"{name:34s} {seconds / firsts * 1000:7.1f}")
    for name, seconds in phases.most_common():
        print(f"  phase {name:26s} {seconds / firsts * 1000:7.1f}")
    calls = sum(counter.calls.values())
    jvm = sum(counter.seconds.values())
    print(f"round trips per first sight {calls / firsts:.1f}, {jvm / firsts * 1000:.1f} ms")
    for site, count in counter.calls.most_common(20):
        print(f"  {site:50s} {count / firsts:6.1f} {counter.seconds[site] / firsts * 1000:6.2f} ms")
    cs.close()
    spark.stop()


if __name__ == "__main__":
    main()
