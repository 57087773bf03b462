"""The reuse engine on real Spark: results equal plain Spark's, and reuse really happens."""

from __future__ import annotations

import pytest
from rowcompare import assert_same_rows

import criss
from experiments.tpch import queries

pytestmark = pytest.mark.spark


@pytest.fixture
def cs(tpch, tmp_path):
    session = criss.session(tpch, home=str(tmp_path / "home"))
    yield session
    session.close()


@pytest.mark.parametrize("qid", queries.QUERY_IDS)
def test_tpch_query_through_criss_equals_plain_spark(tpch, cs, qid):
    sql = queries.statement(qid, sf=0.01).sql
    expected = tpch_plain(tpch, sql)

    first = cs.sql(sql)
    assert_same_rows(first.collect(), expected)
    summary = cs.last_query_summary()
    assert summary.get("fallback") is None, cs.explain(first)
    assert summary.get("operators_cached", 0) >= 1, cs.explain(first)

    for _ in range(2):  # second and third occurrence are served from the cache
        again = cs.sql(sql)
        assert_same_rows(again.collect(), expected)
        assert cs.last_query_summary().get("operators_reused", 0) >= 1, cs.explain(again)


def tpch_plain(spark, sql):
    return spark.sql(sql).collect()


@pytest.mark.parametrize("qid", [10, 18])
def test_overlapping_variants_reuse_shared_subtrees(tpch, cs, qid):
    """orig then v60 make the shared subtrees recur (and get cached); v30 then reuses them.

    Q18 also holds one subtree twice in one plan: it must be written once and read twice.
    """
    for variant in ("orig", "v60", "v30", "v60"):
        sql = queries.statement(qid, variant, sf=0.01).sql
        df = cs.sql(sql)
        assert_same_rows(df.collect(), tpch_plain(tpch, sql))
        assert cs.last_query_summary().get("fallback") is None, cs.explain(df)
        if variant == "v30":
            assert cs.last_query_summary().get("operators_reused", 0) >= 1, cs.explain(df)
