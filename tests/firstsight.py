"""Queries and checks shared by the tests of the paths that cache a first-seen result as
the user's own action runs (Spark's cache, write-through steps)."""

from __future__ import annotations

from rowcompare import assert_same_rows

from criss.qtree.rewrite import result_node

GROUPED = """
    select o_orderpriority, count(*) as n, sum(o_totalprice) as total
    from orders where o_orderdate >= date'1995-01-01'
    group by o_orderpriority
"""
#: Hundreds of rows in each shuffle partition: ``show()`` needs only the first one.
PER_CUSTOMER = """
    select o_custkey, count(*) as n, sum(o_totalprice) as total
    from orders group by o_custkey
"""


def result_key(cs, spark, sql) -> str:
    return result_node(cs.canonical_tree(cs.bridge.capture(spark.sql(sql)))).fingerprint


def assert_show_leaves_a_partial_bitmap_the_next_query_completes(cs, spark) -> None:
    """``show(5)`` computes the first of 4 partitions (no coalescing): the entry holds it
    alone, and the next query reuses it and recomputes the other three."""
    key = result_key(cs, spark, PER_CUSTOMER)
    cs.sql(PER_CUSTOMER).show(5)
    cs.report()
    entry = cs.cache.lookup(key)
    assert entry is not None and entry.num_partitions == 4
    assert list(entry.bitmap) == [0] and entry.missing == [1, 2, 3]

    again = cs.sql(PER_CUSTOMER)
    summary = cs.last_query_summary()
    assert summary["operators_reused"] == 1
    assert (summary["partitions_reused"], summary["partitions_recomputed"]) == (1, 3)
    assert_same_rows(again.collect(), spark.sql(PER_CUSTOMER).collect())
    assert cs.cache.lookup(key).complete


def assert_files_changed_before_the_action_are_never_served(
    cs, spark, tmp_path, *, explain_says: str, counter: str
) -> None:
    """Files added between ``cs.sql()`` and the action: what the action cached belongs to
    the files it was planned with, so the next query (over the new files) recomputes and
    returns the new rows, as plain Spark does. ``explain_says`` names the path taken,
    ``counter`` the counter its commit raises."""
    table = str(tmp_path / "changing")
    spark.range(0, 3000).selectExpr("id % 7 as k", "id as v").write.parquet(table)
    spark.read.parquet(table).createOrReplaceTempView("fs_changing")
    sql = "select k, count(*) as n, sum(v) as s from fs_changing group by k"
    df = cs.sql(sql)
    assert explain_says in cs.explain(df)
    spark.range(3000, 4000).selectExpr("id % 7 as k", "id as v").write.mode("append").parquet(table)
    assert sum(r.n for r in df.collect()) == 3000  # the files it was planned with
    assert cs.report()["counters"][counter] == 1

    again = cs.sql(sql)
    rows = again.collect()
    spark.read.parquet(table).createOrReplaceTempView("fs_fresh")
    expected = spark.sql(sql.replace("fs_changing", "fs_fresh")).collect()
    assert_same_rows(rows, expected)
    assert sum(r.n for r in rows) == 4000
    assert cs.last_query_summary().get("operators_reused", 0) == 0, cs.explain(again)
