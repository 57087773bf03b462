"""First-seen results are cached eagerly only where results get repeated: the share of
recent queries whose result had been seen before is measured (and kept in the home), and
a stream of ever new parameters stops paying for caching each first sight."""

from __future__ import annotations

import pytest
from rowcompare import assert_same_rows

import criss
from criss.planner.learning import DEFAULT_RESULT_RATIO
from criss.policies.decisions import FIRST_SIGHT_SECONDS
from criss.policies.first_sight import BOUNDED_COLUMN_BYTES
from criss.qtree.rewrite import result_node

#: A parameter no rule reuses across values (not a range or IN list on a column).
NEW_PARAMETERS = (
    "select l_returnflag, count(*) as n from lineitem where pmod(l_orderkey, {}) = 0 group by 1"
)
#: Enough first sights in a row to bring the measured share of repeats from a new home's
#: one-in-two down to where caching a first-seen result costs more than it is expected to save.
FIRST_SIGHTS = 40


def _result_decision(cs):
    record = cs.last_record
    fingerprint = result_node(cs.canonical_tree(record.captured)).fingerprint
    (result,) = [o for o in record.operators if o.fingerprint == fingerprint]
    return result.decision


def test_results_never_repeated_are_no_longer_cached_on_first_sight(tpch, tmp_path):
    home = str(tmp_path / "h")
    with criss.session(tpch, home=home) as cs:
        cs.sql(NEW_PARAMETERS.format(2)).collect()
        assert _result_decision(cs).reason == "eager_result"  # a new home: cached eagerly
        for modulus in range(FIRST_SIGHTS):
            cs.sql(NEW_PARAMETERS.format(modulus + 3)).collect()
        decision = _result_decision(cs)
        assert decision.action == "skip" and decision.reason == "eager_no_benefit"
        assert decision.numbers["expected_repeats"] < 0.06
        assert "repeats expected" in cs.explain(cs.sql(NEW_PARAMETERS.format(997)))
        assert cs.last_query_summary().get("operators_cached_in_action", 0) == 0

    # the measured share is the home's: the next application starts from it
    with criss.session(tpch, home=home) as cs:
        sql = NEW_PARAMETERS.format(1001)
        first = cs.sql(sql).collect()
        assert _result_decision(cs).reason == "eager_no_benefit"
        # seen twice: cached then, as any operator recurring without statistics
        second = cs.sql(sql).collect()
        assert cs.last_query_summary().get("operators_cached", 0) >= 1
        third = cs.sql(sql)
        assert_same_rows(third.collect(), tpch.sql(sql).collect())
        assert cs.last_query_summary()["operators_reused"] >= 1
        assert_same_rows(first, second)


def test_repeats_bring_eager_caching_back(tpch, tmp_path):
    with criss.session(tpch, home=str(tmp_path / "h")) as cs:
        for modulus in range(FIRST_SIGHTS):
            cs.sql(NEW_PARAMETERS.format(modulus + 3)).collect()
        assert cs.learning.expected_repeats < 0.06
        for _ in range(4):  # an analyst going back over the same few queries
            for modulus in range(4):
                cs.sql(NEW_PARAMETERS.format(modulus + 3)).collect()
        assert cs.learning.expected_repeats > 0.5
        cs.sql(NEW_PARAMETERS.format(2003)).collect()
        assert _result_decision(cs).reason == "eager_result"


def test_a_one_row_result_is_sized_as_one_row_on_first_sight(tpch, tmp_path):
    """Spark's plan of a global aggregate bounds its result to one row: the eager decision
    values its write and read-back as such, not at the result bytes per input byte learned
    over other queries' results."""
    with criss.session(tpch, home=str(tmp_path / "h")) as cs:
        grouped = "select l_returnflag, sum(l_quantity) as q from lineitem group by 1"
        one_row = "select count(*) as n, sum(l_quantity) as q from lineitem where l_discount > 0.02"
        cs.sql(grouped).collect()
        numbers = _result_decision(cs).numbers
        assert numbers["max_rows"] is None
        assert numbers["estimated_size"] == numbers["scanned_bytes"] * numbers["result_ratio"]
        rows = cs.sql(one_row).collect()
        decision = _result_decision(cs)
        assert decision.reason == "eager_result" and decision.numbers["max_rows"] == 1
        assert decision.numbers["estimated_size"] <= 2 * BOUNDED_COLUMN_BYTES
        assert decision.numbers["estimated_size"] < (
            decision.numbers["scanned_bytes"] * decision.numbers["result_ratio"]
        )
        assert_same_rows(cs.sql(one_row).collect(), rows)
        assert cs.last_query_summary()["operators_reused"] == 1


@pytest.mark.parametrize(
    "path",
    [{}, {"cache_in_action": False}, {"write_through": True}],
    ids=["in-action", "job", "write-through"],
)
def test_a_result_cached_as_it_was_computed_teaches_the_result_bytes_per_input_byte(
    tpch, tmp_path, path
):
    """The action that computes a first-seen result into the cache runs over Spark's cache,
    whose executed plan says nothing of the result's size; its written files do, exactly
    (whichever way it is written). Without them the ratio would stay at its default while
    results are cached on first sight (the first ones of every new home)."""
    with criss.session(tpch, home=str(tmp_path / "h"), **path) as cs:
        assert cs.learning.result_ratio == DEFAULT_RESULT_RATIO
        sql = (
            "select l_returnflag, l_linestatus, sum(l_extendedprice) as s from lineitem "
            "group by 1, 2"
        )
        rows = cs.sql(sql).collect()
        decision = _result_decision(cs)
        assert decision.reason == "eager_result"
        cs.settle_harvests()
        (entry,) = cs.report()["entries"]
        measured = entry["bytes"] / decision.numbers["scanned_bytes"]
        assert measured < DEFAULT_RESULT_RATIO / 3
        assert cs.learning.result_ratio == pytest.approx(
            (1 - 0.3) * DEFAULT_RESULT_RATIO + 0.3 * measured
        )
        assert_same_rows(cs.sql(sql).collect(), rows)


def test_the_first_sight_cost_is_the_planning_that_prepared_a_result_measured_here(tpch, tmp_path):
    """Each result prepared for Spark's cache teaches what caching a first sight costs
    (the seconds planning spent preparing it), and the next first sight is weighed at it."""
    with criss.session(tpch, home=str(tmp_path / "h")) as cs:
        assert cs.learning.first_sight_seconds == FIRST_SIGHT_SECONDS
        cs.sql(NEW_PARAMETERS.format(3)).collect()
        assert _result_decision(cs).reason == "eager_result"
        prepared = cs.last_record.phase_seconds["prepare"]
        learned = cs.learning.first_sight_seconds
        assert learned != FIRST_SIGHT_SECONDS
        # the blend of the default and what preparing took (timed a little more widely)
        assert learned >= 0.7 * FIRST_SIGHT_SECONDS + 0.3 * prepared
        cs.sql(NEW_PARAMETERS.format(5)).collect()
        assert _result_decision(cs).numbers["first_sight_seconds"] == learned


PER_NATION = (
    "select c_nationkey, sum(o_totalprice) as spent from orders join customer "
    "on o_custkey = c_custkey group by c_nationkey"
)
#: PER_NATION's rows (served from the cache) and one small table's (read from its file).
PER_NATION_AND_NATIONS = f"{PER_NATION} union all select n_nationkey, 0 from nation"


@pytest.mark.parametrize(
    "path",
    [{}, {"cache_in_action": False}, {"write_through": True}],
    ids=["in-action", "job", "write-through"],
)
def test_a_result_over_what_the_cache_served_teaches_no_result_bytes_per_input_byte(
    tpch, tmp_path, path
):
    """A result computed over a cached entry owes its size to the cached rows, not to the
    few table bytes read beside them: counted per those bytes, one such result once made
    the learned ratio 4.0 (its bound), and the next first sights were weighed as tens of MB
    and left uncached (TPC-H Random-QS-v seed 3 at SF 1)."""
    with criss.session(tpch, home=str(tmp_path / "h"), **path) as cs:
        cs.sql(PER_NATION).collect()
        cs.settle_harvests()
        learned = cs.learning.result_ratio
        assert learned != DEFAULT_RESULT_RATIO  # the first result taught it
        rows = cs.sql(PER_NATION_AND_NATIONS).collect()
        summary = cs.last_query_summary()
        assert summary.get("operators_reused") == 1, summary
        assert _result_decision(cs).reason == "eager_result"
        cs.settle_harvests()
        assert cs.learning.result_ratio == learned
        assert_same_rows(rows, tpch.sql(PER_NATION_AND_NATIONS).collect())
        assert_same_rows(cs.sql(PER_NATION_AND_NATIONS).collect(), rows)
        assert cs.last_query_summary().get("operators_reused") == 1


PER_CUSTOMER = "select o_custkey, sum(o_totalprice) as spent from orders group by o_custkey"
TOP_SPENDERS = f"select count(*) as n, max(spent) as top from ({PER_CUSTOMER}) where spent > 1000"
AVERAGE_SPENT = f"select avg(spent) as mean from ({PER_CUSTOMER})"


def test_a_cached_operator_measured_cheaper_than_min_texec_is_computed_inside_a_query(
    tpch, tmp_path
):
    """Reading back what is measured to take less than ``min_texec`` saves nothing inside
    another query; with a lower ``min_texec`` the same entry serves it."""
    home = str(tmp_path / "h")
    with criss.session(tpch, home=home, min_texec=60.0) as cs:
        cs.sql(PER_CUSTOMER).collect()
        cs.report()  # the action's statistics, settled
        inner = result_node(cs.canonical_tree(cs.last_record.captured))
        measured = cs.qtree.get(inner.fingerprint).texec
        assert measured is not None and measured < 60.0
        assert cs.cache.lookup(inner.fingerprint) is not None
        df = cs.sql(TOP_SPENDERS)
        assert_same_rows(df.collect(), tpch.sql(TOP_SPENDERS).collect())
        assert cs.last_query_summary().get("operators_reused", 0) == 0, cs.explain(df)
        # explain names the entry it did not read, and why
        unread = [o.unread for o in cs.record(df).operators if o.unread]
        assert [u["entry"] for u in unread] == [inner.fingerprint], cs.explain(df)
        assert unread[0]["texec"] == measured and unread[0]["min_texec"] == 60.0
        assert f"cached entry {inner.fingerprint[:12]} not read" in cs.explain(df)
    with criss.session(tpch, home=home, min_texec=0.0) as cs:
        df = cs.sql(AVERAGE_SPENT)
        assert_same_rows(df.collect(), tpch.sql(AVERAGE_SPENT).collect())
        assert cs.last_query_summary()["operators_reused"] >= 1
