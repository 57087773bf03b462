"""Criss never serves a wrong, stale or random result, and its own failures fall back."""

from __future__ import annotations

import os
import shutil
import sqlite3
import warnings

import pytest
from pyspark.errors import AnalysisException, ParseException
from pyspark.sql import functions as F
from pyspark.sql.types import LongType
from rowcompare import assert_same_rows

import criss
from criss.bridge import catalyst
from criss.errors import BridgeError
from criss.records import operators_from_json

pytestmark = pytest.mark.spark

AGG = "select o_orderpriority, count(*) n, sum(o_totalprice) s from orders group by 1"


@pytest.fixture
def cs(tpch, tmp_path):
    session = criss.session(tpch, home=str(tmp_path / "home"), catalog_timeout=0.5)
    yield session
    session.close()


def _run(cs, sql):
    df = cs.sql(sql)
    return df.collect(), cs.last_query_summary()


@pytest.mark.parametrize(
    ("sql", "groups"),
    [
        ("select g, count(*) c, sum(id) s from stale_t group by g", 3),
        # the cached result is the top rows (criss.qtree.rewrite.top_rows)
        ("select g, count(*) c, sum(id) s from stale_t group by g order by s desc limit 2", 2),
    ],
    ids=["aggregate", "top-rows"],
)
def test_rewritten_input_files_are_never_served_stale(spark, cs, tmp_path, sql, groups):
    path = str(tmp_path / "t")
    spark.range(0, 1000).withColumn("g", F.col("id") % 7).write.parquet(path)
    spark.read.parquet(path).createOrReplaceTempView("stale_t")
    _run(cs, sql)
    old_operators = {d.fingerprint for d in cs._last.operators if d.looked_up}
    old_entries = {e["key"] for e in cs.report()["entries"]}
    rows, summary = _run(cs, sql)
    assert summary["operators_reused"] >= 1
    assert old_entries and all(cs.qtree.get(fp) is not None for fp in old_operators)

    spark.range(0, 500).withColumn("g", F.col("id") % 3).write.mode("overwrite").parquet(path)
    rows, summary = _run(cs, sql)
    assert summary.get("operators_reused", 0) == 0
    # the old leaf and, cascading, every operator above it, with their cached results
    assert summary["invalidated"] >= len(old_operators) > 1
    assert all(cs.qtree.get(fp) is None for fp in old_operators)
    assert not old_entries & {e["key"] for e in cs.report()["entries"]}
    assert_same_rows(rows, spark.sql(sql).collect())
    assert len(rows) == groups


def test_a_subquerys_rewritten_input_is_never_served_stale(spark, cs, tmp_path):
    """A table read only inside a scalar subquery is part of the operators that use it."""
    _parquet_view(spark, spark.range(0, 1000), tmp_path / "facts", "sub_facts")

    def write_limits(n):
        _numbers_view(spark, n, "y", tmp_path / "limits", "sub_limits")

    sql = (
        "select id % 5 g, count(*) c from sub_facts "
        "where id > (select max(y) from sub_limits) group by 1"
    )
    write_limits(10)
    _run(cs, sql)
    rows, summary = _run(cs, sql)
    assert summary["operators_reused"] >= 1
    assert_same_rows(rows, spark.sql(sql).collect())
    write_limits(500)
    rows, summary = _run(cs, sql)
    assert summary.get("operators_reused", 0) == 0
    assert_same_rows(rows, spark.sql(sql).collect())
    assert sum(r["c"] for r in rows) == 500


def test_a_nested_subquerys_rewritten_input_is_never_served_stale(spark, cs, tmp_path):
    """The same for a table read only by a subquery inside a subquery, and the relations
    a subquery reads are found in the order of a walk of every node of its plan (the one
    the plan's JSON is in): a plan without subqueries below is answered by its leaves."""
    from criss.bridge.capture import _subquery_relations

    _parquet_view(spark, spark.range(0, 1000), tmp_path / "facts", "nest_facts")
    _numbers_view(spark, 50, "y", tmp_path / "l2", "nest_limits2")

    def write_inner(n):
        _numbers_view(spark, n, "z", tmp_path / "inner", "nest_inner")

    sql = (
        "select id % 5 g, count(*) c from nest_facts where id > "
        "(select max(y) from nest_limits2 where y < (select max(z) from nest_inner)) "
        "and id < (select count(*) * 100 from nest_limits2 l join nest_inner i on l.y = i.z) "
        "group by 1"
    )
    write_inner(10)
    plan = spark.sql(sql)._jdf.queryExecution().optimizedPlan()
    holders, stack = [], [plan]
    while stack:
        node = stack.pop()
        if node.subqueries().size():
            holders.append(node)
        stack.extend(node.children().apply(i) for i in range(node.children().size()))
    walked = [str(r.toString()) for h in holders for r in _walked_relations(h)]
    found = [str(r.toString()) for h in holders for r in _subquery_relations(h)]
    assert found == walked
    assert len(found) == 4  # each subquery's two files, the nested subquery's among them

    _run(cs, sql)
    rows, summary = _run(cs, sql)
    assert summary["operators_reused"] >= 1
    assert_same_rows(rows, spark.sql(sql).collect())
    assert sum(r["c"] for r in rows) == 991  # 8 < id < 1000
    write_inner(3)  # the nested subquery's max drops from 9 to 2, the join keeps 3 rows
    rows, summary = _run(cs, sql)
    assert summary.get("operators_reused", 0) == 0
    assert_same_rows(rows, spark.sql(sql).collect())
    assert sum(r["c"] for r in rows) == 298  # 1 < id < 300


def test_only_a_plan_naming_more_relations_than_its_leaves_is_searched_for_nested_ones(
    spark, cs, tmp_path
):
    """The capture looks into every operator's expressions for the files a subquery reads
    only when the plan's JSON names more file relations than the plan's own leaves: a
    plan of joins is not searched, one whose subquery reads a file (nested or not) is, and
    so is one with an Expand (its projections are read from the JVM after the text)."""
    _parquet_view(spark, spark.range(0, 100), tmp_path / "facts", "flag_facts")
    _numbers_view(spark, 10, "y", tmp_path / "limits", "flag_limits")
    _numbers_view(spark, 5, "z", tmp_path / "inner", "flag_inner")
    cases = {
        "select id, y from flag_facts join flag_limits on id = y": False,
        "select id % 5, count(*) from flag_facts group by 1": False,
        # an Expand's projections are restored after the text is read: always searched
        "select id % 5, count(*) from flag_facts group by rollup(id % 5)": True,
        "select id from flag_facts where id > (select max(y) from flag_limits)": True,
        "select id from flag_facts where id > (select max(y) from flag_limits "
        "where y < (select max(z) from flag_inner))": True,
    }
    for sql, nested in cases.items():
        canonical = spark.sql(sql)._jdf.queryExecution().optimizedPlan().canonicalized()
        assert cs.bridge.plan_tree(canonical).nested_relations is nested, sql


def test_case_when_over_subqueries_is_served_and_never_stale(spark, cs, tmp_path):
    """Catalyst's JSON writes a CASE WHEN's branches twice (as children and in full), and
    so each subquery plan in them (TPC-DS q9): the second copies take the first copies'
    file identities, so the result is cached, served and never served stale. Two subqueries
    alike but for their files leave a copy's files unknown: never cached."""

    def write_facts(n):
        facts = spark.range(0, n).withColumn("q", F.col("id") % 20)
        _parquet_view(spark, facts, tmp_path / "cw_facts", "cw_facts")

    write_facts(1000)
    _numbers_view(spark, 5, "r", tmp_path / "r", "cw_r")
    sql = (
        "select r, case when (select count(*) from cw_facts where q between 1 and 5) > 200 "
        "then (select avg(id) from cw_facts where q between 1 and 5) "
        "else (select avg(id) from cw_facts where q between 6 and 9) end b from cw_r where r = 1"
    )
    first, summary = _run(cs, sql)
    assert summary.get("operators_cached", 0) >= 1, cs.explain(cs.sql(sql))
    rows, summary = _run(cs, sql)
    assert summary["operators_reused"] >= 1
    assert_same_rows(rows, first)
    write_facts(500)  # 125 rows in 1..5: the ELSE branch now
    rows, summary = _run(cs, sql)
    assert summary.get("operators_reused", 0) == 0
    assert_same_rows(rows, spark.sql(sql).collect())
    assert rows != first

    spark.read.parquet(str(tmp_path / "cw_facts")).createOrReplaceTempView("cw_twin_a")
    twin = spark.range(0, 10).withColumn("q", F.col("id") % 20)
    _parquet_view(spark, twin, tmp_path / "cw_twin", "cw_twin_b")
    twins = (
        "select r, case when (select max(id) from cw_twin_a) > 5 "
        "then (select max(id) from cw_twin_b) else 0 end b from cw_r where r = 1"
    )
    _run(cs, twins)
    df = cs.sql(twins)
    assert "a subquery's inputs could not be identified" in cs.explain(df)
    assert_same_rows(df.collect(), spark.sql(twins).collect())
    assert cs.last_query_summary().get("operators_reused", 0) == 0


def _parquet_view(spark, frame, path, name):
    """``frame`` written as Parquet at ``path`` (replacing what is there), read as ``name``."""
    frame.write.mode("overwrite").parquet(str(path))
    spark.read.parquet(str(path)).createOrReplaceTempView(name)


def _numbers_view(spark, n, column, path, name):
    """0 .. ``n``-1 in ``column``, written as Parquet at ``path``, read as ``name``."""
    _parquet_view(spark, spark.range(0, n).withColumnRenamed("id", column), path, name)


def _walked_relations(jnode):
    """Every file relation of ``jnode``'s subquery plans by a walk of every node: each plan
    pre-order, a node's own subqueries right after it."""
    found = []

    def plans_of(node):
        subqueries = node.subqueries()
        for i in range(subqueries.size()):
            walk(subqueries.apply(i))

    def walk(node):
        children = node.children()
        if children.size() == 0 and node.getClass().getSimpleName() == "LogicalRelation":
            found.append(node)
        plans_of(node)
        for i in range(children.size()):
            walk(children.apply(i))

    plans_of(jnode)
    return found


def test_a_table_read_twice_in_one_query_is_listed_once_and_never_served_stale(
    spark, cs, tmp_path, monkeypatch
):
    """One listing per file index per capture: a view read in two branches shares its
    index; another index of the same files (a second ``read.parquet``) is listed on its own,
    since Spark reads through its own, possibly stale, listing."""
    from criss.bridge import capture

    listed = []
    identity = capture._listed
    monkeypatch.setattr(capture, "_listed", lambda *a: listed.append(1) or identity(*a))
    path = str(tmp_path / "twice")
    spark.range(0, 1000).withColumn("g", F.col("id") % 7).write.parquet(path)
    spark.read.parquet(path).createOrReplaceTempView("twice_a")
    spark.read.parquet(path).createOrReplaceTempView("twice_b")
    sql = (
        "select a.g, count(*) c from twice_a a join "
        "(select g from twice_a where id < 500 group by g) b on a.g = b.g group by a.g"
    )
    planned = cs.sql(sql)  # one capture; what runs after the action is not counted
    assert len(listed) == 1
    planned.collect()
    cs.settle_harvests()  # the action's statistics are read from its own plan
    listed.clear()
    cs.sql("select count(*) from twice_a a join twice_b b on a.id = b.id")
    assert len(listed) == 2

    _run(cs, sql)
    rows, summary = _run(cs, sql)
    assert summary["operators_reused"] >= 1
    spark.range(0, 300).withColumn("g", F.col("id") % 3).write.mode("overwrite").parquet(path)
    rows, summary = _run(cs, sql)
    assert summary.get("operators_reused", 0) == 0
    assert_same_rows(rows, spark.sql(sql).collect())
    assert sum(r["c"] for r in rows) == 300


def test_non_deterministic_plans_are_never_cached(tpch, cs):
    for sql in (
        "select o_orderpriority, count(*) from orders where rand() < 0.5 group by 1",
        "select o_orderpriority, count(*) from orders where rand(42) < 0.5 group by 1",
    ):
        for _ in range(3):
            _, summary = _run(cs, sql)
            assert summary.get("operators_cached", 0) == 0
            assert summary.get("operators_reused", 0) == 0
    sql = "select o_orderkey, rand(7) r from orders where o_orderkey < 100"
    for _ in range(3):
        df = cs.sql(sql)
        df.collect()
        random_lines = [line for line in cs.explain(df).splitlines() if "rand(7)" in line]
        assert random_lines and all("not cached: non-deterministic" in x for x in random_lines)
    # the deterministic filter below it is judged on its own merits, not as non-deterministic
    filter_lines = [line for line in cs.explain(df).splitlines() if "Filter" in line]
    assert filter_lines and not any("non-deterministic" in x for x in filter_lines)


def _assert_stored_only_below(explanation: str, marker: str) -> None:
    """Neither the operator labelled with ``marker`` nor any above it was cached or reused
    (the deterministic scan below it may be)."""
    lines = explanation.splitlines()
    random_lines = [x for x in lines if marker in x]
    assert random_lines, explanation
    depth = min(len(x) - len(x.lstrip(" ")) for x in random_lines)
    stored = [x for x in lines if "REUSED" in x or "CACHED as" in x]
    assert all(len(x) - len(x.lstrip(" ")) > depth for x in stored), explanation


def test_python_udfs_are_cached_only_when_allow_listed(tpch, tmp_path):
    tpch.udf.register("nd_plus", lambda x: x + 1, LongType())
    sql = "select nd_plus(o_orderkey) k from orders where o_orderkey < 100"
    for allowed, expect_cached in (((), False), (("nd_plus",), True)):
        cs = criss.session(tpch, home=str(tmp_path / f"h{len(allowed)}"), allowed_udfs=allowed)
        _, summary = _run(cs, sql)
        assert bool(summary.get("operators_cached", 0)) is expect_cached
        cs.close()
    nondet = F.udf(lambda x: x + 1, LongType()).asNondeterministic()
    cs = criss.session(tpch, home=str(tmp_path / "h-nd"), allowed_udfs=("<lambda>",))
    for _ in range(2):
        df = cs.dataframe(
            tpch.table("orders")
            .select(nondet("o_orderkey").alias("k"))
            .where("k < 100")
            .groupBy()
            .agg(F.sum("k"))
        )
        expected = (
            tpch.table("orders")
            .where("o_orderkey + 1 < 100")
            .agg(F.sum(F.col("o_orderkey") + 1))
            .collect()
        )
        assert_same_rows(df.collect(), expected)
        _assert_stored_only_below(cs.explain(df), "<lambda>")
    cs.close()


def test_sampling_is_never_cached(tpch, cs):
    """Sample's rows are random across runs when unseeded (and Criss does not trust a seed
    to give the same rows on another layout): neither it nor anything above it is cached."""
    for _ in range(2):
        df = cs.dataframe(tpch.table("orders").sample(0.1).groupBy("o_orderpriority").count())
        assert len(df.collect()) == 5
        _assert_stored_only_below(cs.explain(df), "Sample")


def test_locked_catalog_falls_back_to_plain_spark(tpch, cs):
    expected = tpch.sql(AGG).collect()
    lock = sqlite3.connect(str(cs.home / "catalog.db"))
    lock.execute("BEGIN EXCLUSIVE")
    try:
        with pytest.warns(RuntimeWarning, match="runs it uncached"):
            rows, summary = _run(cs, AGG)
    finally:
        lock.rollback()
        lock.close()
    assert summary["fallback"]
    assert_same_rows(rows, expected)
    assert cs.report()["counters"]["fallbacks"] == 1


def test_bridge_error_falls_back(tpch, cs, monkeypatch):
    def broken(*args, **kwargs):
        raise BridgeError("simulated Catalyst change")

    monkeypatch.setattr(catalyst, "CapturedPlan", broken)  # what CatalystBridge.capture builds
    with pytest.warns(RuntimeWarning, match="simulated Catalyst change"):
        rows, _ = _run(cs, AGG)
    assert_same_rows(rows, tpch.sql(AGG).collect())


@pytest.mark.parametrize("error", [ZeroDivisionError, AttributeError, KeyError])
def test_any_failure_while_planning_falls_back(tpch, cs, monkeypatch, error):
    """Whatever the exception type, a failure of Criss's own planning runs plain Spark."""
    from criss.planner import decide

    def broken(*args, **kwargs):
        raise error("simulated bug in the caching decisions")

    monkeypatch.setattr(decide, "decide_caching", broken)
    with pytest.warns(RuntimeWarning, match="simulated bug"):
        df = cs.sql(AGG)
    assert_same_rows(df.collect(), tpch.sql(AGG).collect())
    assert cs.record(df).fallback.startswith(error.__name__)
    assert cs.report()["counters"]["fallbacks"] == 1
    assert cs.report()["entries"] == []  # nothing half-cached and left pinned


@pytest.mark.parametrize("mode", ["write_through", "cache_in_action", "job"])
def test_an_unwritable_tier_never_fails_the_query(tpch, tmp_path, mode):
    options = {
        "write_through": {"write_through": True},
        "cache_in_action": {},  # the default
        "job": {"cache_in_action": False},
    }[mode]
    cs = criss.session(tpch, home=str(tmp_path / "h"), **options)
    disk = cs.cache.tiers["disk"].root
    shutil.rmtree(disk)
    disk.write_text("not a directory")  # root ignores permissions; a file in the way does not
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        rows, summary = _run(cs, AGG)
    assert_same_rows(rows, tpch.sql(AGG).collect())
    assert summary.get("operators_cached", 0) == 0
    # the action's tasks, or the write after it, could not write: nothing is cached; a job
    # of Criss's own fails inside cs.sql(), and the query falls back to plain Spark
    assert bool(summary["fallback"]) is (mode == "job")
    cs.close()


def _partition_files(cs):
    return [cs.cache.tiers[p.tier].local_path(p.name) for p in cs.cache.catalog.partitions()]


@pytest.mark.parametrize("damage", ["truncate", "corrupt", "delete"])
@pytest.mark.usefixtures("no_coalescing")
def test_damaged_cache_files_are_recomputed(tpch, cs, damage):
    expected = tpch.sql(AGG).collect()
    _run(cs, AGG)
    parts = _partition_files(cs)
    assert parts
    for part in parts:
        if damage == "truncate":
            part.write_bytes(part.read_bytes()[: part.stat().st_size // 2])
        elif damage == "corrupt":
            part.write_bytes(b"\0" * part.stat().st_size)
        else:
            part.unlink()
    rows, summary = _run(cs, AGG)
    # only the damaged partitions are recomputed, under their original indices
    assert summary["partitions_recomputed"] == len(parts)
    assert_same_rows(rows, expected)
    rows, summary = _run(cs, AGG)
    assert summary["operators_reused"] >= 1 and summary.get("partitions_recomputed", 0) == 0
    assert_same_rows(rows, expected)


def _damage(part, damage):
    if damage == "truncate":
        os.truncate(part, part.stat().st_size // 2)
    elif damage == "corrupt":  # in place, as bit rot or a stray write would
        with open(part, "r+b") as handle:
            handle.seek(part.stat().st_size // 2)
            handle.write(b"\xff" * 64)
    else:
        part.unlink()


#: Settings with which Spark skips a missing or unreadable file of the user's tables.
IGNORING = ("spark.sql.files.ignoreMissingFiles", "spark.sql.files.ignoreCorruptFiles")


@pytest.fixture(params=[False, True], ids=["default", "ignoring-files"])
def ignoring(tpch, request):
    """The session's own setting, or both ``IGNORING`` settings on (a cached file is
    Criss's, not the user's: skipped, its rows would be missing)."""
    for key in IGNORING if request.param else ():
        tpch.conf.set(key, "true")
    yield request.param
    for key in IGNORING:
        tpch.conf.unset(key)


@pytest.mark.parametrize("damage", ["truncate", "corrupt", "delete"])
@pytest.mark.usefixtures("no_coalescing", "ignoring")
def test_files_damaged_after_planning_fall_back_at_execution(tpch, tmp_path, damage):
    """A cached file damaged between ``cs.sql()`` (which verified it) and the action that
    reads it: Spark fails the read, and the action runs again on the plain plan."""
    cs = criss.session(tpch, home=str(tmp_path / "h"), local_read_bytes=0)  # Spark reads
    expected = tpch.sql(AGG).collect()
    _run(cs, AGG)
    served = cs.sql(AGG)
    assert cs.last_query_summary()["operators_reused"] >= 1
    for part in _partition_files(cs):
        _damage(part, damage)
    assert_same_rows(served.collect(), expected)
    assert cs.counters["fallbacks_at_execution"] == 1
    assert cs.cache.faults["read failed"] == 1
    assert not _partition_files(cs) or damage != "delete"  # dropped when looked up again
    rows, summary = _run(cs, AGG)  # recomputed, then served again
    assert_same_rows(rows, expected)
    rows, summary = _run(cs, AGG)
    assert summary["operators_reused"] >= 1 and not summary.get("partitions_recomputed")
    assert_same_rows(rows, expected)
    assert cs.counters["fallbacks_at_execution"] == 1
    cs.close()


def test_a_users_own_error_on_a_served_dataframe_is_raised_not_retried(tpch, tmp_path):
    cs = criss.session(tpch, home=str(tmp_path / "h"), local_read_bytes=0)
    failing = f"select * from ({AGG}) where n / (n - n) > 0"  # ANSI: divide by zero
    _run(cs, AGG)
    served = cs.sql(failing)
    assert cs.last_query_summary()["operators_reused"] >= 1
    with pytest.raises(Exception, match="DIVIDE_BY_ZERO"):
        served.collect()
    assert cs.counters["fallbacks_at_execution"] == 0
    cs.close()


def test_invalid_sql_raises_sparks_own_errors(tpch, cs):
    with pytest.raises(ParseException):
        cs.sql("selec 1")
    with pytest.raises(AnalysisException):
        cs.sql("select no_such_column from orders")


def test_explain_of_a_statement_text_names_what_to_pass_instead(cs):
    """Records are kept per DataFrame: a statement's text is a user's slip, answered with
    what to pass, not with a TypeError from inside a weak dictionary."""
    for method in (cs.explain, cs.record):
        with pytest.raises(criss.UsageError, match=r"takes the DataFrame that cs\.sql\(\)"):
            method(AGG)
    assert cs.explain(cs.spark.range(3)) == "this DataFrame was not planned by this Criss session"


def test_explain_and_report_describe_reuse(tpch, cs):
    first = cs.sql(AGG)
    first.collect()
    cached_line = next(x for x in cs.explain(first).splitlines() if "CACHED as" in x)
    assert "no statistics yet: cached on an estimate" in cached_line
    del first
    df = cs.sql(AGG)
    text = cs.explain(df)
    assert "REUSED entry" in text
    report = cs.report()
    assert all({"used_bytes", "capacity_bytes"} <= set(t) for t in report["tiers"].values())
    counters = report["counters"]
    assert counters["queries"] == 2 and counters["operators_reused"] == 1
    assert counters["operators_cached"] == 1 and counters["bytes_written"] > 0
    assert counters["bytes_read"] == counters["bytes_written"]
    logged = cs.history.recent()
    assert [q["sql"] for q in logged] == [AGG, AGG]  # newest first, for the dashboard
    assert "REUSED entry" in logged[0]["explain"] and logged[0]["counters"]["operators_reused"]
    # the log keeps the decisions as data: what the CLI and the dashboard read
    reused = [o for o in operators_from_json(logged[0]["decisions"]) if o.reused]
    assert [o.entry for o in reused] == [o.entry for o in cs.record(df).operators if o.reused]
    assert reused[0].decision.action == "reuse" and reused[0].served.reused >= 1
    used = sum(t["used_bytes"] for t in report["tiers"].values())
    assert used == counters["bytes_written"]
    assert report["entries"] and report["entries"][0]["reusable"]
    cs.clear()  # df still reads its entry: it is kept
    assert sum(t["used_bytes"] for t in cs.report()["tiers"].values()) == used
    del df
    cs.clear()
    assert sum(t["used_bytes"] for t in cs.report()["tiers"].values()) == 0


def test_the_qtree_and_its_statistics_survive_a_restart(tpch, tmp_path):
    """References, measured Texec, size and rows persist in the home's catalog: a new
    session over the same home continues counting, and chooses from those statistics."""
    home = str(tmp_path / "home")
    cs = criss.session(tpch, home=home)
    for _ in range(2):
        cs.sql(AGG).collect()
    cached = {d.fingerprint for d in cs._last.operators if d.reused}
    assert len(cached) == 1
    (fingerprint,) = cached
    before = cs.qtree.get(fingerprint)
    assert before.ref == 2 and before.has_stats and before.rows == 5
    operators = len(cs.qtree)
    cs.close()
    again = criss.session(tpch, home=home)
    after = again.qtree.get(fingerprint)
    assert (after.ref, after.texec, after.size_bytes, after.rows) == (
        2,
        before.texec,
        before.size_bytes,
        5,
    )
    assert len(again.qtree) == operators
    again.sql(AGG).collect()
    assert again.qtree.get(fingerprint).ref == 3
    assert again.last_query_summary()["operators_reused"] == 1
    again.close()


#: AGG under a filter: the aggregate is an operator inside the query, not its result.
NESTED = f"select o_orderpriority, n from ({AGG}) where s > 0"


def test_cheap_unmeasured_operators_are_not_cached_on_a_guess(tpch, tmp_path):
    cs = criss.session(tpch, home=str(tmp_path / "h"), min_texec=5.0, eager_results=False)
    df = cs.sql(NESTED)  # planned but never run: nothing measured it
    assert cs.last_query_summary().get("operators_cached", 0) == 0
    inner = next(o for o in cs.record(df).operators if o.op == "Aggregate")
    assert inner.decision.reason == "below_min_texec"
    assert inner.decision.numbers["min_texec"] == 5.0
    assert inner.decision.numbers["estimated_texec"] < 5.0
    assert "stages x" in cs.explain(df) and "< min_texec 5.0s" in cs.explain(df)
    result = next(o for o in cs.record(df).operators if o.path == ())
    assert result.decision.reason == "below_min_texec"  # not eager: judged as any operator
    df.collect()  # now Spark measured it: the benefit model judges, not the guess
    again = cs.sql(NESTED)
    inner = next(o for o in cs.record(again).operators if o.op == "Aggregate")
    assert inner.stats.source == "executed plan"
    assert inner.decision.reason != "below_min_texec"
    cs.close()


def test_a_cheap_first_seen_result_is_served_on_its_first_repeat(tpch, tmp_path):
    """However small the estimate (far below min_texec here), the query's own result is
    cached on first sight when it reads back cheaply, so its first repeat is served."""
    cs = criss.session(tpch, home=str(tmp_path / "h"), min_texec=5.0)
    first = cs.sql(AGG)
    result = next(o for o in cs.record(first).operators if o.op == "Aggregate")
    assert result.decision.reason == "eager_result", cs.explain(first)
    assert result.decision.numbers["estimated_texec"] < 5.0
    expected = tpch.sql(AGG).collect()
    assert_same_rows(first.collect(), expected)
    again = cs.sql(AGG)
    assert_same_rows(again.collect(), expected)
    assert cs.last_query_summary()["operators_reused"] == 1, cs.explain(again)
    cs.close()


def test_dry_run_decides_like_a_real_run_but_changes_nothing(tpch, tmp_path):
    dry = criss.session(tpch, home=str(tmp_path / "h"), dry_run=True)
    df = dry.sql(AGG)
    assert "WOULD CACHE as" in dry.explain(df) and "dry run" in dry.explain(df)
    assert_same_rows(df.collect(), tpch.sql(AGG).collect())
    assert dry.report()["entries"] == [] and len(dry.qtree) == 0 and not dry.history.recent()
    dry.close()
    real = criss.session(tpch, home=str(tmp_path / "h"))
    _run(real, AGG)
    real.close()
    dry = criss.session(tpch, home=str(tmp_path / "h"), dry_run=True)
    assert "WOULD REUSE entry" in dry.explain(dry.sql(AGG))
    dry.close()


def test_binary_literals_without_a_stable_identity_are_never_cached(tpch, cs):
    # Catalyst serialises a byte array as "[B@<identity hash>": no content, no stable key
    sql = (
        "select o_orderpriority, count(*) from orders "
        "where cast(o_orderpriority as binary) <> X'00' group by 1"
    )
    for _ in range(2):
        rows, summary = _run(cs, sql)
        assert_same_rows(rows, tpch.sql(sql).collect())
        assert summary.get("operators_cached", 0) == 0
        assert summary.get("operators_reused", 0) == 0
    assert "binary literal without a stable identity" in cs.explain(cs.sql(sql))


#: Ten priorities no order has: with one more value, an IN list becomes an InSet.
_ABSENT = ", ".join(f"'{k}-NONE'" for k in range(10))
#: Pairs of queries whose plans differ only in a field Catalyst's JSON writes as null: an
#: IN list of more than ten literals (an InSet), an inline table's rows (a LocalRelation), a
#: LIKE's escape character; or writes alike for different values: an InSet's NULL and
#: 'null', an array literal's elements (unquoted), an inline table's strings (unquoted).
#: Each pair once served the first query's rows to the second.
LOSSY_PAIRS = {
    "in-set-null": [
        f"select o_orderpriority in ({value}, {_ABSENT}) z, count(*) c from orders group by 1"
        for value in ("null", "'null'")
    ],
    "array-literal": [
        f"select o_orderstatus, count_if(array_contains(array({items}), o_orderpriority)) c "
        "from orders group by 1"
        for items in ("'1-URGENT,2-HIGH'", "'1-URGENT', '2-HIGH'")
    ],
    "inline-table-strings": [
        f"select x, y, count(*) c from values {values} as t(x, y) group by x, y"
        for values in ("('a,b', 'c'), ('d', 'e')", "('a', 'b,c'), ('d', 'e')")
    ],
    "inline-table-null": [
        f"select x, count(*) c from values ({value}), ('a') as t(x) group by x"
        for value in ("'null'", "cast(null as string)")
    ],
    "in-set": [
        "select o_orderpriority, count(*) c from orders "
        f"where o_custkey in ({', '.join(str(k) for k in keys)}) group by 1"
        for keys in (range(1, 40, 3), range(2, 41, 3))
    ],
    "inline-table": [
        f"select a % 2 b, sum(a) s from values {values} as t(a) group by 1"
        for values in ("(1), (2), (3)", "(10), (20), (33)")
    ],
    "like-escape": [
        "select count(*) c from orders where concat('x!', o_orderpriority) "
        f"like 'x!%' escape '{escape}'"
        for escape in ("!", "#")
    ],
}


@pytest.mark.parametrize("kind", sorted(LOSSY_PAIRS))
def test_plans_differing_only_where_catalysts_json_is_null_are_not_confused(tpch, cs, kind):
    first, second = LOSSY_PAIRS[kind]
    assert_same_rows(_run(cs, first)[0], tpch.sql(first).collect())
    assert_same_rows(_run(cs, first)[0], tpch.sql(first).collect())
    assert cs.last_query_summary().get("operators_reused", 0) >= 1  # the values are known
    expected = tpch.sql(second).collect()
    assert sorted(map(repr, expected)) != sorted(map(repr, tpch.sql(first).collect()))
    for _ in range(2):
        rows, summary = _run(cs, second)
        assert_same_rows(rows, expected)


def test_a_timestamp_literal_means_another_instant_in_another_time_zone(spark, cs, tmp_path):
    """Catalyst's JSON writes a timestamp literal as local time in the session's time zone:
    UTC's and Tokyo's ``timestamp'1970-01-01 10:00:00'`` read alike, nine hours apart."""
    path = str(tmp_path / "hours")
    spark.range(48).selectExpr("id", "timestamp_seconds(id * 3600) ts").write.parquet(path)
    spark.read.parquet(path).createOrReplaceTempView("hours")
    sql = "select id % 2 odd, count(*) c from hours where ts < timestamp'1970-01-01 10:00:00' "
    sql += "group by 1"
    zone = spark.conf.get("spark.sql.session.timeZone")
    try:
        spark.conf.set("spark.sql.session.timeZone", "UTC")
        for _ in range(2):
            assert_same_rows(_run(cs, sql)[0], spark.sql(sql).collect())
        assert cs.last_query_summary().get("operators_reused", 0) >= 1
        spark.conf.set("spark.sql.session.timeZone", "Asia/Tokyo")
        expected = spark.sql(sql).collect()
        assert sum(row.c for row in expected) == 1  # 01:00 UTC
        for _ in range(2):
            assert_same_rows(_run(cs, sql)[0], expected)
    finally:
        spark.conf.set("spark.sql.session.timeZone", zone)


def test_a_result_computed_under_a_setting_spark_reads_at_run_time_is_not_served_under_another(
    tpch, cs
):
    """``spark.sql.mapKeyDedupPolicy`` is written nowhere in the plan: a map with a
    duplicate key (every order's ship priority is 0) takes the last value under
    ``LAST_WIN``, and raises under the default ``EXCEPTION``, through Criss too."""
    sql = (
        "select m, count(*) c from (select map_from_arrays(array(o_shippriority, 0), "
        "array(o_orderpriority, 'last'))[0] m from orders) group by m"
    )
    try:
        tpch.conf.set("spark.sql.mapKeyDedupPolicy", "LAST_WIN")
        for _ in range(2):
            rows = _run(cs, sql)[0]
        assert rows == tpch.sql(sql).collect() and rows[0].m == "last"
        assert cs.last_query_summary().get("operators_reused", 0) >= 1
        tpch.conf.set("spark.sql.mapKeyDedupPolicy", "EXCEPTION")
        with pytest.raises(Exception, match="DUPLICATED_MAP_KEY"):
            tpch.sql(sql).collect()
        with pytest.raises(Exception, match="DUPLICATED_MAP_KEY"):
            cs.sql(sql).collect()
        tpch.conf.set("spark.sql.mapKeyDedupPolicy", "LAST_WIN")
        assert _run(cs, sql)[0] == rows
        assert cs.last_query_summary().get("operators_reused", 0) >= 1  # its own entry again
    finally:
        tpch.conf.unset("spark.sql.mapKeyDedupPolicy")


def test_a_try_function_is_never_served_for_its_plain_twin_nor_the_reverse(tpch, cs):
    """``try_multiply(a, b)`` is ``a * b`` in TRY mode, which Catalyst's plan JSON does not
    record: without ANSI mode the product wraps around where the try_ form gives NULL, and
    with it the product raises where the try_ form gives NULL."""
    big = 1 << 62
    product = f"select o_orderstatus, max(o_custkey * {big}) m from orders group by 1"
    tried = product.replace(f"o_custkey * {big}", f"try_multiply(o_custkey, {big})")
    try:
        tpch.conf.set("spark.sql.ansi.enabled", "false")
        for _ in range(2):
            wrapped = _run(cs, product)[0]
        assert cs.last_query_summary().get("operators_reused", 0) >= 1
        expected = tpch.sql(tried).collect()
        assert sorted(map(repr, expected)) != sorted(map(repr, wrapped))
        for _ in range(2):
            rows, summary = _run(cs, tried)
            assert_same_rows(rows, expected)
            assert not summary.get("operators_reused") and not summary.get("operators_cached")
        assert "try_* function" in cs.explain(cs.sql(tried))
        tpch.conf.set("spark.sql.ansi.enabled", "true")
        assert_same_rows(_run(cs, tried)[0], tpch.sql(tried).collect())
        with pytest.raises(Exception, match="ARITHMETIC_OVERFLOW"):
            cs.sql(product).collect()
    finally:
        tpch.conf.unset("spark.sql.ansi.enabled")


def test_a_result_computed_without_ansi_mode_is_not_served_under_sparks_default(tpch, cs):
    """Spark 4 runs in ANSI mode unless told otherwise: a session that never set
    ``spark.sql.ansi.enabled`` is not served what an explicit ``false`` computed (Criss
    once read the unset setting as false)."""
    sql = "select o_orderpriority, sum(cast(o_clerk as int)) s from orders group by 1"
    tpch.conf.unset("spark.sql.ansi.enabled")
    assert tpch.conf.get("spark.sql.ansi.enabled") == "true"
    try:
        tpch.conf.set("spark.sql.ansi.enabled", "false")
        for _ in range(2):
            assert_same_rows(_run(cs, sql)[0], tpch.sql(sql).collect())  # NULLs
        assert cs.last_query_summary().get("operators_reused", 0) >= 1
        tpch.conf.unset("spark.sql.ansi.enabled")
        with pytest.raises(Exception, match="CAST_INVALID_INPUT"):
            tpch.sql(sql).collect()
        with pytest.raises(Exception, match="CAST_INVALID_INPUT"):
            cs.sql(sql).collect()
    finally:
        tpch.conf.unset("spark.sql.ansi.enabled")


def test_a_result_computed_without_ansi_mode_is_not_served_to_ansi_mode(tpch, cs):
    sql = "select o_orderpriority, sum(cast(o_clerk as int)) s from orders group by 1"
    tpch.conf.set("spark.sql.ansi.enabled", "false")
    try:
        assert_same_rows(_run(cs, sql)[0], tpch.sql(sql).collect())  # NULLs: no clerk is a number
        tpch.conf.set("spark.sql.ansi.enabled", "true")
        with pytest.raises(Exception, match="CAST_INVALID_INPUT"):
            cs.sql(sql).collect()
    finally:
        tpch.conf.unset("spark.sql.ansi.enabled")


@pytest.mark.usefixtures("no_coalescing")
@pytest.mark.parametrize("local_read_bytes", [0, "2m"])
def test_rows_keep_the_final_order_by_when_served_from_the_cache(tpch, tmp_path, local_read_bytes):
    """The Project Spark puts above a final Sort (an ORDER BY column not selected) returns
    rows in the query's order: Criss caches below the Sort, never the ordered Project."""
    cs = criss.session(tpch, home=str(tmp_path / "h"), local_read_bytes=local_read_bytes)
    sql = (
        "select o_orderkey, o_totalprice from orders where o_orderkey % 3 = 0 "
        "order by o_orderdate desc, o_orderkey"
    )
    expected = [tuple(r) for r in tpch.sql(sql).collect()]
    assert len(expected) > 1000
    for occurrence in range(3):
        df = cs.sql(sql)
        assert [tuple(r) for r in df.collect()] == expected
        summary = cs.last_query_summary()
        assert summary.get("operators_reused" if occurrence else "operators_cached", 0) == 1
        if occurrence:  # a repeat is read back, ordered on the driver when it may
            assert summary.get("results_ordered_on_driver", 0) == (1 if local_read_bytes else 0)
    operators = [
        x
        for x in cs.explain(df).splitlines()[1:]
        if not x.startswith(("  result:", "  time by phase"))
    ]
    top = operators[0]
    assert top.lstrip().startswith("Project") and "in the order of the query" in top
    cs.close()


def test_an_in_list_inside_a_subquerys_plan_is_never_confused(tpch, cs):
    """Its values are in the subquery's plan, not in the operator's own expressions: the
    operator is not cached (rather than served another list's rows)."""
    keys = [range(1, 40, 3), range(2, 41, 3)]
    sqls = [
        "select o_orderpriority, count(*) c from orders where o_totalprice * 0.01 > "
        f"(select avg(c_acctbal) from customer where c_nationkey in ({', '.join(map(str, k))})) "
        "group by 1"
        for k in ([n % 25 for n in keys[0]], [n % 25 + 1 for n in keys[1]])
    ]
    for sql in sqls + sqls:
        rows, summary = _run(cs, sql)
        assert_same_rows(rows, tpch.sql(sql).collect())
        assert summary.get("fallback") is None
