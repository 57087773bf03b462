"""Parameter-free aggregates (criss.qtree.parameters): which operators of a query no value
it chose reaches, how often they come back in other statements (measured in the home), and
that a first-seen one is cached by the user's action when that pays, then served to the
next statement with other values (TPC-H Q18's per-order sum under another threshold)."""

from __future__ import annotations

from rowcompare import assert_same_rows

import criss
from criss.policies import get_policy
from criss.policies.decisions import CACHE, SKIP, CachingRules, QueryFacts, decide_caching
from criss.qtree.canonical import ATTRIBUTE
from criss.qtree.parameters import parameter_free_intermediates, parameter_free_paths
from criss.qtree.plan import Expr, PlanNode
from criss.qtree.tree import NodeStats

_EXPR = "org.apache.spark.sql.catalyst.expressions."
MB = 1 << 20


def _column(ordinal: int) -> Expr:
    return Expr(ATTRIBUTE, (("exprId", ordinal),), ())


def _above(value: str) -> Expr:
    literal = Expr(_EXPR + "Literal", (("dataType", "long"), ("value", value)), ())
    return Expr(_EXPR + "GreaterThan", (), (_column(1), literal))


def _same(left: int, right: int) -> Expr:
    return Expr(_EXPR + "EqualTo", (), (_column(left), _column(right)))


def _relation(path, size=100 * MB):
    return PlanNode(
        "LogicalRelation", {}, path=path, fingerprint=f"rel{path}", relation={"bytes": size}
    )


def _node(op, path, *children, **args):
    return PlanNode(
        op, args, tuple(children), path, fingerprint=op.lower() + "".join(map(str, path))
    )


def _q18_shape(having: Expr) -> PlanNode:
    """Join(orders, Filter[having](Aggregate(Project(lineitem)))): the orders whose
    per-order sum passes a threshold, the join being the result."""
    aggregate = _node("Aggregate", (1, 0), _node("Project", (1, 0, 0), _relation((1, 0, 0, 0))))
    having_filter = _node("Filter", (1,), aggregate, condition=having)
    return _node("Join", (), _relation((0,)), having_filter, condition=_same(0, 1))


def test_an_aggregate_no_literal_filters_is_parameter_free_and_what_filters_it_is_not():
    tree = _q18_shape(_above("300"))
    free = parameter_free_paths(tree)
    assert (1, 0) in free and (1, 0, 0) in free  # the aggregate and its projection
    assert (1,) not in free and () not in free  # the HAVING's literal, and all above it
    assert [n.path for n in parameter_free_intermediates(tree)] == [(1, 0)]

    # a literal below the aggregate makes it a parameter's: nothing is free above it
    filtered = _node("Filter", (1, 0, 0), _relation((1, 0, 0, 0)), condition=_above("5"))
    aggregate = _node("Aggregate", (1, 0), filtered)
    tree = _node(
        "Join", (), _relation((0,)), _node("Filter", (1,), aggregate), condition=_same(0, 1)
    )
    assert parameter_free_intermediates(tree) == []


def test_a_free_join_is_looked_into_and_a_limit_or_subquery_is_not_free():
    aggregate = _node("Aggregate", (0, 0), _relation((0, 0, 0)))
    join = _node("Join", (0,), aggregate, _relation((0, 1)), condition=_same(0, 1))
    tree = _node("Filter", (), join, condition=_above("1"))
    # the join aggregates nothing itself (its rows are unbounded): its aggregate is the one
    assert [n.path for n in parameter_free_intermediates(tree)] == [(0, 0)]

    # a limit keeps a number of rows the query chose; the aggregate under it is free
    limited = _node("GlobalLimit", (0,), _node("Aggregate", (0, 0), _relation((0, 0, 0))))
    tree = _node("Filter", (), limited, condition=_above("1"))
    assert (0,) not in parameter_free_paths(tree)
    assert [n.path for n in parameter_free_intermediates(tree)] == [(0, 0)]

    subquery = Expr(_EXPR + "ScalarSubquery", (), ())
    scoped = _node("Aggregate", (0,), _relation((0, 0)), aggregateExpressions=[subquery])
    assert (0,) not in parameter_free_paths(_node("Filter", (), scoped, condition=_above("1")))


def _stats(fp, ref, texec=None, size=None):
    return NodeStats(fp, "op", ref, 0.0, 100.0, texec, size, None, None)


def _rules(**changes) -> CachingRules:
    """A new home's rules where the action computes what is cached (the defaults else)."""
    fixed = dict(policy=get_policy("criss"), disk_bandwidth=100e6, start_time=0.0, scan_rate=64e6)
    return CachingRules(**fixed, **{"eager_parameter_free": True, **changes})


def _facts(tree, stats) -> QueryFacts:
    free = [n.path for n in parameter_free_intermediates(tree)]
    return QueryFacts(stats, set(), parameter_free=free)


def _first_sight(**rules):
    tree = _q18_shape(_above("300"))
    stats = {n.fingerprint: _stats(n.fingerprint, 1) for n in tree.walk()}
    return decide_caching(tree, _facts(tree, stats), _rules(**rules))


def test_a_first_seen_free_aggregate_is_cached_when_its_measured_reuses_pay():
    got = _first_sight()
    decision = got[(1, 0)]
    assert decision.action == CACHE and decision.reason == "eager_parameter_free"
    assert decision.source == "estimate" and decision.numbers["expected_reuses"] == 1.0
    assert decision.numbers["expected_gain"] > 0
    assert got[(1,)].reason == "below_min_ref"  # the HAVING: its threshold is the query's

    # where such aggregates were measured not to come back, guessing does not pay
    rare = _first_sight(expected_parameter_free_reuses=0.01)[(1, 0)]
    assert rare.action == SKIP and rare.reason == "eager_parameter_free_no_benefit"
    assert rare.numbers["expected_gain"] < 0
    # and never where a job of Criss's own would compute it
    assert _first_sight(eager_parameter_free=False)[(1, 0)].reason == "below_min_ref"


def test_a_measured_operator_of_its_branch_outranks_a_guess():
    tree = _q18_shape(_above("300"))
    stats = {n.fingerprint: _stats(n.fingerprint, 1) for n in tree.walk()}
    stats["filter1"] = _stats("filter1", 3, texec=5.0, size=1000)  # the HAVING, measured
    got = decide_caching(tree, _facts(tree, stats), _rules())
    assert got[(1,)].action == CACHE and got[(1,)].reason == "largest_benefit"
    assert got[(1, 0)].action == SKIP and got[(1, 0)].reason == "outranked_unmeasured"


PER_ORDER = (
    "select o_orderkey, o_totalprice from orders where o_orderkey in "
    "(select l_orderkey from lineitem group by l_orderkey having sum(l_quantity) > {})"
)


def _decisions(cs, op):
    return [o.decision for o in cs.last_record.operators if o.op == op]


def test_a_first_seen_per_order_sum_is_cached_by_the_action_and_serves_another_threshold(
    tpch, tmp_path
):
    with criss.session(tpch, home=str(tmp_path / "h"), min_texec=0.0) as cs:
        assert cs.learning.expected_parameter_free_reuses == 1.0  # a new home's prior
        planned = cs.sql(PER_ORDER.format(250))
        assert [d.reason for d in _decisions(cs, "Aggregate")] == ["eager_parameter_free"]
        assert "no value a query chose selects its rows" in cs.explain(planned)
        first = planned.collect()
        summary = cs.last_query_summary()
        assert summary["operators_cached_in_action"] >= 2  # the aggregate, and the result
        assert summary["parameter_free_cached_on_first_sight"] == 1
        assert summary.get("operators_reused", 0) == 0
        assert_same_rows(first, tpch.sql(PER_ORDER.format(250)).collect())
        after_one = cs.learning.expected_parameter_free_reuses
        assert after_one < 1.0  # counted: not seen before

        second = cs.sql(PER_ORDER.format(200))
        assert_same_rows(second.collect(), tpch.sql(PER_ORDER.format(200)).collect())
        summary = cs.last_query_summary()
        assert summary["operators_reused"] >= 1 and summary["bytes_read"] > 0
        assert cs.learning.expected_parameter_free_reuses > after_one  # seen before: counted
        assert cs.learning.new_values_share > 0.5  # its template came back under new values
        assert [d.reason for d in _decisions(cs, "Aggregate")] == ["cached_entry"]


def test_where_free_aggregates_never_come_back_they_are_not_cached_on_a_guess(tpch, tmp_path):
    with criss.session(tpch, home=str(tmp_path / "h"), min_texec=0.0) as cs:
        for _ in range(40):  # as a stream of statements sharing none would teach it
            cs.learning.learn_parameter_free(False)
        assert cs.learning.expected_parameter_free_reuses < 0.05
        cs.sql(PER_ORDER.format(250)).collect()
        (decision,) = _decisions(cs, "Aggregate")
        assert decision.reason == "eager_parameter_free_no_benefit"
        assert cs.last_query_summary()["operators_cached_in_action"] == 1  # the result only


def test_where_statements_only_repeat_free_aggregates_are_not_cached_on_a_guess(tpch, tmp_path):
    repeated = "select n_regionkey, count(*) from nation group by n_regionkey"
    with criss.session(tpch, home=str(tmp_path / "h"), min_texec=0.0) as cs:
        for _ in range(20):  # a stream re-running its statements, as Random-QS does
            cs.sql(repeated).collect()
        assert cs.last_query_summary()["operators_reused"] >= 1
        assert cs.learning.new_values_share < 0.1  # returning templates came back unchanged
        assert cs.learning.expected_parameter_free_reuses < 0.1  # no chance of its own yet
        planned = cs.sql(PER_ORDER.format(250))
        assert "came under new values" in cs.explain(planned)
        assert_same_rows(planned.collect(), tpch.sql(PER_ORDER.format(250)).collect())
        (decision,) = _decisions(cs, "Aggregate")
        assert decision.reason == "eager_parameter_free_no_benefit"
        assert cs.last_query_summary()["operators_cached_in_action"] == 1  # the result only
