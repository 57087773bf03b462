"""Where the capture phase of a TPC-DS first sight goes, finer than session 45's probe:
the parts of ``cs.sql()`` timed by wrapping them (no profiler), every query once in one
application and one new home, each run plain first (untimed).

    .venv/bin/python PROBE [--data-dir data/tpcds/sf1] [--queries q14a,q64]
"""

import argparse
import collections
import functools
import json
import tempfile
import time
import types
from pathlib import Path

import criss
import criss.bridge.capture as capture
import criss.bridge.catalyst as catalyst
import criss.engine as engine
import criss.planner.capture as planner_capture
from criss.sparksession import local_spark
from criss.workload.tpcds.data import register_views
from criss.workload.tpcds.queries import query, query_ids

SECONDS: collections.Counter = collections.Counter()


def timed(owner, name: str, label: str) -> None:
    wrapped = getattr(owner, name)

    @functools.wraps(wrapped)
    def run(*args, **kwargs):
        started = time.perf_counter()
        try:
            return wrapped(*args, **kwargs)
        finally:
            SECONDS[label] += time.perf_counter() - started

    setattr(owner, name, run)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data-dir", default="data/tpcds/sf1")
    parser.add_argument("--queries", default="")
    args = parser.parse_args()
    shim = types.SimpleNamespace(**{k: getattr(json, k) for k in ("dumps", "loads")})
    capture.json = shim
    timed(shim, "loads", "json.loads")
    timed(capture, "tree_from_catalyst_json", "tree_from_catalyst_json")
    timed(capture, "restore_lossy_fields", "restore_lossy_fields")
    timed(capture, "mark_settings", "mark_settings")
    timed(capture.RememberedTrees, "tree", "RememberedTrees.tree (toJSON + the above)")
    timed(catalyst.CatalystBridge, "plan_tree", "plan_tree (+ conf reads)")
    timed(capture.CapturedPlan, "__init__", "CapturedPlan (all)")
    timed(capture.CapturedPlan, "_annotate", "annotate")
    timed(capture.RelationIdentities, "identity", "relation identity")
    timed(catalyst, "optimized_plan", "Spark's optimizer")
    timed(catalyst.CatalystBridge, "capture", "bridge.capture (all)")
    timed(engine, "canonicalize", "canonicalize")
    timed(engine, "fingerprint_tree", "fingerprint")
    timed(engine, "with_read_bytes", "with_read_bytes")
    timed(engine.CrissSession, "canonical_tree", "canonical_tree (all)")
    timed(planner_capture, "stale_relations", "stale_relations")
    names = args.queries.split(",") if args.queries else [q for q in query_ids() if q != "q90"]
    spark = local_spark(app_name="capture-parts")
    register_views(spark, Path(args.data_dir))
    phases: collections.Counter = collections.Counter()
    planning = analysis = 0.0
    with criss.session(spark, home=tempfile.mkdtemp(prefix="capture-parts-")) as cs:
        for name in names:
            text = query(name)
            spark.sql(text).collect()
            started = time.perf_counter()
            spark.sql(text)
            analysis += time.perf_counter() - started
            started = time.perf_counter()
            df = cs.sql(text)
            planning += time.perf_counter() - started
            record = cs.record(df)
            for phase, seconds in (getattr(record, "phase_seconds", None) or {}).items():
                phases[phase] += seconds
            df.collect()
            cs.settle_harvests()
    n = len(names)
    print(
        f"{n} queries: planning {planning:.2f} s ({1000 * planning / n:.1f} ms each), "
        f"parse and analysis {analysis:.2f} s"
    )
    print("phases, ms per query:", {k: round(1000 * v / n, 1) for k, v in phases.most_common()})
    print("parts, ms per query:")
    for label, seconds in SECONDS.most_common():
        print(f"  {label:<45}{1000 * seconds / n:8.1f}")
    spark.stop()


if __name__ == "__main__":
    main()
