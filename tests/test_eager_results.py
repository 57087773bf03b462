"""First-seen results are cached eagerly only where results get repeated: the share of
recent queries whose result had been seen before is measured (and kept in the home), and
a stream of ever new parameters stops paying for caching each first sight."""

from __future__ import annotations

from rowcompare import assert_same_rows

import criss
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
        for _ in range(3):  # an analyst going back over the same few queries
            for modulus in range(4):
                cs.sql(NEW_PARAMETERS.format(modulus + 3)).collect()
        assert cs.learning.expected_repeats > 0.5
        cs.sql(NEW_PARAMETERS.format(2003)).collect()
        assert _result_decision(cs).reason == "eager_result"
