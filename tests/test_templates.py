"""Estimates of first-seen operators from their template: the same operators run under other
literal values (criss.qtree.fingerprint's template key). On a stream of drifting parameters
every statement after its template's first is new, and one learned input rate priced them
all: TPC-H Q1 spends 4 s on the bytes Q6 reads in 0.3 s."""

from __future__ import annotations

import pytest

import criss
from criss.policies import get_policy
from criss.policies.decisions import CachingRules, QueryFacts, decide_caching
from criss.policies.reasons import CACHE, SKIP, describe
from criss.qtree import QTree, fingerprint_tree
from criss.qtree.canonical import ATTRIBUTE, LITERAL
from criss.qtree.fingerprint import TEMPLATE, operator_digest, operator_digests
from criss.qtree.plan import Expr, PlanNode
from criss.qtree.rewrite import result_node
from criss.qtree.templates import TemplateRecurrence, TemplateStats
from criss.qtree.tree import NodeStats

MB = 1 << 20
_EXPR = "org.apache.spark.sql.catalyst.expressions."


def _literal(value, data_type="integer") -> Expr:
    return Expr(LITERAL, (("dataType", data_type), ("value", value)), ())


def _filtered(value, column: int = 1, data_type="integer") -> PlanNode:
    """Aggregate(Filter[column < value](relation))."""
    column_ref = Expr(ATTRIBUTE, (("exprId", (("id", column),)),), ())
    condition = Expr(_EXPR + "LessThan", (), (column_ref, _literal(value, data_type)))
    leaf = PlanNode("LogicalRelation", {"table": "t"}, relation={"bytes": 240 * MB})
    where = PlanNode("Filter", {"condition": condition}, (leaf,))
    return fingerprint_tree(PlanNode("Aggregate", {"groupingExpressions": []}, (where,)))


def test_other_values_share_a_template_key_and_nothing_else_does():
    one, other = _filtered(10), _filtered(20)
    assert one.fingerprint != other.fingerprint
    assert one.extra[TEMPLATE] == other.extra[TEMPLATE]
    # the leaf has no literal: its key differs from its fingerprint, as every key does
    assert (
        one.children[0].children[0].extra[TEMPLATE] == other.children[0].children[0].extra[TEMPLATE]
    )
    # another column, or another type of value, is other work
    assert _filtered(10, column=2).extra[TEMPLATE] != one.extra[TEMPLATE]
    assert _filtered("10", data_type="string").extra[TEMPLATE] != one.extra[TEMPLATE]


def test_an_operator_without_literals_is_serialized_once_for_both_digests():
    aggregate, where = _filtered(10), _filtered(10).children[0]
    for node in (aggregate, where, where.children[0]):
        exact, template = operator_digests(node)
        assert exact == operator_digest(node)
        assert template == operator_digest(node, values=False)
    # only the Filter holds a literal: its digests differ, the others' are one text
    assert operator_digests(where)[0] != operator_digests(where)[1]
    assert operator_digests(aggregate)[0] == operator_digests(aggregate)[1]


def test_the_qtree_hands_back_the_medians_of_a_templates_measured_runs(tmp_path):
    qtree = QTree(tmp_path / "qtree.db")
    runs = [(10, 1.0, 100), (20, 3.0, 300), (30, 2.0, 900)]
    for value, texec, size in runs:
        tree = _filtered(value)
        qtree.observe(tree)
        qtree.record_stats(tree.fingerprint, texec=texec, size_bytes=size, rows=1)
    qtree.observe(_filtered(20))  # a repeat of one value
    unmeasured = _filtered(40)
    qtree.observe(unmeasured)  # seen, never measured: not one of its own template's runs
    found = qtree.template_statistics([unmeasured.extra[TEMPLATE], "no-such-key"])
    assert found == {unmeasured.extra[TEMPLATE]: TemplateStats(2.0, 300, 3)}
    # the other values' queries: four, one of them a repeat; its own reference is not counted
    recurrence = qtree.template_recurrence(unmeasured.fingerprint, unmeasured.extra[TEMPLATE])
    assert recurrence == TemplateRecurrence(queries=4, repeats=1)
    assert qtree.template_recurrence(unmeasured.fingerprint, "no-such-key") is None
    qtree.close()


def _stats(fp: str, ref: int = 1) -> NodeStats:
    return NodeStats(fp, "op", ref, 0.0, 100.0)


def _query() -> PlanNode:
    leaf = PlanNode(
        "LogicalRelation", {}, path=(0, 0), fingerprint="rel", relation={"bytes": 240 * MB}
    )
    where = PlanNode("Filter", {}, (leaf,), (0,), fingerprint="filt")
    return PlanNode("Aggregate", {"groupingExpressions": ["g"]}, (where,), (), fingerprint="agg")


def _rules(**changes) -> CachingRules:
    base = dict(policy=get_policy("criss"), disk_bandwidth=100e6, start_time=0.0, scan_rate=64e6)
    return CachingRules(**{**base, **changes})


def test_a_first_seen_result_is_valued_at_what_its_template_took_under_other_values():
    unseen = {fp: _stats(fp) for fp in ("agg", "filt")}
    by_bytes = decide_caching(_query(), QueryFacts(unseen, set()), _rules())[()]
    # 240 MB at 64 MB/s: a heavy query, and a result of 2.4 MB worth caching on that guess
    assert by_bytes.action == CACHE and by_bytes.numbers["estimated_texec"] > 3.5
    assert "template_measured" not in by_bytes.numbers

    # its template's runs took 0.3 s for 40 MB results: not worth writing on first sight
    templates = {"agg": TemplateStats(texec=0.3, size_bytes=40 * MB, measured=3)}
    got = decide_caching(_query(), QueryFacts(unseen, set(), templates=templates), _rules())[()]
    assert got.action == SKIP and got.reason == "eager_no_benefit"
    assert got.numbers["estimated_texec"] == 0.3
    assert got.numbers["estimated_size"] == 40 * MB
    assert got.numbers["template_measured"] == 3 and "stages" not in got.numbers
    assert "as 3 runs of its template under other values measured" in describe(got)


def test_a_template_says_nothing_of_an_operator_over_what_the_cache_serves():
    unseen = {fp: _stats(fp) for fp in ("agg", "filt")}
    templates = {"agg": TemplateStats(texec=0.3, size_bytes=40 * MB, measured=3)}
    facts = QueryFacts(unseen, {(0,)}, templates=templates)
    got = decide_caching(_query(), facts, _rules())[()]
    assert "template_measured" not in got.numbers and got.numbers["scanned_bytes"] == 0


def test_an_operator_whose_template_ran_cheaply_is_not_worth_a_job():
    seen_twice = {fp: _stats(fp, ref=2) for fp in ("agg", "filt")}
    templates = {"agg": TemplateStats(texec=0.05, size_bytes=MB, measured=2)}
    got = decide_caching(_query(), QueryFacts(seen_twice, set(), templates=templates), _rules())
    assert got[()].action == SKIP and got[()].reason == "below_min_texec_template"
    text = describe(got[()])
    assert "2 runs of its template" in text and "< min_texec 0.2s" in text
    # priced by its bytes instead, it is cached to be measured
    without = decide_caching(_query(), QueryFacts(seen_twice, set()), _rules())
    assert without[()].action == CACHE and without[()].reason == "collect_statistics"


def test_a_template_whose_values_never_recur_is_not_cached_on_first_sight():
    """The home's recent queries repeat often enough for a first-seen result to be cached
    eagerly; its template's queries under other values never repeated one, and after enough
    of them the template's share, not the home's, decides. (A 4 s query whose caching adds
    12 ms is worth caching at a chance of a repeat of one in a hundred: it takes about a
    hundred such queries.)"""
    unseen = {fp: _stats(fp) for fp in ("agg", "filt")}
    rules = _rules(expected_repeats=0.3)
    alone = decide_caching(_query(), QueryFacts(unseen, set()), rules)[()]
    assert alone.action == CACHE and alone.numbers["expected_repeats"] == 0.3
    assert "repeats expected of a first-seen result here" in describe(alone)

    def decided(queries: int, repeats: int):
        recurrences = {"agg": TemplateRecurrence(queries, repeats)}
        facts = QueryFacts(unseen, set(), recurrences=recurrences)
        return decide_caching(_query(), facts, rules)[()]

    never = decided(queries=100, repeats=0)
    assert never.action == SKIP and never.reason == "eager_no_benefit"
    # the home's share (0.3 / 1.3) counted as 2 of 102 queries: 0.0045 expected
    assert never.numbers["expected_repeats"] == pytest.approx(0.0045, abs=1e-4)
    assert "0 of its template's 100 queries under other values were repeats" in describe(never)
    # after 8 of them a 4 s query is still worth its 12 ms at the 0.048 repeats expected
    few = decided(queries=8, repeats=0)
    assert few.action == CACHE and few.numbers["expected_repeats"] == pytest.approx(
        0.0484, abs=1e-3
    )
    # a template whose values come back is cached as before, and more eagerly than the home
    often = decided(queries=8, repeats=4)
    assert often.action == CACHE and often.numbers["expected_repeats"] > 0.3
    # one other query says little: the home's share still weighs two
    once = decided(queries=1, repeats=0)
    assert 0.1 < once.numbers["expected_repeats"] < 0.3


#: A parameter no rule reuses across values (not a range or IN list on a column).
STATEMENT = (
    "select l_returnflag, sum(l_extendedprice) as s from lineitem "
    "where pmod(l_orderkey, {}) = 0 group by 1"
)


@pytest.mark.spark
def test_a_new_value_of_a_measured_query_is_estimated_from_what_it_took(tpch, tmp_path):
    with criss.session(tpch, home=str(tmp_path / "h")) as cs:
        cs.sql(STATEMENT.format(3)).collect()
        cs.settle_harvests()  # the action's statistics, read off its executed plan
        first = result_node(cs.canonical_tree(cs.last_record.captured))
        measured = cs.qtree.get(first.fingerprint)
        assert measured is not None and measured.has_stats  # from the user's own action

        df = cs.sql(STATEMENT.format(5))
        second = result_node(cs.canonical_tree(cs.last_record.captured))
        assert second.fingerprint != first.fingerprint
        assert second.extra[TEMPLATE] == first.extra[TEMPLATE]
        (decision,) = [
            o.decision for o in cs.last_record.operators if o.fingerprint == second.fingerprint
        ]
        assert decision.numbers["template_measured"] == 1
        assert decision.numbers["estimated_texec"] == pytest.approx(measured.texec)
        assert decision.numbers["estimated_size"] == pytest.approx(measured.size_bytes)
        assert "1 runs of its template under other values measured" in cs.explain(df)
        assert sorted(df.collect()) == sorted(tpch.sql(STATEMENT.format(5)).collect())


@pytest.mark.spark
def test_a_drifting_templates_first_sight_expects_its_own_repeats_not_the_homes(tpch, tmp_path):
    """The home keeps repeating one query while another template comes back under ever new
    values: a first sight of the latter expects the repeats its own queries had."""
    repeated = "select l_linestatus, count(*) as n from lineitem group by 1"
    with criss.session(tpch, home=str(tmp_path / "h")) as cs:
        for modulus in range(4):
            cs.sql(repeated).collect()
            df = cs.sql(STATEMENT.format(modulus + 3))
            rows = df.collect()
        result = result_node(cs.canonical_tree(cs.last_record.captured))
        (decision,) = [
            o.decision for o in cs.last_record.operators if o.fingerprint == result.fingerprint
        ]
        numbers = decision.numbers
        assert numbers["template_queries"] == 3 and numbers["template_repeats"] == 0
        # three repeats in eight queries: the home alone would expect about two in three
        assert cs.learning.expected_repeats > 0.5
        assert numbers["expected_repeats"] < cs.learning.expected_repeats / 2
        assert "0 of its template's 3 queries under other values were repeats" in cs.explain(df)
        assert sorted(rows) == sorted(tpch.sql(STATEMENT.format(6)).collect())
