"""reuse_scope=results: Criss as an exact-result cache, the experiments' peer."""

from __future__ import annotations

from rowcompare import assert_same_rows

import criss

SHARED = (
    "select o_orderpriority, count(*) as n from orders join lineitem on l_orderkey = o_orderkey "
    "where l_commitdate < l_receiptdate group by o_orderpriority"
)
#: Same join as SHARED under another aggregate: Criss reuses the join, a result cache can't.
OVERLAPPING = (
    "select o_orderpriority, sum(l_quantity) as q from orders join lineitem "
    "on l_orderkey = o_orderkey where l_commitdate < l_receiptdate group by o_orderpriority"
)


#: The join and projection of OVERLAPPING under a third aggregate.
THIRD = OVERLAPPING.replace("sum(l_quantity)", "max(l_quantity)")


def _session(spark, home, **options):
    return criss.session(
        spark,
        home=str(home),
        codec_rate="20m",
        disk_bandwidth="100m",
        memory_bandwidth="1g",
        **options,
    )


def test_result_cache_serves_only_identical_queries(tpch, tmp_path):
    cs = _session(tpch, tmp_path / "results", reuse_scope="results", min_ref=1)
    try:
        first = cs.sql(SHARED)
        assert_same_rows(first.collect(), tpch.sql(SHARED).collect())
        assert cs.last_query_summary()["operators_cached"] == 1  # the result, nothing below
        again = cs.sql(SHARED)
        summary = cs.last_query_summary()
        assert_same_rows(again.collect(), tpch.sql(SHARED).collect())
        assert summary["operators_reused"] == 1
        assert "reuse_scope=results" in cs.explain(first)
        for query in (OVERLAPPING, THIRD):
            other = cs.sql(query)
            assert_same_rows(other.collect(), tpch.sql(query).collect())
            assert cs.last_query_summary().get("operators_reused", 0) == 0
    finally:
        cs.close()


def test_criss_reuses_the_overlap_a_result_cache_misses(tpch, tmp_path):
    # the join shuffles, as it does at SF 1 (orders there is over Spark's broadcast
    # threshold): at SF 0.01 Spark would broadcast orders, and the joined projection, most
    # of lineitem's rows with a column looked up, is a copy Criss does not cache
    key = "spark.sql.autoBroadcastJoinThreshold"
    before = tpch.conf.get(key)
    tpch.conf.set(key, "-1")
    cs = _session(tpch, tmp_path / "criss", min_ref=1)
    try:
        cs.sql(SHARED).collect()
        cs.sql(OVERLAPPING).collect()  # min_ref=1: the joined projection is cached
        third = cs.sql(THIRD)
        assert_same_rows(third.collect(), tpch.sql(THIRD).collect())
        assert cs.last_query_summary().get("operators_reused", 0) >= 1
    finally:
        cs.close()
        tpch.conf.set(key, before)
