"""Where ``cs.sql()`` spends TPC-H first sights (session 62), over the first N positions of a
drift stream (fresh parameters: nearly all first sights), each statement run once in plain
Spark first, then once through Criss in one home. From the repository root:

    .venv/bin/python planning_profile.py SF N          # cProfile of cs.sql()
    .venv/bin/python planning_profile.py SF N py4j     # py4j round trips by Criss caller

The first form also times plain Spark's optimizer apart and sums Criss's planning phases;
the second counts each py4j call (``JavaMember.__call__``) by the innermost Criss frame that
made it, with the seconds spent in it.
"""

import collections
import cProfile
import pstats
import sys
import tempfile
import time

import py4j.java_gateway as jg

import criss
from criss.bridge.plans import optimized_plan
from criss.sparksession import local_spark
from criss.workload.streams import make_stream
from criss.workload.tpch.data import register_views

OWN = ("/criss/", "/qtree/", "/policies/", "/storage/")


class Py4jCalls:
    """Counts py4j calls made while ``counting``, by the innermost Criss frame."""

    def __init__(self) -> None:
        self.counting = False
        self.calls: collections.Counter = collections.Counter()
        self.seconds: collections.Counter = collections.Counter()
        original = jg.JavaMember.__call__
        counter = self

        def counted(member, *args):
            if not counter.counting:
                return original(member, *args)
            frame, where = sys._getframe(1), "?"
            while frame is not None:
                name = frame.f_code.co_filename
                if any(part in name for part in OWN):
                    where = f"{name.rsplit('/', 2)[-2]}/{name.rsplit('/', 1)[-1]}:"
                    where += frame.f_code.co_name
                    break
                frame = frame.f_back
            started = time.perf_counter()
            try:
                return original(member, *args)
            finally:
                counter.calls[where] += 1
                counter.seconds[where] += time.perf_counter() - started

        jg.JavaMember.__call__ = counted

    def enable(self) -> None:
        self.counting = True

    def disable(self) -> None:
        self.counting = False

    def print(self, n: int, total: float) -> None:
        made = sum(self.calls.values())
        print(
            f"{n} statements, cs.sql {total:.2f} s, {made} py4j calls "
            f"({made / n:.0f} a statement), {sum(self.seconds.values()):.2f} s in them"
        )
        for where, c in self.calls.most_common(40):
            print(f"{c:6d} {c / n:7.1f}/stmt {self.seconds[where]:7.3f} s  {where}")


sf, n = float(sys.argv[1]), int(sys.argv[2])
py4j_mode = sys.argv[3:] == ["py4j"]
spark = local_spark("pp", master="local[2]", conf={"spark.sql.shuffle.partitions": "8"})
register_views(spark, f"data/tpch/sf{sys.argv[1]}")
cs = criss.session(spark, home=tempfile.mkdtemp())
watch = Py4jCalls() if py4j_mode else cProfile.Profile()
tot_sql = tot_plan = tot_plain_opt = 0.0
phases: dict[str, float] = {}
for q in make_stream("drift", n, seed=3, sf=sf):
    d = spark.sql(q.sql)
    if not py4j_mode:
        t = time.perf_counter()
        optimized_plan(d)
        tot_plain_opt += time.perf_counter() - t
    d.collect()
    t = time.perf_counter()
    watch.enable()
    df = cs.sql(q.sql)
    watch.disable()
    tot_sql += time.perf_counter() - t
    df.collect()
    s = cs.last_query_summary()
    tot_plan += s.get("planning_seconds", 0)
    for k, v in (s.get("phase_seconds") or {}).items():
        phases[k] = phases.get(k, 0) + v
if py4j_mode:
    watch.print(n, tot_sql)
    sys.exit()
print(
    f"{n} statements: cs.sql total {tot_sql:.2f} s, planning {tot_plan:.2f} s, "
    f"plain optimizer {tot_plain_opt:.2f} s"
)
print("phases", {k: round(v, 3) for k, v in sorted(phases.items(), key=lambda kv: -kv[1])})
pstats.Stats(watch).sort_stats("cumulative").print_stats(60)
