"""What caching a measured operator under the result costs the action that caches it
(session 66): for TPC-H templates whose variant v60 shares the subtree under its last join
with the original, the original and then v60 run through Criss in a new home, v60 caching
that subtree by its measured benefit (the default), or not (``min_texec`` too high for any
operator under a result; the result is still cached on first sight). v60's action is timed
side by side in one application, both orders alternated, with plain Spark's beside. SF 1.
From the repository root:

    .venv/bin/python -m experiments.results.issue20.session66.probes.second_sight_cost
"""

import statistics
import tempfile
import time
from pathlib import Path

import criss
from criss.sparksession import local_spark
from criss.workload.tpch.data import register_views
from criss.workload.tpch.queries import statement

TEMPLATES = (5, 21, 8, 2, 20, 15, 22, 7, 10)
REPETITIONS = 3
NEVER = 1e9


def second_sight(spark, qid: int, min_texec: float | None) -> tuple[float, int, int, float]:
    """v60's seconds after the original, in a new home; operators it cached and reused, and
    the measured Texec of those under its result that it cached by their benefit."""
    options = {} if min_texec is None else {"min_texec": min_texec}
    with criss.session(spark, home=tempfile.mkdtemp(prefix="second-sight-"), **options) as cs:
        cs.sql(statement(qid, "orig", sf=1.0).sql).collect()
        cs.report()  # the original's writes and statistics are in before v60 plans
        started = time.perf_counter()
        cs.sql(statement(qid, "v60", sf=1.0).sql).collect()
        seconds = time.perf_counter() - started
        summary = cs.last_query_summary()
        texec = sum(
            o.decision.numbers["texec"]
            for o in cs.last_record.operators
            if o.decision.reason == "largest_benefit"
        )
        cs.report()
    cached, reused = (
        summary.get("operators_cached_in_action", 0),
        summary.get("operators_reused", 0),
    )
    return seconds, cached, reused, texec


def main() -> None:
    spark = local_spark(app_name="second-sight-cost", fixed_heap=True)
    register_views(spark, Path("data/tpch/sf1"))
    for qid in (6, 1):  # warm the JVM
        spark.sql(statement(qid, sf=1.0).sql).collect()
    for qid in TEMPLATES:
        times: dict[str, list[float]] = {"cached": [], "not": [], "plain": []}
        counts = {}
        for rep in range(REPETITIONS):
            order = (None, NEVER) if rep % 2 == 0 else (NEVER, None)
            for min_texec in order:
                seconds, cached, reused, texec = second_sight(spark, qid, min_texec)
                mode = "cached" if min_texec is None else "not"
                times[mode].append(seconds)
                counts[mode] = (cached, reused)
                if texec:
                    times.setdefault("texec", []).append(texec)
            started = time.perf_counter()
            spark.sql(statement(qid, "v60", sf=1.0).sql).collect()
            times["plain"].append(time.perf_counter() - started)
        med = {k: statistics.median(v) for k, v in times.items()}
        print(
            f"Q{qid} v60: plain {med['plain']:.2f} s; Criss caching under the result "
            f"{med['cached']:.2f} s (cached {counts['cached'][0]}, reused {counts['cached'][1]}), "
            f"result only {med['not']:.2f} s (cached {counts['not'][0]}, reused "
            f"{counts['not'][1]}); difference {med['cached'] - med['not']:+.2f} s; "
            f"Texec of what it cached under the result {med.get('texec', 0.0):.2f} s",
            flush=True,
        )
    spark.stop()


if __name__ == "__main__":
    main()
