"""What to cache, decided by pure functions over plain trees and numbers (no Spark): one
decision per operator with a reason code and the numbers it used, rendered in one place."""

from __future__ import annotations

import json

import pytest
from test_canonical_rules import with_paths

from criss.policies import get_policy
from criss.policies.decisions import FIRST_SIGHT_SECONDS, CachingRules, QueryFacts, decide_caching
from criss.policies.first_sight import BOUNDED_COLUMN_BYTES
from criss.policies.reasons import CACHE, ESTIMATE, REASONS, REUSE, SKIP, Decision, describe
from criss.qtree.lineage import max_rows
from criss.qtree.plan import Expr, PlanNode
from criss.qtree.tree import NodeStats
from criss.records import OperatorRecord, OperatorStats, QueryRecord, Served, operators_from_json

MB = 1 << 20


def _relation(path, size):
    return PlanNode(
        "LogicalRelation", {}, path=path, fingerprint=f"rel{path}", relation={"bytes": size}
    )


def _query() -> PlanNode:
    """Aggregate(Join(Filter(orders), lineitem)): the result is the Aggregate at the root."""
    orders = PlanNode("Filter", {}, (_relation((0, 0, 0), 40 * MB),), (0, 0), fingerprint="filt")
    join = PlanNode("Join", {}, (orders, _relation((0, 1), 200 * MB)), (0,), fingerprint="join")
    return PlanNode("Aggregate", {}, (join,), (), fingerprint="agg")


def _stats(fp, ref, texec=None, size=None, rows=None, source=None, at=100.0):
    return NodeStats(fp, "op", ref, 0.0, at, texec, size, rows, source)


def _rules(**changes) -> CachingRules:
    base = dict(
        policy=get_policy("criss"),
        disk_bandwidth=100e6,
        start_time=0.0,
        scan_rate=64e6,
        min_ref=2,
        min_texec=0.2,
        eager_results=True,
    )
    return CachingRules(**{**base, **changes})


def _decide(stats, reused=(), **rules):
    return decide_caching(_query(), QueryFacts(stats, set(reused)), _rules(**rules))


def test_each_branch_caches_its_largest_benefit_and_says_why_the_others_lost():
    stats = {
        "agg": _stats("agg", 3, texec=0.5, size=1000),
        "join": _stats("join", 3, texec=9.0, size=MB),
        "filt": _stats("filt", 3, texec=1.0, size=MB),
    }
    got = _decide(stats)
    assert got[(0,)].action == CACHE and got[(0,)].reason == "largest_benefit"
    assert got[(0,)].numbers["texec"] == 9.0 and got[(0,)].source == "measured"
    assert got[()] == Decision(SKIP, "outranked", got[()].numbers, "measured")
    assert got[()].numbers["benefit"] < got[(0,)].numbers["benefit"]
    assert got[(0, 0, 0)].reason == "not_storable"  # a relation is never stored


def test_storing_is_priced_at_the_write_bandwidth_measured_once_there_is_one():
    """The paper's store term, size/bw once: with the writes of results measured slower
    than the disk (encoding and all), a recurring operator whose reads would save little
    no longer pays for being written; its reads are still priced at the disk's bandwidth."""
    stats = {
        "agg": _stats("agg", 1, texec=0.05, size=1000),
        "join": _stats("join", 2, texec=1.0, size=10_000_000),
        "filt": _stats("filt", 1, texec=0.5, size=MB),
    }
    # 2 × (1.0 − 0.1) − 0.1 at the disk's 100 MB/s
    unmeasured = _decide(stats)[(0,)]
    assert unmeasured.action == CACHE and unmeasured.numbers["write_bandwidth"] == 100e6
    assert unmeasured.numbers["benefit"] == pytest.approx(100 * 1.7)
    # 2 × (1.0 − 0.1) − 2.0: writes measured at 5 MB/s
    measured = _decide(stats, write_bandwidth=5e6)[(0,)]
    assert measured.action == SKIP and measured.reason == "no_benefit"
    assert measured.numbers["benefit"] == pytest.approx(100 * -0.2)
    assert "stored at 5e+06 B/s" in describe(measured)


def test_building_spark_cache_in_the_action_is_priced_under_the_result():
    """An operator under the result cached by the user's action makes the action build
    Spark's cache of its rows on the way, which costs it a share of writing them: a Join
    whose reads would save little no longer pays. The query's result (its rows are
    materialized for the user anyway) is priced at the write alone."""
    stats = {
        "agg": _stats("agg", 2, texec=0.25, size=10_000_000),
        "join": _stats("join", 2, texec=0.24, size=10_000_000),
        "filt": _stats("filt", 1, texec=0.5, size=MB),
    }
    # 2 × (0.24 − 0.1) − 0.2 written at 50 MB/s
    written = _decide(stats, write_bandwidth=50e6)
    assert written[(0,)].numbers["benefit"] == pytest.approx(100 * 0.08)
    # ... − 0.2 × 1.5 once building Spark's cache in the action is counted
    built = _decide(stats, write_bandwidth=50e6, in_action_build_share=0.5)
    join = built[(0,)]
    assert join.action == SKIP and join.reason == "no_benefit"
    assert join.numbers["benefit"] == pytest.approx(100 * -0.02)
    assert join.numbers["write_bandwidth"] == pytest.approx(50e6 / 1.5)
    assert "in the action included at 50% of writing it" in describe(join)
    # 2 × (0.25 − 0.1) − 0.2 for the result, with or without
    result = built[()]
    assert result.action == CACHE and result.numbers["benefit"] == pytest.approx(100 * 0.1)
    assert result.numbers == written[()].numbers


def test_an_operator_measured_cheaper_than_min_texec_is_cached_only_as_a_result():
    """Inside a query, reading back what takes 0.1 s to compute saves nothing: the read
    changes the plan Spark compiles. A whole result is still cached (a repeat runs no job)."""
    stats = {
        "agg": _stats("agg", 3, texec=0.15, size=1000),
        "join": _stats("join", 3, texec=0.1, size=1000),
        "filt": _stats("filt", 3, texec=0.05, size=1000),
    }
    got = _decide(stats)
    assert got[(0,)].action == SKIP and got[(0,)].reason == "cheap_to_compute"
    assert got[(0,)].numbers == {"texec": 0.1, "min_texec": 0.2}
    assert "cheaper to compute again than to read back" in describe(got[(0,)])
    assert got[()].action == CACHE and got[()].reason == "largest_benefit"
    assert _decide(stats, min_texec=0.05)[(0,)].reason == "outranked"  # judged by benefit again


def test_a_first_seen_result_is_cached_eagerly_on_an_estimate():
    got = _decide({fp: _stats(fp, 1) for fp in ("agg", "join", "filt")})
    assert got[()].action == CACHE and got[()].reason == "eager_result"
    assert got[()].source == ESTIMATE
    assert got[()].numbers["scanned_bytes"] == 240 * MB
    # two stages (the join's and the aggregate's exchanges) of fixed cost, and the input
    assert got[()].numbers["stages"] == 3
    assert got[()].numbers["estimated_texec"] == pytest.approx(3 * 0.1 + 240 * MB / 64e6)
    assert got[()].numbers["estimated_size"] == pytest.approx(240 * MB * 0.01)
    assert got[()].numbers["benefit"] > 0
    assert got[(0,)].reason == "below_min_ref" and got[(0,)].numbers["min_ref"] == 2
    # a filtered copy of one table waits until its rows are measured
    assert got[(0, 0)].reason == "unprojected_scan"
    lazy = _decide({fp: _stats(fp, 1) for fp in ("agg", "join", "filt")}, eager_results=False)
    assert lazy[()].action == SKIP and lazy[()].reason == "below_min_ref"


def test_an_estimate_below_min_texec_is_not_worth_a_job():
    got = _decide({fp: _stats(fp, 5) for fp in ("agg", "join", "filt")}, min_texec=60.0)
    assert {d.reason for p, d in got.items() if p in ((), (0,))} == {"below_min_texec"}
    assert got[()].numbers["min_texec"] == 60.0 and got[()].source == ESTIMATE
    assert "< min_texec 60.0s" in describe(got[()]) and "3 stages" in describe(got[()])


def test_an_operator_over_what_the_cache_serves_alone_has_no_stage_of_its_own():
    """TPC-H Q17's IS NOT NULL Filter over its served per-part aggregate, seen twice without
    statistics: it runs in the stage that reads the cache, so nothing is estimated to be
    saved by caching it (it was cached, a copy of the aggregate, on one stage's cost)."""
    aggregate = PlanNode(
        "Aggregate", {}, (_relation((0, 0, 0), 200 * MB),), (0, 0), fingerprint="agg"
    )
    check = PlanNode("Filter", {}, (aggregate,), (0,), fingerprint="filt")
    join = PlanNode("Join", {}, (check, _relation((1,), MB)), (), fingerprint="join")
    stats = {fp: _stats(fp, 2) for fp in ("agg", "filt", "join")}
    got = decide_caching(join, QueryFacts(stats, {(0, 0)}), _rules(stage_seconds=0.3))
    assert got[(0,)].reason == "below_min_texec" and got[(0,)].numbers["stages"] == 0
    # the join above still reads a table and shuffles
    assert got[()].numbers["stages"] == 2 and got[()].reason == "collect_statistics"
    # a result over the cached aggregate alone: its repeat would not read the aggregate
    result = decide_caching(check.with_(path=()), QueryFacts(stats, {(0,)}), _rules())
    assert result[()].numbers["stages"] == 1


def test_a_first_seen_result_is_cached_however_small_its_estimate():
    """A query over tiny tables: its estimate is far below min_texec, but serving a repeat
    saves Spark's whole per-query cost, so the benefit model alone judges the result.
    An operator inside the query would need a job of its own: min_texec still holds it."""
    tiny = {fp: _stats(fp, 1) for fp in ("agg", "join", "filt")}
    orders = PlanNode("Filter", {}, (_relation((0, 0, 0), 3000),), (0, 0), fingerprint="filt")
    join = PlanNode("Join", {}, (orders, _relation((0, 1), 2000)), (0,), fingerprint="join")
    small = PlanNode("Aggregate", {}, (join,), (), fingerprint="agg")
    cheap = decide_caching(small, QueryFacts(tiny, set()), _rules(stage_seconds=0.01))
    assert cheap[()].reason == "eager_result" and cheap[()].numbers["estimated_texec"] < 0.2
    assert cheap[(0,)].reason == "below_min_texec"
    slow = decide_caching(small, QueryFacts(tiny, set()), _rules(stage_seconds=0.4))
    assert slow[()].reason == "eager_result" and slow[()].numbers["estimated_texec"] >= 1.2
    assert slow[(0,)].reason == "below_min_ref"


def test_an_eager_result_goes_through_the_benefit_model():
    """A first-seen result whose estimated size would cost more to write and read back
    than computing it again is not cached eagerly."""
    unseen = {fp: _stats(fp, 1) for fp in ("agg", "join", "filt")}
    got = _decide(unseen, result_ratio=2.0)  # results twice their input: too big to pay
    assert got[()].action == SKIP and got[()].reason == "eager_no_benefit"
    assert got[()].numbers["benefit"] <= 0 and got[()].source == ESTIMATE
    assert "would not pay" in describe(got[()])


def _aggregate_over_query(grouping: list) -> PlanNode:
    """_query() with its Aggregate's grouping columns given (an empty list: one row)."""
    root = _query()
    return root.with_(args={"groupingExpressions": grouping, "aggregateExpressions": [1, 2]})


def test_a_first_seen_one_row_result_is_sized_by_its_shape_not_by_its_input():
    """The learned result ratio (result bytes per input byte) is an average over results of
    every size; a global aggregate over 240 MB is one row, and valued as one row it pays
    for itself where the ratio's 2.4 MB would not."""
    unseen = {fp: _stats(fp, 1) for fp in ("agg", "join", "filt")}
    rules = _rules(expected_repeats=0.12, disk_bandwidth=5e6)
    grouped = decide_caching(_aggregate_over_query(["g"]), QueryFacts(unseen, set()), rules)
    assert grouped[()].reason == "eager_no_benefit"
    assert grouped[()].numbers["estimated_size"] == pytest.approx(240 * MB * 0.01)
    assert grouped[()].numbers["max_rows"] is None
    one_row = decide_caching(_aggregate_over_query([]), QueryFacts(unseen, set()), rules)
    assert one_row[()].reason == "eager_result"
    assert one_row[()].numbers["max_rows"] == 1
    assert one_row[()].numbers["estimated_size"] == 2 * BOUNDED_COLUMN_BYTES


def _limit(op: str, n: str, child: PlanNode) -> PlanNode:
    literal = Expr(
        "org.apache.spark.sql.catalyst.expressions.Literal",
        (("dataType", "integer"), ("num-children", 0), ("value", n)),
        (),
    )
    return PlanNode(op, {"limitExpr": literal}, (child,))


def test_the_rows_a_result_can_have_are_bounded_by_its_shape_where_it_bounds_them():
    grouped, one_row = _aggregate_over_query(["g"]), _aggregate_over_query([])
    assert max_rows(grouped) is None and max_rows(_query()) is None
    assert max_rows(one_row) == 1
    assert max_rows(PlanNode("Project", {}, (PlanNode("Sort", {}, (one_row,)),))) == 1
    assert max_rows(_limit("GlobalLimit", "20", _limit("LocalLimit", "20", grouped))) == 20
    assert max_rows(_limit("LocalLimit", "20", one_row)) == 1
    assert max_rows(PlanNode("Join", {}, (one_row, one_row))) is None  # joins: not bounded


def test_a_first_seen_result_under_a_limit_pays_for_building_rows_the_action_skips():
    """Under an ORDER BY … LIMIT the user's action takes the top rows without ever
    materializing the result below them (TPC-H Q10's 3.5 MB aggregate for 20 rows):
    caching that result in the action builds Spark's cache of all of them, priced as for
    an operator under the result. A result the action returns whole is priced at writing
    it alone, and so is either one where nothing is built in the action."""
    unseen = {fp: _stats(fp, 1) for fp in ("agg", "join", "filt")}
    limited = with_paths(_limit("GlobalLimit", "20", _limit("LocalLimit", "20", _query())))
    rules = _rules(write_bandwidth=20e6, in_action_build_share=0.5, result_ratio=0.02)
    top = decide_caching(limited, QueryFacts(unseen, set()), rules)[(0, 0)]
    whole = decide_caching(_query(), QueryFacts(unseen, set()), rules)[()]
    assert top.reason == whole.reason == "eager_result"
    size = whole.numbers["estimated_size"]
    assert top.numbers["estimated_size"] == size == pytest.approx(240 * MB * 0.02)
    assert whole.numbers["in_action_build_share"] == 0.0
    assert top.numbers["in_action_build_share"] == 0.5
    # storing it costs half as much again: size / 20 MB/s × 0.5 less gain
    assert whole.numbers["expected_gain"] - top.numbers["expected_gain"] == pytest.approx(
        size / 20e6 * 0.5
    )
    assert "action does not return adds 50% of writing them" in describe(top)
    # logged before the share was a number of theirs: first-seen results were written alone
    logged = {k: v for k, v in whole.numbers.items() if k != "in_action_build_share"}
    assert "adds 0% of writing them" in describe(Decision(CACHE, "eager_result", logged))
    nothing_built = _rules(write_bandwidth=20e6, result_ratio=0.02)
    written = decide_caching(limited, QueryFacts(unseen, set()), nothing_built)[(0, 0)]
    assert written.numbers["in_action_build_share"] == 0.0
    assert written.numbers["expected_gain"] == pytest.approx(whole.numbers["expected_gain"])


@pytest.mark.parametrize(
    ("expected_repeats", "action"),
    [(0.002, SKIP), (0.005, SKIP), (0.02, CACHE), (0.3, CACHE), (3.0, CACHE)],
)
def test_a_first_seen_result_is_cached_only_if_results_here_are_repeated_often_enough(
    expected_repeats, action
):
    """Where first-seen results are rarely repeated (ever new parameters), caching each on
    first sight costs more than the few repeats save: the measured repeats decide."""
    unseen = {fp: _stats(fp, 1) for fp in ("agg", "join", "filt")}
    got = _decide(unseen, expected_repeats=expected_repeats, stage_seconds=0.5)
    assert got[()].action == action
    assert got[()].reason == ("eager_result" if action == CACHE else "eager_no_benefit")
    numbers = got[()].numbers
    assert numbers["expected_repeats"] == expected_repeats
    assert (numbers["expected_gain"] > 0) == (action == CACHE)
    assert f"{expected_repeats:.2f} repeats expected" in describe(got[()])


def test_caching_a_first_sight_costs_the_seconds_of_preparing_it_not_a_share_of_texec():
    """What caching a first-seen result adds is the planning that prepares Spark's cache of
    it (measured: ~12 ms at SF 0.05 and SF 1 alike), whatever the query takes; a share of
    Texec charged a 5 s query 0.3 s and left it uncached at a 5 % chance of a repeat."""
    unseen = {fp: _stats(fp, 1) for fp in ("agg", "join", "filt")}
    cheap = _decide(unseen, expected_repeats=0.05, stage_seconds=0.05)[()]
    slow = _decide(unseen, expected_repeats=0.05, stage_seconds=0.5)[()]
    assert cheap.reason == slow.reason == "eager_result"
    assert slow.numbers["first_sight_seconds"] == FIRST_SIGHT_SECONDS
    texec_gap = slow.numbers["estimated_texec"] - cheap.numbers["estimated_texec"]
    assert texec_gap > 0.5
    gain_gap = slow.numbers["expected_gain"] - cheap.numbers["expected_gain"]
    assert gain_gap == pytest.approx(0.05 * texec_gap)
    costly = _decide(unseen, expected_repeats=0.05, stage_seconds=0.5, first_sight_seconds=1.0)[()]
    assert costly.reason == "eager_no_benefit"
    assert costly.numbers["expected_gain"] == pytest.approx(
        slow.numbers["expected_gain"] - (1.0 - FIRST_SIGHT_SECONDS)
    )
    assert "caching it on first sight adds 1.000s to the query" in describe(costly)
    # a decision logged when the cost was a share of Texec renders with what it charged
    logged = {**costly.numbers, "first_sight_cost": 0.06, "estimated_texec": 2.0}
    del logged["first_sight_seconds"]
    assert "on first sight adds 0.120s to the query" in describe(
        Decision(SKIP, "eager_no_benefit", logged)
    )


def test_reused_subtrees_are_not_decided_and_their_bytes_are_not_estimated():
    stats = {fp: _stats(fp, 2) for fp in ("agg", "join", "filt")}
    got = _decide(stats, reused=[(0,)])
    assert set(got) == {()}  # nothing under the reused join
    assert got[()].numbers["scanned_bytes"] == 0


def test_an_exact_result_cache_caches_only_whole_results():
    got = _decide({fp: _stats(fp, 1) for fp in ("agg", "join", "filt")}, results_only=True)
    assert got[()].action == CACHE and got[()].reason == "whole_result"
    assert got[(0,)].reason == "results_scope"


def test_a_measured_copy_of_one_table_keeping_most_rows_is_not_cached():
    stats = {
        "agg": _stats("agg", 2, texec=0.01, size=100),
        "join": _stats("join", 2, texec=0.01, size=100),
        "filt": _stats("filt", 2, texec=3.0, size=MB, rows=900),
    }
    facts = QueryFacts(stats, set(), table_rows={(0, 0): 1000})
    got = decide_caching(_query(), facts, _rules())
    assert got[(0, 0)].reason == "table_copy_most_rows"
    assert got[(0, 0)].numbers == {"rows": 900, "table_rows": 1000}


def test_every_reason_renders_with_its_numbers():
    numbers = {
        "benefit": 1.5,
        "ref": 2,
        "min_ref": 3,
        "why": "non-deterministic",
        "op": "Sort",
        "rows": 9,
        "table_rows": 10,
        "estimated_texec": 0.05,
        "min_texec": 0.2,
        "stages": 3,
        "stage_seconds": 0.1,
        "scanned_bytes": 1000,
        "scan_rate": 64e6,
        "estimated_size": 10.0,
        "expected_repeats": 0.5,
        "expected_reuses": 0.8,
        "new_values_share": 0.9,
        "expected_gain": 0.2,
        "first_sight_seconds": 0.012,
        "texec": 0.1,
        "bandwidth": 100e6,
        "write_bandwidth": 20e6,
        "in_action_build_share": 0.5,
        # a lift decision's (criss.policies.lifting)
        "expected_values": 1.5,
        "read_seconds": 0.02,
        "write_seconds": 0.01,
        "cost_ratio": 1.8,
        "cost_source": "the lifts measured in this home",
        "gain": -0.1,
        "lifted_rows": 1200.0,
        # a widening refused on its estimated rows (criss.planner.widen)
        "kept_share": 0.04,
        "max_rows": 1000,
        # a measured operator rarely read again
        "size_bytes": 1000,
        "expected_rereads": 0.1,
        "reread_share": 0.09,
        "in_action_seconds": 0.36,
        # a rolled-up result weighed for caching as itself
        "roll_up_seconds": 0.3,
        # a shared base weighed
        "base_share": 0.5,
        "base_read_share": 0.2,
        "expected_base_reads": 0.25,
        "base_gain": -0.3,
    }
    for code in REASONS:
        text = describe(Decision(SKIP, code, numbers))
        assert text and text != code and "{" not in text, code
    measured = describe(Decision(SKIP, "no_benefit", {**numbers, "read_source": "measured"}))
    assert "(measured)" in measured and "(calibrated)" in describe(
        Decision(SKIP, "no_benefit", numbers)
    )
    assert describe(Decision(SKIP, "a_reason_from_a_newer_criss")) == "a_reason_from_a_newer_criss"


def test_a_query_record_survives_its_json():
    record = QueryRecord("select 1")
    record.operators = [
        OperatorRecord(
            (0,),
            "Aggregate",
            "ab" * 32,
            Decision(REUSE, "cached_entry", {"rule": "exact"}),
            matched=True,
            entry="cd" * 32,
            rule="exact",
            served=Served(3, 1, 4, 1234),
            stats=OperatorStats(2, 1.5, 100, 10, "measured"),
            benefit=2.5,
        )
    ]
    back = operators_from_json(json.dumps(record.to_json()))
    assert back == record.operators
    assert back[0].reused == "cd" * 32 and back[0].cached is None
    assert operators_from_json("not json") == [] and operators_from_json(None) == []


def test_a_measured_read_prices_loading_and_leaves_storing_at_the_disks_bandwidth():
    stats = _stats("fp", 2, texec=1.0, size=MB, rows=10, source="measured")
    calibrated = _rules(disk_bandwidth=1e6)
    measured = _rules(disk_bandwidth=1e6, read_bandwidth=1e9)
    # calibrated: 2 x (1 s - 1.05 s to load) - 1.05 s to store < 0
    assert calibrated.benefit(stats) < 0
    # measured: loading takes ~1 ms, storing still 1.05 s at the disk's bandwidth
    expected = 100.0 * (2 * (1.0 - MB / 1e9) - MB / 1e6)
    assert measured.benefit(stats) == pytest.approx(expected)
    assert (measured.load_bandwidth, measured.store_bandwidth) == (1e9, 1e6)
    assert measured.read_source != calibrated.read_source
    written = _rules(disk_bandwidth=1e6, read_bandwidth=1e9, write_bandwidth=4e6)
    assert written.benefit(stats) == pytest.approx(100.0 * (2 * (1.0 - MB / 1e9) - MB / 4e6))


def _chain() -> PlanNode:
    """Project(Join(Join(Filter(supplier), Join(lineitem, lineitem)), orders)), TPC-H Q21's
    shape: the lineitem semi/anti joins under the joins a variant filters higher up."""
    late = PlanNode(
        "Join",
        {},
        (_relation((0, 0, 1, 0), 200 * MB), _relation((0, 0, 1, 1), 200 * MB)),
        (0, 0, 1),
        fingerprint="late",
    )
    supplier = PlanNode("Filter", {}, (_relation((0, 0, 0, 0), MB),), (0, 0, 0), fingerprint="supp")
    with_supplier = PlanNode("Join", {}, (supplier, late), (0, 0), fingerprint="with_supp")
    with_orders = PlanNode(
        "Join", {}, (with_supplier, _relation((0, 1), 40 * MB)), (0,), fingerprint="with_orders"
    )
    return PlanNode("Project", {}, (with_orders,), (), fingerprint="proj")


def test_a_shared_base_is_cached_under_the_best_operator_of_its_branch_when_asked():
    """One operator per branch by default (the paper's rule); with ``base_share`` also, of
    the operators below a join under it keeping that share of its benefit, the one keeping
    the least: the semi/anti joins (5.4 s of 7.4 s), not the join right under the best
    one, nor a cheap supplier filter below the share."""
    stats = {
        "proj": _stats("proj", 2, texec=7.4, size=700_000),
        "with_orders": _stats("with_orders", 2, texec=7.4, size=1_100_000),
        "with_supp": _stats("with_supp", 2, texec=6.3, size=2_600_000),
        "late": _stats("late", 2, texec=5.4, size=800_000),
        "supp": _stats("supp", 2, texec=0.9, size=90_000),
    }
    facts = QueryFacts(stats, set())
    alone = decide_caching(_chain(), facts, _rules())
    assert alone[()].reason == "largest_benefit"
    assert {alone[p].reason for p in [(0,), (0, 0), (0, 0, 1), (0, 0, 0)]} == {"outranked"}
    based = decide_caching(_chain(), facts, _rules(base_share=0.5))
    cached = {p: d.reason for p, d in based.items() if d.action == CACHE}
    assert cached == {(): "largest_benefit", (0, 0, 1): "shared_base"}
    assert "the one keeping the least" in describe(based[(0, 0, 1)])
    assert based[(0, 0, 1)].numbers["base_gain"] == pytest.approx(5.4 - 2 * 0.008)
    # a share the semi/anti joins do not keep: nothing below the best one
    strict = decide_caching(_chain(), facts, _rules(base_share=0.9))
    assert [p for p, d in strict.items() if d.action == CACHE] == [()]


def test_a_shared_base_is_cached_only_where_the_reads_bases_get_here_pay_for_it():
    """A base is read only by a query that changes something above it; where the bases
    cached here were rarely read, one whose expected reads save less than writing it and
    building it in the user's action cost is not cached (and explain says so): the next
    most general one that pays is, and a small base of the same Texec still is."""
    stats = {
        "proj": _stats("proj", 2, texec=7.4, size=700_000),
        "with_orders": _stats("with_orders", 2, texec=7.4, size=1_100_000),
        "with_supp": _stats("with_supp", 2, texec=6.3, size=2_600_000),
        "late": _stats("late", 2, texec=5.4, size=50 * MB),
        "supp": _stats("supp", 2, texec=0.9, size=90_000),
    }
    rarely = dict(base_share=0.5, expected_base_reads=0.25, base_read_share=0.2)
    rules = _rules(in_action_build_share=0.5, **rarely)
    large = decide_caching(_chain(), QueryFacts(stats, set()), rules)
    cached = {p: d.reason for p, d in large.items() if d.action == CACHE}
    assert cached == {(): "largest_benefit", (0, 0): "shared_base"}
    declined = large[(0, 0, 1)]
    assert declined.action == SKIP and declined.reason == "base_rarely_read"
    # 0.25 x (5.4 s - 0.52 s to read 50 MB) - 0.79 s to write it at 2/3 of 100 MB/s
    # - 0.2 x 5.4 s longer in the action
    gain = 0.25 * (5.4 - 50 * MB / 100e6) - 1.5 * 50 * MB / 100e6 - 0.2 * 5.4
    assert declined.numbers["base_gain"] == pytest.approx(gain)
    assert "20% were read" in describe(declined)
    small = {**stats, "late": _stats("late", 2, texec=5.4, size=800_000)}
    cached = decide_caching(_chain(), QueryFacts(small, set()), rules)
    assert cached[(0, 0, 1)].reason == "shared_base"
    assert cached[(0, 0, 1)].numbers["expected_base_reads"] == 0.25
