"""Statistics read off executed plans: operators that ran but were not stored get real row
counts (and derived Texec and size) without being written, and the benefit model uses them."""

from __future__ import annotations

import re

import pytest
from rowcompare import assert_same_rows

import criss
from criss.bridge import OperatorMetrics
from criss.planner.executions import statistics_from_metrics
from criss.qtree.plan import PlanNode
from criss.qtree.rewrite import Reuse, plan_reuse
from criss.qtree.tree import EXECUTED_PLAN

JOINED = """
    select o_orderpriority, count(*) as n
    from orders join lineitem on o_orderkey = l_orderkey
    where l_shipmode = 'MAIL' and o_orderdate >= date'1995-01-01'
    group by o_orderpriority
"""
JOINED_HAVING = JOINED + "having count(*) > 0"
JOIN_ROWS = """
    select count(*) from orders join lineitem on o_orderkey = l_orderkey
    where l_shipmode = 'MAIL' and o_orderdate >= date'1995-01-01'
"""


def _node(op: str, path: tuple[int, ...], *children: PlanNode) -> PlanNode:
    return PlanNode(op=op, args={}, children=children, path=path, fingerprint=f"fp{path}")


def test_statistics_from_metrics_shares_time_and_inherits_rows():
    scan_a = _node("Relation", (0, 0, 0, 0))
    scan_b = _node("Relation", (0, 0, 1))
    project = _node("Project", (0, 0, 0), scan_a)
    join = _node("Join", (0, 0), project, scan_b)
    top = _node("Aggregate", (0,), join)
    root = _node("Sort", (), top)
    metrics = {
        (0, 0, 0, 0): OperatorMetrics(rows=1000, task_seconds=3.0, row_width=40),
        (0, 0, 0): OperatorMetrics(rows=None, task_seconds=1.0, row_width=16),
        (0, 0, 1): OperatorMetrics(rows=50, task_seconds=1.0, row_width=8),
        (0, 0): OperatorMetrics(rows=400, task_seconds=2.0, row_width=24),
        (0,): OperatorMetrics(rows=7, task_seconds=3.0, row_width=24),
    }
    wanted = {project.fingerprint, join.fingerprint, top.fingerprint}
    got = statistics_from_metrics(root, metrics, wanted, wall=5.0, parquet_ratio=0.5)

    assert set(got) == wanted  # relations were not asked for
    texec, size, rows = got[project.fingerprint]
    assert rows == 1000  # a Project has its input's rows
    assert texec == pytest.approx(5.0 * 4 / 10)  # its own and its input's task time
    assert size == int(1000 * 16 * 0.5)
    texec, size, rows = got[join.fingerprint]
    assert (rows, size) == (400, int(400 * 24 * 0.5))
    assert texec == pytest.approx(5.0 * 7 / 10)
    assert got[top.fingerprint] == (pytest.approx(5.0), int(7 * 24 * 0.5), 7)


def test_an_operator_twice_in_one_plan_keeps_the_time_of_the_instance_that_did_the_work():
    # TPC-H Q11: the same join feeds the query and its subquery; Spark computes it once
    # and the second instance reads that exchange again, with almost no task time
    scan_a, scan_b = _node("Relation", (0, 0)), _node("Relation", (1, 0))
    first = _node("Join", (0,), scan_a).with_(fingerprint="join")
    second = _node("Join", (1,), scan_b).with_(fingerprint="join")
    root = _node("Join", (), first, second)
    metrics = {
        (0,): OperatorMetrics(rows=100, task_seconds=3.0, row_width=8),
        (1,): OperatorMetrics(rows=100, task_seconds=0.01, row_width=8),
        (): OperatorMetrics(rows=5, task_seconds=1.0, row_width=8),
    }
    got = statistics_from_metrics(root, metrics, {"join"}, wall=2.0, parquet_ratio=1.0)
    assert got["join"][0] == pytest.approx(2.0 * 3.0 / 4.01)


def test_statistics_from_metrics_without_task_time_is_empty():
    root = _node("Join", (), _node("Relation", (0,)))
    metrics = {(): OperatorMetrics(rows=3, task_seconds=0.0, row_width=8)}
    assert statistics_from_metrics(root, metrics, {root.fingerprint}, 1.0, 0.5) == {}


@pytest.mark.spark
def test_an_executed_join_gets_its_exact_row_count_without_being_written(tpch, tmp_path):
    # the second query is the first under another parameter: not lifted, so its own plan
    # shows the statistics the first one's execution left (lifting: test_subsumption.py)
    cs = criss.session(tpch, home=str(tmp_path / "home"), lift_aggregates=False)
    try:
        df = cs.sql(JOINED)
        assert_same_rows(df.collect(), tpch.sql(JOINED).collect())
        summary = cs.last_query_summary()
        assert summary.get("operators_cached") == 1  # only the result was written
        report = cs.report()  # waits for the background read of the executed plan
        assert report["counters"]["statistics_from_execution"] >= 3

        tree = cs.canonical_tree(cs.bridge.capture(tpch.sql(JOINED)))
        join = next(n for n in tree.walk() if n.op == "Join")
        stats = cs.qtree.get(join.fingerprint)
        assert stats is not None and stats.stats_source == EXECUTED_PLAN
        assert stats.rows == tpch.sql(JOIN_ROWS).collect()[0][0] > 0
        assert stats.texec > 0 and stats.size_bytes > 0
        assert cs.cache.lookup(join.fingerprint) is None  # measured, not stored

        again = cs.sql(JOINED.replace("'MAIL'", "'SHIP'"))  # the orders side recurs
        assert_same_rows(again.collect(), tpch.sql(JOINED.replace("'MAIL'", "'SHIP'")).collect())
        assert "from the executed plan" in cs.explain(again)
    finally:
        cs.close()


def test_an_execution_updates_texec_and_rows_but_keeps_a_size_measured_by_a_write(tmp_path):
    from criss.qtree import QTree

    qtree = QTree(tmp_path / "catalog.db")
    try:
        written = _node("Aggregate", (), _node("Relation", (0,)))
        unwritten = _node("Filter", (), _node("Relation", (0,))).with_(fingerprint="other")
        qtree.observe(written)
        qtree.observe(unwritten)
        qtree.record_stats(written.fingerprint, texec=2.0, size_bytes=100, rows=5)
        qtree.record_executions(
            {written.fingerprint: (1.5, 900, 6), unwritten.fingerprint: (0.5, 700, 70)}
        )
        stats = qtree.get(written.fingerprint)
        assert (stats.texec, stats.size_bytes, stats.rows) == (1.5, 100, 6)
        assert stats.stats_source == "measured"
        other = qtree.get(unwritten.fingerprint)
        assert (other.texec, other.size_bytes, other.rows) == (0.5, 700, 70)
        assert other.stats_source == EXECUTED_PLAN
    finally:
        qtree.close()


def test_a_texec_measured_again_replaces_a_larger_one_only(tmp_path):
    """The same operator does the same work on every run; a slower run (the first of a
    template compiles its code, a busy machine) says nothing of what computing it costs."""
    from criss.qtree import QTree

    qtree = QTree(tmp_path / "catalog.db")
    try:
        node = _node("Filter", (), _node("Relation", (0,)))
        qtree.observe(node)
        for texec, rows in ((0.9, 70), (0.3, 71), (0.6, 72)):
            qtree.record_executions({node.fingerprint: (texec, 700, rows)})
        stats = qtree.get(node.fingerprint)
        assert (stats.texec, stats.rows) == (0.3, 72)
    finally:
        qtree.close()


SHIP = JOINED.replace("'MAIL'", "'SHIP'")


@pytest.mark.spark
def test_an_operator_measured_before_is_measured_again_by_every_action_computing_it(tpch, tmp_path):
    """Texec measured once, on a slow run, would stay wrong for good: every action that
    computes an operator measures it again, and the faster measurement is kept."""
    cs = criss.session(tpch, home=str(tmp_path / "h"), reuse_scope="results", lift_aggregates=False)
    try:
        cs.sql(JOINED).collect()
        aggregate = next(
            n
            for n in cs.canonical_tree(cs.bridge.capture(tpch.sql(JOINED))).walk()
            if n.op == "Aggregate"
        )
        cs.report()  # the statistics read in the background are in
        measured = cs.qtree.get(aggregate.fingerprint)
        assert 0 < measured.texec < 100  # measured by writing it, as the query's result
        # as if the first run had been a slow one
        cs.qtree.record_stats(aggregate.fingerprint, texec=100.0, size_bytes=10**6, rows=1)
        df = cs.sql(JOINED_HAVING)  # computes the same aggregate under its own result
        assert_same_rows(df.collect(), tpch.sql(JOINED_HAVING).collect())
        cs.report()
        again = cs.qtree.get(aggregate.fingerprint)
        assert 0 < again.texec < 100
        assert again.rows == measured.rows  # the rows of the run that measured it
    finally:
        cs.close()


def _orders_side_line(cs, tpch, expected, keep_open=False, **stats) -> str:
    """Run JOINED, give the orders side of its SHIP twin ``stats`` in the QTree, run SHIP
    (rows checked against plain Spark's) and return explain's line for that side; the
    session is closed unless ``keep_open``."""
    try:
        cs.sql(JOINED).collect()
        captured = cs.bridge.capture(tpch.sql(SHIP))
        tree = cs.canonical_tree(captured)
        project = next(
            n for n in tree.walk() if captured.label_at(n.path).startswith("Project [o_orderkey")
        )
        cs.report()  # the statistics read in the background are in before ours
        cs.qtree.record_stats(project.fingerprint, **stats)
        df = cs.sql(SHIP)
        assert_same_rows(df.collect(), expected)
        explanation = cs.explain(df)
    finally:
        if not keep_open:
            cs.close()
    return next(x for x in explanation.splitlines() if f"[{project.fingerprint[:12]}]" in x)


@pytest.mark.spark
def test_what_to_cache_is_chosen_with_the_disk_tiers_bandwidth(tpch, tmp_path):
    """The paper values a candidate as if it will sit on disk (the worst case): a memory
    tier fast enough to make it pay does not get it cached when the disk would not."""
    expected = tpch.sql(SHIP).collect()
    orders_side = {}
    for disk in ("10g", "1k"):
        cs = criss.session(
            tpch,
            home=str(tmp_path / disk),
            memory_bandwidth="100g",
            disk_bandwidth=disk,
            codec_rate="100g",  # the media alone decide here
            lift_aggregates=False,  # SHIP runs its own plan, not a roll-up of a lifted one
        )
        # SF 0.01 runs in milliseconds: give the recurring orders side the statistics
        # of a 1 MB result that took 1 s (1 ms to load from the 10g disk, 17 min from 1k)
        line = _orders_side_line(cs, tpch, expected, texec=1.0, size_bytes=1_000_000, rows=1)
        assert "Texec=1.000s" in line, line
        orders_side[disk] = line
    assert "CACHED as" in orders_side["10g"], orders_side["10g"]
    assert "<= 0 (read back at 1.02e+03 B/s (calibrated)" in orders_side["1k"], orders_side["1k"]


@pytest.mark.spark
def test_an_operator_cached_by_the_action_keeps_the_texec_measured_for_it(tpch, tmp_path):
    """The action that caches an operator under its query's result also runs everything
    above it: the operator keeps the Texec measured for it (its share of a run), not the
    action's seconds, which made cheap operators look worth reading back for good."""
    expected = tpch.sql(SHIP).collect()
    cs = criss.session(
        tpch,
        home=str(tmp_path / "h"),
        memory_bandwidth="100g",
        disk_bandwidth="10g",
        codec_rate="100g",
        lift_aggregates=False,
    )
    try:
        line = _orders_side_line(
            cs, tpch, expected, keep_open=True, texec=0.75, size_bytes=1_000_000, rows=1
        )
        assert "CACHED as" in line, line
        fingerprint = re.search(r"\[([0-9a-f]{12})\]", line).group(1)
        cs.report()  # the action's partitions are committed, their statistics learned
        (entry,) = [e for e in cs.cache.catalog.entries() if e.key.startswith(fingerprint)]
        stats = cs.qtree.get(entry.key)
        assert stats.texec == pytest.approx(0.75) and entry.texec == pytest.approx(0.75)
        # what the write measured replaced the rest
        assert stats.rows > 1 and stats.size_bytes == entry.bytes != 1_000_000
        assert stats.stats_source == "measured"
    finally:
        cs.close()


def test_the_write_bandwidth_is_learned_from_big_enough_writes_and_kept_in_the_home(tmp_path):
    from criss.planner.learning import WRITE_BANDWIDTH_MIN_BYTES, Learning
    from criss.qtree import QTree

    qtree = QTree(tmp_path / "catalog.db")
    try:
        learning = Learning(qtree)
        assert learning.write_bandwidth is None
        learning.learn_write_bandwidth(WRITE_BANDWIDTH_MIN_BYTES - 1, 0.001)  # fixed costs
        assert learning.write_bandwidth is None
        learning.learn_write_bandwidth(20_000_000, 2.0)  # the first is taken as it is
        assert learning.write_bandwidth == 10e6
        learning.learn_write_bandwidth(20_000_000, 1.0)
        assert 10e6 < learning.write_bandwidth < 20e6
        assert Learning(qtree).write_bandwidth == learning.write_bandwidth  # in the home
    finally:
        qtree.close()


@pytest.mark.spark
def test_building_in_the_action_is_priced_only_where_the_action_builds_spark_cache(spark, tmp_path):
    """The decisions count what building Spark's cache of an intermediate adds to the
    user's action only where the action does build it: not when the tasks write results
    through, nor when a job of Criss's own computes them."""
    from criss.planner.decide import caching_rules
    from criss.policies.decisions import IN_ACTION_BUILD_SHARE

    shares = {}
    for name, options in {
        "action": {},
        "write_through": {"write_through": True},
        "job": {"cache_in_action": False},
    }.items():
        with criss.session(spark, home=str(tmp_path / name), **options) as cs:
            shares[name] = caching_rules(cs).in_action_build_share
    assert shares == {"action": IN_ACTION_BUILD_SHARE, "write_through": 0.0, "job": 0.0}


@pytest.mark.spark
def test_a_copy_keeping_most_of_its_tables_rows_is_not_cached(tpch, tmp_path):
    """A filtered projection of one table that keeps most of the table's rows costs as much
    to read back as the columns it scans: it is refused whatever its measured Texec, while
    the same operator keeping few rows is cached."""
    expected = tpch.sql(SHIP).collect()
    orders = tpch.table("orders").count()
    lines = {}
    for kept in (orders, orders // 100):
        cs = criss.session(
            tpch, home=str(tmp_path / str(kept)), codec_rate="100g", lift_aggregates=False
        )
        lines[kept] = _orders_side_line(cs, tpch, expected, texec=5.0, size_bytes=1000, rows=kept)
    assert f"keeping {orders} of its {orders} rows" in lines[orders], lines[orders]
    assert "CACHED as" not in lines[orders]
    assert "CACHED as" in lines[orders // 100], lines[orders // 100]


def test_an_aggregate_under_a_having_is_credited_with_its_final_stage(spark, tmp_path):
    """Spark fuses the final aggregate, the HAVING's Filter, the Project and the outer
    count's partial aggregate into one pipeline, timed as a whole: the inner aggregate's
    Texec includes it, else its measured Texec is that of its first stage alone (and the
    outer count, one row out of an exchange, would seem to cost the final merge)."""
    path = str(tmp_path / "keys")
    spark.range(3_000_000).selectExpr("id % 700000 as k", "id as v").write.parquet(path)
    spark.read.parquet(path).createOrReplaceTempView("keyed")
    sql = "select count(*) from (select k from keyed group by k having sum(v) > 100)"
    with criss.session(spark, home=str(tmp_path / "home"), eager_results=False) as cs:
        cs.sql(sql).collect()
        cs.report()
        tree = cs.canonical_tree(cs.bridge.capture(spark.sql(sql)))
        grouped = next(n for n in tree.walk() if n.op == "Aggregate" and n.path)
        aggregate, outer = cs.qtree.get(grouped.fingerprint), cs.qtree.get(tree.fingerprint)
        assert aggregate.stats_source == EXECUTED_PLAN and aggregate.texec > 0
        assert aggregate.texec == pytest.approx(outer.texec, rel=0.1)


def test_operators_above_a_served_subtree_stand_in_for_their_planned_fingerprints():
    from criss.qtree.executed import planned_query, standing_in

    def tree(scan_fp: str, top_fp: str = "top-exec") -> PlanNode:
        scan = _node("Relation", (0, 0)).with_(fingerprint=scan_fp)
        other = _node("Relation", (0, 1)).with_(fingerprint="dim")
        join = _node("Join", (0,), scan, other).with_(fingerprint="join-" + scan_fp)
        return _node("Filter", (), join).with_(fingerprint=top_fp)

    query = tree("facts", "top")
    planned = planned_query(query, [(0, 0)])  # the cache served the facts side
    executed = tree("cached-read")  # a read of the cached rows in its place
    assert standing_in(executed, planned) == {(0,): "join-facts", (): "top"}
    # where the plan's shape changed above the read, only the root stands in (the result)
    changed = executed.with_(children=(executed.children[0].with_(op="Aggregate"),))
    assert standing_in(changed, planned) == {(): "top"}
    # as where the join's other input differs (not the same rows)
    other = tree("cached-read")
    join = other.children[0]
    differs = other.with_(
        children=(join.with_(children=(join.children[0], join.children[1].with_(fingerprint="x"))),)
    )
    assert standing_in(differs, planned) == {(): "top"}
    # a result read whole computes nothing
    assert standing_in(_node("Relation", ()), planned_query(query, [()])) == {}
    assert planned_query(query, []) is None


@pytest.mark.spark
def test_an_operator_above_a_served_subtree_is_measured_by_the_action(tpch, tmp_path):
    """A query that reads a cached operator runs another plan above it: its own operators
    there are measured all the same (they used to stay without statistics, and be cached
    "to collect statistics" when they recurred)."""
    cs = criss.session(
        tpch,
        home=str(tmp_path / "h"),
        eager_results=False,
        lift_aggregates=False,
        # Spark reads the cached files: a small entry read on the driver would have the
        # HAVING folded into a local relation by Spark's optimizer, and nothing to measure
        local_read_bytes=0,
    )
    try:
        for _ in range(2):  # measured, then cached as a result seen twice
            cs.sql(JOINED).collect()
        cs.report()
        assert cs.report()["counters"].get("operators_cached", 0) >= 1
        df = cs.sql(JOINED_HAVING)  # the cached aggregate under a HAVING
        assert_same_rows(df.collect(), tpch.sql(JOINED_HAVING).collect())
        assert cs.last_query_summary().get("operators_reused") == 1
        cs.report()
        tree = cs.canonical_tree(cs.bridge.capture(tpch.sql(JOINED_HAVING)))
        stats = cs.qtree.get(tree.fingerprint)
        assert tree.op == "Filter" and stats is not None
        assert stats.stats_source == EXECUTED_PLAN and stats.texec > 0
        assert stats.rows == tpch.sql(JOINED_HAVING).count()
    finally:
        cs.close()


def test_an_operator_measured_cheap_above_a_served_one_does_not_hide_it_from_reuse():
    """TPC-H Q18 through Criss (drift seed 3, after the replay's warm-up): the HAVING's
    Project over the per-order aggregate was measured at 0.127 s while the cache served the
    aggregate (3.2 s) below it, so it was not worth reading back; the exact repeat of the
    query then computed the aggregate again, because nothing under a cheap operator was
    looked at."""
    relation = _node("LogicalRelation", (0, 0, 0, 0))
    aggregate = _node("Aggregate", (0, 0, 0), relation)
    having = _node("Filter", (0, 0), aggregate)
    root = _node("Project", (), _node("Project", (0,), having))
    cheap = {root.fingerprint, root.children[0].fingerprint, having.fingerprint}

    def worth_reading(node: PlanNode, fingerprint: str) -> bool:
        return fingerprint not in cheap

    cached = {aggregate.fingerprint, having.fingerprint}
    found = plan_reuse(root, cached.__contains__, worth_reading=worth_reading)

    assert found == [Reuse(aggregate.path, aggregate.fingerprint)]
