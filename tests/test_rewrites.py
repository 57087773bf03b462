"""The paper's two rewrite rules on real Spark: Project-subset and Exchange-repartition."""

from __future__ import annotations

import importlib

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


@pytest.mark.parametrize(
    "prefilter_entries", [None, 0], ids=["keys-of-cached-operators", "lookup-per-operator"]
)
def test_project_subset_serves_fewer_columns_from_a_cached_wider_project(
    tpch, cs, monkeypatch, prefilter_entries
):
    """Either way of finding relatives (the keys of every cached operator, or, past
    ``REWRITE_PREFILTER_ENTRIES`` entries, one lookup per operator) finds the same."""
    if prefilter_entries is not None:
        match = importlib.import_module("criss.planner.match")  # the package exports match()
        monkeypatch.setattr(match, "REWRITE_PREFILTER_ENTRIES", prefilter_entries)
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


JOINED = (
    "select o_orderkey, o_orderdate, o_totalprice, o_totalprice * 2 as double_price, c_name, "
    "c_nationkey "
    "from orders join customer on o_custkey = c_custkey "
    "where o_orderdate < date '1995-01-01' and c_acctbal > 0"
)
#: The same join, its inputs swapped, read for fewer columns: column pruning puts narrower
#: Projects under it, so no operator of its subtree has the cached query's fingerprint.
JOINED_NARROW = (
    "select c_nationkey, sum(o_totalprice * 2) as total, count(*) as n "
    "from customer join orders on c_custkey = o_custkey "
    "where c_acctbal > 0 and o_orderdate < date '1995-01-01' group by c_nationkey"
)


def test_project_subset_serves_a_join_read_for_fewer_columns(tpch, cs):
    """Rows equal, columns a subset: the join is read from the cached wider join result,
    whatever Projects column pruning put below either."""
    cs.sql(JOINED).collect()
    assert cs.last_query_summary()["operators_cached"] >= 1
    df = cs.sql(JOINED_NARROW)
    rows = df.collect()
    summary = cs.last_query_summary()
    assert summary.get("rewrites_project_subset") == 1, cs.explain(df)
    assert_same_rows(rows, tpch.sql(JOINED_NARROW).collect())
    # other rows (another filter), another join type, or a column the cached result lacks
    for other in (
        JOINED_NARROW.replace("c_acctbal > 0", "c_acctbal > 100"),
        JOINED_NARROW.replace("from customer join", "from customer left join").replace(
            " and o_orderdate < date '1995-01-01'", ""
        ),
        JOINED_NARROW.replace("count(*) as n", "max(o_clerk) as clerk"),
    ):
        df = cs.sql(other)
        assert_same_rows(df.collect(), tpch.sql(other).collect())
        assert cs.last_query_summary().get("rewrites_project_subset", 0) == 0, cs.explain(df)


def test_project_subset_leaves_a_self_join_alone(tpch, cs):
    """A self-join's two scans have the same columns: a lineage could not tell which
    scan's column the cached result holds, and serving one for the other swaps values."""
    both = (
        "select a.n_name as first, b.n_name as second, a.n_regionkey from nation a "
        "join nation b on a.n_regionkey = b.n_regionkey and a.n_nationkey < b.n_nationkey"
    )
    second_only = (
        "select b.n_name, count(*) from nation a join nation b "
        "on a.n_regionkey = b.n_regionkey and a.n_nationkey < b.n_nationkey group by b.n_name"
    )
    cs.sql(both).collect()
    df = cs.sql(second_only)
    assert_same_rows(df.collect(), tpch.sql(second_only).collect())
    assert cs.last_query_summary().get("rewrites_project_subset", 0) == 0, cs.explain(df)
