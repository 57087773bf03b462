"""The bridge's view of a plan's joins, read with few py4j calls, against the JVM itself."""

from __future__ import annotations

import json

import pytest

import criss
from criss.bridge.capture import PlanNodes
from criss.bridge.joins import JoinPlan, _expr_id

pytestmark = pytest.mark.spark

#: Joins of every kind Catalyst keeps in an optimized plan (an EXISTS under OR becomes an
#: ExistenceJoin), over columns whose names hold the characters attribute strings use.
JOINS = """
select `a#1, b`, `naïve`, `x#y#`, r_name
from (select n_nationkey as `a#1, b`, n_name as `naïve`, cast(n_regionkey as bigint) as `x#y#`
      from nation) t
left join region on `x#y#` = r_regionkey
where exists (select 1 from customer where c_nationkey = `a#1, b` and c_acctbal > 9000)
   or `naïve` like 'A%'
   or `a#1, b` not in (select s_nationkey from supplier where s_acctbal < -990)
"""


@pytest.fixture
def cs(tpch, tmp_path):
    session = criss.session(tpch, home=str(tmp_path / "home"))
    yield session
    session.close()


def _jvm_columns(plan):
    output = plan.output()
    return tuple(
        (str(a.name()), json.loads(a.dataType().json()), int(a.exprId().id()))
        for a in (output.apply(i) for i in range(output.size()))
    )


def test_joins_listed_from_the_captured_tree_are_the_jvm_plans_joins(tpch, cs):
    df = tpch.sql(JOINS)
    captured = cs.bridge.capture(df)
    from_tree = JoinPlan(cs.bridge, df, captured.nodes, captured.tree)
    walked = JoinPlan(cs.bridge, df, PlanNodes(captured.root))  # every node asked of the JVM
    assert len(walked.sites) >= 3
    assert [s.path for s in from_tree.sites] == [s.path for s in walked.sites]
    kinds = set()
    for site in from_tree.sites:
        node = walked.node_at(site.path)
        assert str(node.nodeName()) == "Join"
        kind = node.joinType()
        existence = str(kind.getClass().getSimpleName()) == "ExistenceJoin"  # its sql throws
        assert site.join_type == ("EXISTENCE" if existence else str(kind.sql()))
        kinds.add(site.join_type)
        for side, jvm_side in ((site.left, node.left()), (site.right, node.right())):
            assert side.columns == _jvm_columns(jvm_side)
    assert {"LEFT OUTER", "EXISTENCE"} <= kinds, kinds
    # a join of no kind Criss rewrites is passed over, not a failure of every join's rewrite
    cs.sql(JOINS).collect()
    assert cs.last_query_summary().get("join_failures", 0) == 0
    names = {c[0] for s in from_tree.sites for c in s.left.columns}
    assert {"a#1, b", "naïve", "x#y#"} <= names


def test_an_attribute_string_of_another_shape_yields_no_expr_id():
    assert _expr_id("l_orderkey#12L", "l_orderkey") == 12
    assert _expr_id("x#y##7", "x#y#") == 7
    assert _expr_id("a#1, b#40", "a#1, b") == 40
    assert _expr_id("l_orderkey#12L", "l_partkey") is None
    assert _expr_id("name#", "name") is None
