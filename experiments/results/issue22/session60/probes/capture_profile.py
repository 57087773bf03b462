"""Where a first sight's planning goes: each TPC-H template's fresh statements through
``cs.sql()`` (profiled), their actions, then the same statements in plain Spark, in one
application with a home that saw one round of other statements first; Spark's own
planning phases of both DataFrames beside Criss's.

    python experiments/results/issue22/session60/probes/capture_profile.py [SF]
"""

from __future__ import annotations

import cProfile
import io
import pstats
import sys
import tempfile
import time
from pathlib import Path

import criss
from criss.bridge.plans import planning_phases
from criss.sparksession import local_spark
from criss.workload.tpch.data import register_views
from criss.workload.tpch.queries import QUERY_IDS, statement

ROUNDS = 2


def main() -> None:
    sf = sys.argv[1] if len(sys.argv) > 1 else "1"
    spark = local_spark(app_name="capture-profile")
    register_views(spark, Path(f"data/tpch/sf{sf}"))
    cs = criss.session(spark, home=tempfile.mkdtemp(prefix="capture-profile-"))
    for template in QUERY_IDS:  # the home's first round, planned and run
        cs.sql(statement(template, seed=1000 + template).sql).collect()
    cs.settle_harvests()
    profile = cProfile.Profile()
    phases: dict[str, float] = {}
    total = 0.0
    for round_ in range(ROUNDS):
        for template in QUERY_IDS:
            sql = statement(template, seed=2000 + 100 * round_ + template).sql
            profile.enable()
            started = time.perf_counter()
            df = cs.sql(sql)
            total += time.perf_counter() - started
            profile.disable()
            for phase, seconds in cs.record(df).phase_seconds.items():
                phases[phase] = phases.get(phase, 0.0) + seconds
            df.collect()
            cs.settle_harvests()
            plain = spark.sql(sql)
            plain.collect()
            for name, frame in (("criss", df), ("plain", plain)):
                for phase, seconds in planning_phases(frame).items():
                    phases[f"{name}.{phase}"] = phases.get(f"{name}.{phase}", 0.0) + seconds
    count = ROUNDS * len(QUERY_IDS)
    means = {phase: round(seconds / count * 1000, 1) for phase, seconds in phases.items()}
    print(f"cs.sql mean {total / count * 1000:.1f} ms; phases mean ms: {means}")
    shown = io.StringIO()
    pstats.Stats(profile, stream=shown).sort_stats("cumulative").print_stats(60)
    print(shown.getvalue())
    cs.close()


if __name__ == "__main__":
    main()
