"""Statistics from every execution: the user's own actions (``collect``, ``count``,
``show``) report what each operator did through Spark's execution listener, with no job
of Criss's own, and repeats of small-data queries are then served from the cache."""

from __future__ import annotations

import time

import pytest
from rowcompare import assert_same_rows
from sparkjobs import jobs_in

import criss
from criss.bridge.listener import _shared_listener
from criss.qtree.rewrite import result_node
from criss.qtree.tree import EXECUTED_PLAN
from criss.workload.tpch.queries import statement

GROUPED = """
    select o_orderpriority, count(*) as n, sum(o_totalprice) as total
    from orders where o_orderdate >= date'1995-01-01'
    group by o_orderpriority
"""


def _result_of(cs, spark, sql):
    tree = cs.canonical_tree(cs.bridge.capture(spark.sql(sql)))
    return result_node(tree)


def test_an_operator_run_only_by_the_users_collect_gets_statistics(tpch, tmp_path):
    cs = criss.session(tpch, home=str(tmp_path / "h"), eager_results=False, min_ref=99)
    try:
        planned = {}
        jobs = jobs_in(tpch, "criss-plans", lambda: planned.update(df=cs.sql(GROUPED)))
        assert jobs == 0  # nothing cached, nothing measured by Criss itself
        rows = planned["df"].collect()
        assert_same_rows(rows, tpch.sql(GROUPED).collect())
        assert cs.last_query_summary().get("operators_cached", 0) == 0

        report = cs.report()  # waits for the listener's report of the collect
        assert report["counters"]["statistics_from_execution"] >= 1
        assert report["executions_read"] >= 1
        result = _result_of(cs, tpch, GROUPED)
        stats = cs.qtree.get(result.fingerprint)
        assert stats.stats_source == EXECUTED_PLAN
        assert stats.rows == len(rows) and stats.texec > 0 and stats.size_bytes > 0
        assert cs.cache.lookup(result.fingerprint) is None  # measured, never written

        again = cs.sql(GROUPED)  # measured now: the benefit model decides, not a guess
        decision = next(o for o in cs.record(again).operators if o.path == result.path)
        assert decision.decision.source == EXECUTED_PLAN
        assert decision.decision.action == "cache"
        assert_same_rows(again.collect(), rows)
    finally:
        cs.close()


def test_a_write_measures_what_it_ran_and_show_nothing_it_read_in_part(tpch, tmp_path):
    cs = criss.session(tpch, home=str(tmp_path / "h"), eager_results=False, min_ref=99)
    try:
        result = _result_of(cs, tpch, GROUPED)
        cs.sql(GROUPED).show()  # a limit over the aggregate: read in part
        cs.report()
        assert cs.qtree.get(result.fingerprint).texec is None

        cs.sql(GROUPED).write.parquet(str(tmp_path / "out"))  # a new plan: not watched
        cs.report()
        stats = cs.qtree.get(result.fingerprint)
        assert stats.stats_source == EXECUTED_PLAN and stats.texec > 0
        assert stats.rows == tpch.read.parquet(str(tmp_path / "out")).count()
    finally:
        cs.close()


def test_plain_spark_actions_are_not_read_and_the_listener_stops_with_the_session(tpch, tmp_path):
    cs = criss.session(tpch, home=str(tmp_path / "h"), eager_results=False, min_ref=99)
    df = cs.sql(GROUPED)
    tpch.sql(GROUPED).collect()  # not planned by Criss: none of its business
    assert cs.report()["executions_read"] == 0
    cs.close()
    df.collect()
    time.sleep(0.2)
    cs.learning.settle()
    assert cs.learning.executions_read == 0


def test_sessions_opened_and_closed_leave_one_listener_on_spark(tpch, tmp_path):
    """Spark unregisters a listener by reference, and py4j hands it a new one each time:
    every Criss session on one SparkSession shares one registered listener, so closing a
    session leaves no callback behind, and a later session still hears its actions."""
    listeners = tpch._jsparkSession.listenerManager().listListeners
    criss.session(tpch, home=str(tmp_path / "first")).close()
    registered = len(listeners())
    for i in range(3):
        with criss.session(tpch, home=str(tmp_path / f"h{i}")) as cs:
            cs.sql(GROUPED).collect()
    assert len(listeners()) == registered
    assert len(_shared_listener(tpch)) == 0  # no closed session still receives
    with criss.session(tpch, home=str(tmp_path / "last"), eager_results=False) as cs:
        cs.sql(GROUPED).collect()
        assert cs.report()["executions_read"] == 1


@pytest.mark.parametrize("qid", [1, 3, 5, 10, 12, 18])
def test_a_small_data_repeat_that_took_long_enough_is_served(tpch, tmp_path, qid):
    """SF 0.01: inputs read in no time, yet each query costs Spark a stage's fixed cost per
    exchange. With the default min_texec, a repeat of a query that took >= 0.3 s is read
    from the cache."""
    sql = statement(qid, sf=0.01).sql
    warm = criss.session(tpch, home=str(tmp_path / "h"), min_texec=0.2)
    try:
        tpch.sql(statement(6, sf=0.01).sql).collect()  # a plain action teaches the rates
        started = time.perf_counter()
        first = warm.sql(sql).collect()
        took = time.perf_counter() - started
        repeat = warm.sql(sql)
        assert_same_rows(repeat.collect(), tpch.sql(sql).collect())
        if took >= 0.3:
            assert warm.last_query_summary().get("operators_reused", 0) >= 1, warm.explain(repeat)
        assert_same_rows(first, tpch.sql(sql).collect())
    finally:
        warm.close()
