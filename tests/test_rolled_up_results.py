"""A query's result that the cache serves by rolling up a finer cached result is cached as
itself where its repeats pay (criss.policies.lifting.decide_rolled_up_result): its next
repeat reads it exactly instead of rolling the finer result up again. Real Spark, TPC-H at
SF 0.01; rows compared with plain Spark's."""

from __future__ import annotations

import datetime

import pytest
from rowcompare import assert_same_rows

import criss
from criss.qtree.subsume import AGGREGATE_ROLLUP

pytestmark = pytest.mark.spark

#: Q1's measures by ship date: every Q1 DELTA is a roll-up of them.
BY_DAY = (
    "select l_returnflag, l_linestatus, l_shipdate, sum(l_quantity) sum_qty, "
    "sum(l_extendedprice * (1 - l_discount)) sum_disc_price, "
    "count(l_discount) n_disc, sum(l_discount) sum_disc, count(*) count_order "
    "from lineitem where l_shipdate <= date '1998-11-01' group by 1, 2, 3"
)
Q1 = (
    "select l_returnflag, l_linestatus, sum(l_quantity) sum_qty, "
    "sum(l_extendedprice * (1 - l_discount)) sum_disc_price, avg(l_discount) avg_disc, "
    "count(*) count_order from lineitem "
    "where l_shipdate <= date '1998-12-01' - interval '{delta}' day group by 1, 2"
)


def _run(cs, spark, sql):
    planned = cs.sql(sql)
    assert_same_rows(planned.collect(), spark.sql(sql).collect())
    record = cs.last_record
    rolled_up = [lift for lift in record.lifts if lift.get("kind") == "result"]
    return planned, cs.last_query_summary(), record, rolled_up


def _rolled_up(summary):
    return summary.get(f"rewrites_{AGGREGATE_ROLLUP.replace('-', '_')}", 0)


def test_a_repeated_rolled_up_result_is_read_exactly_once_cached(tpch, tmp_path):
    """Q1 under one DELTA, over its measures by ship date: served by a roll-up and weighed
    for caching as itself, cached at the latest once seen again, then read exactly."""
    cs = criss.session(tpch, home=str(tmp_path / "home"), min_texec=0)
    _run(cs, tpch, BY_DAY)
    sql = Q1.format(delta=90)
    reasons = []
    for _ in range(3):
        planned, summary, record, rolled_up = _run(cs, tpch, sql)
        (reused,) = [o for o in record.operators if o.reused]
        if reused.rule == "exact":
            break
        assert _rolled_up(summary) == 1, cs.explain(planned)
        (decision,) = rolled_up
        assert decision["fingerprint"] == reused.fingerprint
        assert decision["numbers"]["ref"] == len(reasons) + 1, decision
        reasons.append(decision["reason"])
        said = cs.explain(planned)
        assert "caching of the rolled-up result" in said and "repeats expected" in said, said
    # cached once seen again, if not on first sight; never rolled up after that
    assert reasons[-1] == "rolled_up_result_cached" and len(reasons) <= 2, reasons
    assert set(reasons[:-1]) <= {"rolled_up_result_not_cached"}, reasons
    # the exact read: the result's own entry, no roll-up, nothing weighed
    assert reused.rule == "exact" and reused.entry == reused.fingerprint, cs.explain(planned)
    assert _rolled_up(summary) == 0 and rolled_up == []
    # another DELTA is still a roll-up of the measures by ship date
    _, summary, _, _ = _run(cs, tpch, Q1.format(delta=60))
    assert _rolled_up(summary) == 1
    cs.close()


def test_without_results_cached_on_first_sight_a_rolled_up_result_is_not_weighed(tpch, tmp_path):
    """``eager_results=False``: results wait for the benefit model's statistics, and one a
    roll-up serves is never weighed for caching as itself; every repeat rolls up."""
    cs = criss.session(tpch, home=str(tmp_path / "home"), min_texec=0, eager_results=False)
    for _ in range(3):
        _run(cs, tpch, BY_DAY)  # cached once measured (seen twice)
    for _ in range(3):
        planned, summary, _, rolled_up = _run(cs, tpch, Q1.format(delta=90))
        assert _rolled_up(summary) == 1 and rolled_up == [], cs.explain(planned)
    cs.close()


def test_a_result_cached_as_itself_is_not_served_once_its_files_change(spark, tmp_path):
    """A result cached as itself holds rows of the files it was computed from: once they
    are rewritten, the next run gets the new rows (plain Spark's), from neither it nor the
    finer result it was rolled up from."""
    path = str(tmp_path / "t")

    def write(factor: int) -> None:
        rows = [
            (i % 3, datetime.date(2020, 1, 1) + datetime.timedelta(days=i % 20), i * factor)
            for i in range(60)
        ]
        frame = spark.createDataFrame(rows, "g int, d date, x int").coalesce(1)
        frame.write.mode("overwrite").parquet(path)
        spark.read.parquet(path).createOrReplaceTempView("rolled_t")

    write(1)
    cs = criss.session(spark, home=str(tmp_path / "home"), min_texec=0)
    _run(cs, spark, "select g, d, sum(x) sx, count(*) c from rolled_t group by g, d")
    sql = "select g, sum(x) sx, count(*) c from rolled_t where d <= date '2020-01-10' group by g"
    rules = []
    for _ in range(3):
        planned, _, record, _ = _run(cs, spark, sql)
        (reused,) = [o for o in record.operators if o.reused]
        rules.append(reused.rule)
    assert rules[0] == AGGREGATE_ROLLUP and rules[-1] == "exact", (rules, cs.explain(planned))
    write(2)
    planned, _, record, _ = _run(cs, spark, sql)  # rows compared with plain Spark's
    assert not [o for o in record.operators if o.reused], cs.explain(planned)
    cs.close()
