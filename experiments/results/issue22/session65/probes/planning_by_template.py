"""Criss's planning of first sights, by phase, per TPC-H template (session 65): one
application, a warm-up of every template once in a throwaway home, then in one home each
template's orig, v60 and v30 statements under parameter seeds 1-6 (18 first sights a
template, most of them new), each planned by ``cs.sql()`` and collected. Milliseconds per
statement: ``cs.sql()`` and the recorded phases. With a fourth argument, ``cs.sql()`` is
also sampled by pyinstrument (``pip install pyinstrument``; not a dependency of Criss).
From the repository root:

    .venv/bin/python -m experiments.results.issue22.session65.probes.planning_by_template \
        SF TEMPLATES [profile]
"""

import collections
import sys
import tempfile
import time
from pathlib import Path

import criss
from criss.sparksession import local_spark
from criss.workload.tpch.data import register_views
from criss.workload.tpch.queries import statement


def main() -> None:
    sf, templates = float(sys.argv[1]), [int(q) for q in sys.argv[2].split(",")]
    profiler = None
    if len(sys.argv) > 3:
        from pyinstrument import Profiler

        profiler = Profiler(interval=0.0005)
    spark = local_spark(app_name="planning-by-template", fixed_heap=True)
    register_views(spark, Path("data/tpch") / f"sf{sys.argv[1]}")
    warm = criss.session(spark, home=tempfile.mkdtemp(prefix="planning-warm-"))
    for qid in range(1, 23):
        warm.sql(statement(qid, "orig", 99, sf).sql).collect()
    warm.close()
    cs = criss.session(spark, home=tempfile.mkdtemp(prefix="planning-"))
    for qid in templates:
        phases: collections.Counter = collections.Counter()
        planning = wall = 0.0
        count = 0
        for seed in range(1, 7):
            for variant in ("orig", "v60", "v30"):
                sql = statement(qid, variant, seed, sf).sql
                started = time.perf_counter()
                if profiler is not None:
                    profiler.start()
                df = cs.sql(sql)
                if profiler is not None:
                    profiler.stop()
                wall += time.perf_counter() - started
                df.collect()
                count += 1
                summary = cs.last_query_summary()
                planning += summary.get("planning_seconds", 0.0)
                phases.update(summary.get("phase_seconds") or {})
        parts = ", ".join(f"{p} {s / count * 1000:.1f}" for p, s in phases.most_common())
        print(
            f"Q{qid}: {count} statements, cs.sql {wall / count * 1000:.1f} ms, "
            f"planning {planning / count * 1000:.1f} ms: {parts}",
            flush=True,
        )
    if profiler is not None:
        print(profiler.output_text(unicode=False, color=False))
    cs.close()
    spark.stop()


if __name__ == "__main__":
    main()
