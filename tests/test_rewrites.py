"""The paper's two rewrite rules on real Spark: Project-subset and Exchange-repartition."""

from __future__ import annotations

import pytest
from rowcompare import assert_same_rows

import criss

pytestmark = pytest.mark.spark

WIDE = (
    "select o_orderkey, o_custkey, o_totalprice * 2 as double_price, o_orderpriority "
    "from orders where o_orderdate < date '1995-01-01'"
)
NARROW = (
    "select o_orderpriority as prio, o_totalprice * 2 as p2 "
    "from orders where o_orderdate < date '1995-01-01'"
)


@pytest.fixture
def cs(tpch, tmp_path):
    session = criss.session(tpch, home=str(tmp_path / "home"))
    yield session
    session.close()


def test_project_subset_serves_fewer_columns_from_a_cached_wider_project(tpch, cs):
    cs.sql(WIDE).collect()
    assert cs.last_query_summary()["operators_cached"] == 1
    df = cs.sql(NARROW)
    rows = df.collect()
    summary = cs.last_query_summary()
    assert summary.get("rewrites_project_subset") == 1, cs.explain(df)
    assert "via project-subset" in cs.explain(df)
    assert_same_rows(rows, tpch.sql(NARROW).collect())
    # a column the cached Project lacks cannot be served from it
    wider = NARROW.replace("o_totalprice * 2 as p2", "o_totalprice * 2 as p2, o_clerk")
    df = cs.sql(wider)
    assert_same_rows(df.collect(), tpch.sql(wider).collect())
    assert cs.last_query_summary().get("rewrites_project_subset", 0) == 0


def test_exchange_differing_only_in_partition_count_is_served_and_repartitioned(tpch, cs):
    def query(n):
        return tpch.table("lineitem").where("l_quantity > 45").repartition(n, "l_orderkey")

    first = cs.dataframe(query(3))
    first.collect()
    assert cs.last_query_summary()["operators_cached"] == 1, cs.explain(first)
    df = cs.dataframe(query(5))
    assert df.rdd.getNumPartitions() == 5
    rows = df.collect()
    assert cs.last_query_summary().get("rewrites_exchange_repartition") == 1, cs.explain(df)
    assert_same_rows(rows, query(5).collect())
    other_keys = cs.dataframe(
        tpch.table("lineitem").where("l_quantity > 45").repartition(5, "l_partkey")
    )
    other_keys.collect()
    assert cs.last_query_summary().get("rewrites_exchange_repartition", 0) == 0
