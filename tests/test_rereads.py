"""Whether a measured operator under a query's result is read again (criss.planner.learning):
each one cached by its benefit is pending until a query reads its entry or
``REREAD_WINDOW`` queries pass, the share of them read counted in the home; where that
share says caching one in the user's action would not pay, it is not cached
(``rarely_read_again``), however often it was seen."""

from __future__ import annotations

from contextlib import closing

import pytest
from rowcompare import assert_same_rows

import criss
from criss.planner.learning import REREAD_WINDOW, Learning
from criss.policies import get_policy
from criss.policies.decisions import (
    CACHE,
    IN_ACTION_INTERMEDIATE_SHARE,
    SKIP,
    CachingRules,
    QueryFacts,
    decide_caching,
)
from criss.qtree.plan import PlanNode
from criss.qtree.tree import NodeStats, QTree

MB = 1 << 20


def _query() -> PlanNode:
    """Aggregate(Join(Filter(orders), lineitem)): the result is the Aggregate at the root."""
    orders = PlanNode(
        "Filter",
        {},
        (PlanNode("LogicalRelation", {}, path=(0, 0, 0), relation={"bytes": 40 * MB}),),
        (0, 0),
        fingerprint="filt",
    )
    lineitem = PlanNode("LogicalRelation", {}, path=(0, 1), relation={"bytes": 200 * MB})
    join = PlanNode("Join", {}, (orders, lineitem), (0,), fingerprint="join")
    return PlanNode("Aggregate", {}, (join,), (), fingerprint="agg")


def _stats(fp, ref, texec, size):
    return NodeStats(fp, "op", ref, 0.0, 100.0, texec, size, None, None)


def _decide(**rules):
    base = dict(
        policy=get_policy("criss"),
        disk_bandwidth=100e6,
        start_time=0.0,
        scan_rate=64e6,
        in_action_build_share=0.5,  # the user's action builds what is cached
    )
    stats = {
        "agg": _stats("agg", 2, 0.05, 1000),
        "join": _stats("join", 2, 2.0, MB),
        "filt": _stats("filt", 2, 0.1, MB),
    }
    got = decide_caching(_query(), QueryFacts(stats, set()), CachingRules(**{**base, **rules}))
    return got[(0,)], got[()]


def test_a_measured_operator_rarely_read_again_here_is_not_cached_by_the_action():
    join, _ = _decide()  # a new home: one read expected
    assert join.action == CACHE and join.reason == "largest_benefit"

    join, result = _decide(reread_share=0.05, expected_rereads=0.05)
    assert join.action == SKIP and join.reason == "rarely_read_again"
    numbers = join.numbers
    assert numbers["benefit"] > 0  # the benefit model alone would cache it
    assert numbers["expected_rereads"] == 0.05
    assert numbers["in_action_seconds"] == pytest.approx(IN_ACTION_INTERMEDIATE_SHARE * 2.0)
    # 0.05 × (2.0 s − reading 1 MB) − writing it − the action's added seconds
    assert numbers["expected_gain"] == pytest.approx(
        0.05 * (2.0 - MB / 100e6) - MB * 1.5 / 100e6 - IN_ACTION_INTERMEDIATE_SHARE * 2.0
    )
    # the result itself is what the user's action returns: never vetoed so
    assert result.reason != "rarely_read_again"

    # where Criss's own job would write it, the action takes no longer: no veto
    join, _ = _decide(reread_share=0.05, expected_rereads=0.05, in_action_build_share=0.0)
    assert join.reason == "largest_benefit"
    # reads expected above the share of its Texec the action loses pay for it
    join, _ = _decide(reread_share=0.3, expected_rereads=0.43)
    assert join.reason == "largest_benefit"


def test_each_cached_operator_counts_as_read_again_or_not_within_the_window(tmp_path):
    with closing(QTree(tmp_path / "catalog.db")) as qtree:
        learning = Learning(qtree)
        assert learning.reread_share == 0.5 and learning.expected_rereads == 1.0
        learning.learn_rereads(["a", "b"], [])
        learning.learn_rereads([], ["a", "other"])  # a read: counted as read again
        before = learning.reread_share
        assert before > 0.5
        for _ in range(REREAD_WINDOW - 1):
            learning.learn_rereads([], [])
        assert learning.reread_share == before  # b still pending
        learning.learn_rereads([], [])  # b: not read within the window
        assert learning.reread_share < before
        learning.learn_rereads([], ["b"])  # too late: counted already
        assert learning.reread_share < before
    with closing(QTree(tmp_path / "catalog.db")) as qtree:  # kept in the home
        assert Learning(qtree).reread_share == pytest.approx(learning.reread_share)


def test_shared_bases_count_their_reads_apart_from_other_operators(tmp_path):
    """A base is read only where a query changes something above it: how often that
    happens is its own rate, not the one of the operators cached by their benefit."""
    with closing(QTree(tmp_path / "catalog.db")) as qtree:
        learning = Learning(qtree)
        assert learning.base_read_share == 0.5 and learning.expected_base_reads == 1.0
        learning.learn_base_reads(["base"], [])
        learning.learn_rereads(["operator"], [])
        learning.learn_rereads([], ["operator"])
        assert learning.reread_share > 0.5 and learning.base_read_share == 0.5
        for _ in range(REREAD_WINDOW + 1):
            learning.learn_base_reads([], ["operator"])  # not the base's entry
        assert learning.base_read_share < 0.5 and learning.reread_share > 0.5
        learning.learn_base_reads(["next"], [])
        learning.learn_base_reads([], ["next"])
        # one read of two (decayed a little), and one in two assumed
        assert learning.base_read_share == pytest.approx(0.5, abs=0.01)
    with closing(QTree(tmp_path / "catalog.db")) as qtree:  # kept in the home
        assert Learning(qtree).base_read_share == pytest.approx(learning.base_read_share)


SEGMENT_REVENUE = (
    "select c_mktsegment, count(*) as lines, sum(l_extendedprice) as revenue "
    "from lineitem join orders on l_orderkey = o_orderkey "
    "join customer on o_custkey = c_custkey "
    "where o_orderstatus = 'F' and c_mktsegment = '{}' group by c_mktsegment"
)


def _reasons(cs) -> list[str]:
    return [o.decision.reason for o in cs.last_record.operators]


def test_an_operator_seen_twice_is_cached_unless_such_ones_are_rarely_read_here(tpch, tmp_path):
    with criss.session(tpch, home=str(tmp_path / "new"), min_texec=0.0) as cs:
        cs.sql(SEGMENT_REVENUE.format("BUILDING")).collect()
        cs.report()
        cs.sql(SEGMENT_REVENUE.format("MACHINERY")).collect()
        assert "largest_benefit" in _reasons(cs)  # the join of lineitem and orders
        cached = cs.last_query_summary()["operators_cached_in_action"]
        assert cached >= 2  # it, and the result
        cs.report()
        third = cs.sql(SEGMENT_REVENUE.format("AUTOMOBILE"))
        assert_same_rows(third.collect(), tpch.sql(SEGMENT_REVENUE.format("AUTOMOBILE")).collect())
        assert cs.last_query_summary()["operators_reused"] >= 1
        assert cs.learning.reread_share > 0.5  # read again: counted

    with criss.session(tpch, home=str(tmp_path / "taught"), min_texec=0.0) as cs:
        for n in range(30):  # as a stream whose operators seen twice never came back
            cs.learning.learn_rereads([f"never-read-{n}"], [])
            cs.learning.learn_rereads([], [])
        assert cs.learning.expected_rereads < 0.2
        cs.sql(SEGMENT_REVENUE.format("BUILDING")).collect()
        cs.report()
        planned = cs.sql(SEGMENT_REVENUE.format("MACHINERY"))
        assert "largest_benefit" not in _reasons(cs)
        assert "rarely_read_again" in _reasons(cs)
        assert "were read by a later query" in cs.explain(planned)
        assert_same_rows(planned.collect(), tpch.sql(SEGMENT_REVENUE.format("MACHINERY")).collect())
        assert cs.last_query_summary()["operators_cached_in_action"] == 1  # the result only
