"""One TPC-H template under its first N parameter values (qgen's rules, seeds 1..N), each
run in plain Spark then through Criss (its defaults, one home): rows compared, the lift
decisions and their numbers, and each path's seconds (sessions 54-55). Run from the
repository root with the data generated. Session 54 ran it with and without
``experiments/results/issue20/session54/expression-rollup.diff`` applied; session 55 on
the engine that merged it (``64e751d``):

    .venv/bin/python experiments/results/issue20/session54/probes/lift_sequence.py 1 14 6
"""

import sys
import tempfile
import time
from pathlib import Path

import criss
from criss.sparksession import local_spark
from criss.workload.tpch.data import ensure_tpch, register_views
from criss.workload.tpch.queries import statement

sys.path.insert(0, str(Path.cwd() / "tests"))
from rowcompare import assert_same_rows  # noqa: E402

KEYS = ("aggregates_lifted", "rewrites_aggregate_rollup", "lifts_not_decomposable")


def main() -> None:
    sf, template, count = float(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
    spark = local_spark("lift-sequence", conf={"spark.sql.shuffle.partitions": "8"})
    register_views(spark, ensure_tpch(sf, quiet=True))
    with criss.session(spark, home=tempfile.mkdtemp()) as cs:
        for seed in range(1, count + 1):
            sql = statement(template, seed=seed, sf=sf).sql
            started = time.perf_counter()
            plain = spark.sql(sql).collect()
            between = time.perf_counter()
            got = cs.sql(sql).collect()
            done = time.perf_counter()
            assert_same_rows(got, plain)
            summary = cs.last_query_summary()
            counts = {k: summary.get(k, 0) for k in KEYS + ("operators_reused",)}
            print(
                f"Q{template} values {seed}: plain {between - started:.2f} s, Criss "
                f"{done - between:.2f} s, {counts}"
            )
            for lift in cs.last_record.lifts:
                numbers = {
                    k: v
                    for k, v in lift.get("numbers", {}).items()
                    if k
                    in (
                        "texec",
                        "cost_ratio",
                        "cost_basis",
                        "gain",
                        "why",
                        "expected_values",
                        "lifted_rows",
                        "rows_ratio",
                        "growth_bound",
                    )
                }
                print(f"    lift decision {lift['reason']}: {numbers}")


main()
