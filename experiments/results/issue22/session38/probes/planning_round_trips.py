"""Where ``cs.sql`` spends its time on first-seen statements, and how many JVM round trips
it makes (each waits for the JVM): cProfile over every template under new values, after
one untimed round, in one home.

    python -m experiments.results.issue22.session38.probes.planning_round_trips --rounds 2
"""

import argparse
import cProfile
import io
import pstats
import re
import tempfile
import time
from pathlib import Path

import criss
from criss.sparksession import local_spark
from criss.workload.tpch.data import register_views
from criss.workload.tpch.queries import QUERY_IDS, statement

#: The gateway client's call of a JVM method (one round trip each, besides attribute look-ups).
JVM_CALL = "java_gateway.py:1353(__call__)"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--sf", default="1")
    args = parser.parse_args()
    spark = local_spark(app_name="planning-round-trips")
    register_views(spark, Path(f"data/tpch/sf{args.sf}"))
    cs = criss.session(spark, home=tempfile.mkdtemp(prefix="criss-trips-"))
    seed = 100
    for qid in QUERY_IDS:  # untimed: the JVM's and Python's first calls
        seed += 1
        cs.sql(statement(qid, seed=seed).sql).collect()
        cs.settle_harvests()
    profile, seconds, planning, parse = cProfile.Profile(), 0.0, 0.0, 0.0
    statements = 0
    for _ in range(args.rounds):
        for qid in QUERY_IDS:
            seed += 1
            sql = statement(qid, seed=seed).sql
            started = time.perf_counter()
            spark.sql(sql)  # what plain Spark's own cs.sql-equivalent step costs
            parse += time.perf_counter() - started
            started = time.perf_counter()
            profile.enable()
            df = cs.sql(sql)
            profile.disable()
            seconds += time.perf_counter() - started
            planning += cs.record(df).planning_seconds
            statements += 1
            df.collect()
            cs.settle_harvests()
    stats = pstats.Stats(profile)
    calls = sum(v[1] for k, v in stats.stats.items() if f"{k[0]}:{k[1]}({k[2]})".endswith(JVM_CALL))
    print(
        f"# {statements} first-seen statements (profiled): cs.sql {seconds / statements * 1e3:.1f}"
        f" ms each, Criss's planning {planning / statements * 1e3:.1f} ms, spark.sql alone"
        f" {parse / statements * 1e3:.1f} ms (unprofiled); {calls / statements:.0f} JVM calls each"
    )
    out = io.StringIO()
    pstats.Stats(profile, stream=out).sort_stats("cumulative").print_stats(45)
    callers = io.StringIO()
    pstats.Stats(profile, stream=callers).sort_stats("ncalls").print_callers(re.escape(JVM_CALL))
    print(out.getvalue())
    print(callers.getvalue())


if __name__ == "__main__":
    main()
