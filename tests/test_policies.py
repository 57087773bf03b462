"""Benefit models, the policy registry and per-branch selection (plain numbers, no Spark)."""

from __future__ import annotations

import pytest

from criss.errors import ConfigError
from criss.policies import CrissBenefit, RecyclerBenefit, get_policy, register_policy
from criss.policies.selection import Candidate, best_per_branch, collect_score, measured_score


def test_criss_benefit_is_the_papers_formula():
    model = CrissBenefit()
    # recency × (ref × (Texec − size/bw) − size/bw) = 10 × (3 × (4 − 1) − 1)
    assert model.benefit(ref=3, texec=4.0, size_bytes=100.0, bandwidth=100.0, recency=10.0) == 80.0
    # a result that costs more to store and load than to compute has negative benefit
    assert model.benefit(ref=1, texec=1.0, size_bytes=300.0, bandwidth=100.0, recency=1.0) < 0
    # a faster tier raises the benefit of the same data
    slow = model.benefit(ref=2, texec=5.0, size_bytes=1e9, bandwidth=2e8, recency=1.0)
    fast = model.benefit(ref=2, texec=5.0, size_bytes=1e9, bandwidth=2e9, recency=1.0)
    assert fast > slow
    # storing priced apart, at what writes were measured to reach: 10 × (3 × (4 − 1) − 4)
    assert (
        model.benefit(
            ref=3, texec=4.0, size_bytes=100.0, bandwidth=100.0, recency=10.0, write_bandwidth=25.0
        )
        == 50.0
    )


def test_recycler_ignores_bandwidth():
    model = RecyclerBenefit()
    a = model.benefit(ref=2, texec=4.0, size_bytes=8.0, bandwidth=1.0, recency=1.0)
    b = model.benefit(ref=2, texec=4.0, size_bytes=8.0, bandwidth=1e9, recency=99.0)
    assert a == b == 1.0


def test_registry_by_name_with_hint():
    assert get_policy("criss").name == "criss" and get_policy("recycler").name == "recycler"
    with pytest.raises(ConfigError, match="did you mean 'criss'"):
        get_policy("cris")
    with pytest.raises(ConfigError, match="already registered"):
        register_policy("criss", CrissBenefit)


def test_best_operator_per_branch():
    # join(a: filter(scan), b: agg(scan)): branch a's best is the join, branch b's is agg
    scan_a = Candidate("sa", (), None)
    filt = Candidate("f", (scan_a,), measured_score(1.0))
    scan_b = Candidate("sb", (), None)
    agg = Candidate("g", (scan_b,), measured_score(50.0))
    join = Candidate("j", (filt, agg), measured_score(10.0))
    assert best_per_branch(join) == ["j", "g"]
    # no eligible operator at all: nothing chosen
    assert best_per_branch(Candidate("x", (Candidate("y", (), None),), None)) == []
    # operators still without statistics rank by references, then height
    low = Candidate("low", (), collect_score(ref=3, height=1))
    high = Candidate("high", (low,), collect_score(ref=2, height=2))
    assert best_per_branch(high) == ["low"]
    assert measured_score(-1.0) is None


def test_lip_filter_pays_only_below_its_join_where_the_fact_is_shuffled():
    from criss.policies.filters import StarJoin, star_filters

    selective = StarJoin(survival=0.002, keys=1_000, key_width=8, shuffled=False, candidate=True)
    shuffled_whole_table = StarJoin(shuffled=True)
    # the selective dimension is broadcast at the lowest join: it filters the fact rows
    # before the shuffle above anyway, so its key set at the scan only adds cost
    below = star_filters(6_000_000, 40, [selective, shuffled_whole_table])
    assert not below.chosen and below.details["shuffled"] == [1], below
    # the same dimension joined above the shuffle: at the scan it keeps 99.8 % of the fact
    # rows out of that shuffle
    above = star_filters(6_000_000, 40, [shuffled_whole_table, selective])
    assert above.chosen and above.details["keep"] == [1], above
    assert above.details["est_filtered_s"] < 0.25 * above.details["est_plain_s"]
    # nothing shuffled at all: nothing to save
    broadcast = StarJoin(shuffled=False)
    assert not star_filters(6_000_000, 40, [broadcast, selective]).chosen


def test_a_lift_pays_when_the_new_values_expected_save_more_than_its_extra_cost():
    """gain = expected × (Texec − read) − (ratio − 1) × Texec − write, each term counted."""
    from criss.policies.lifting import LiftFacts, decide_lift

    def facts(expected: float, ratio: float) -> LiftFacts:
        # Texec 4 s; the lifted result 100 MB at 100 MB/s: 1 s to write, 1 s + 0.5 s to read
        return LiftFacts(4.0, 1, expected, ratio, "measured", 100e6, 100e6, 0.5)

    paying = decide_lift(facts(expected=2.0, ratio=1.5))
    assert paying.action == "cache" and paying.reason == "lift_pays"
    assert paying.numbers["gain"] == pytest.approx(2 * (4.0 - 1.5) - 0.5 * 4.0 - 1.0)
    assert paying.numbers["read_seconds"] == 1.5 and paying.numbers["write_seconds"] == 1.0
    # one value fewer expected, or a lift that costs 2x: no gain
    assert decide_lift(facts(expected=1.0, ratio=1.5)).reason == "lift_no_gain"
    assert decide_lift(facts(expected=2.0, ratio=2.0)).numbers["gain"] == pytest.approx(0.0)
    assert decide_lift(facts(expected=2.0, ratio=2.0)).action == "skip"
    # a roll-up that reads slower than computing it gains nothing, however many come
    slow = LiftFacts(1.0, 5, 100.0, 1.0, "selectivity", 100e6, 100e6, 0.5)
    assert decide_lift(slow).action == "skip" and decide_lift(slow).source == "measured"
    # writes measured at 50 MB/s: the 100 MB lifted result takes 2 s to write, not 1
    measured_write = decide_lift(
        LiftFacts(4.0, 1, 2.0, 1.5, "measured", 100e6, 100e6, 0.5, write_bandwidth=50e6)
    )
    assert measured_write.numbers["write_seconds"] == 2.0
    assert measured_write.numbers["gain"] == pytest.approx(paying.numbers["gain"] - 1.0)


def test_a_lifts_cost_ratio_follows_the_rows_its_operators_output():
    """Where the rows its operators take in were measured, a lift costs their ratio times
    what lifts cost beyond their rows; elsewhere the prior; the filters' growth bounds
    both."""
    from criss.policies.lifting import lift_cost_ratio, work_ratio

    # a month of a 6 M-row fact (75 k rows, x80 without the range) joined with a 200 k-row
    # dimension, then aggregated: the scans take in their tables, the join its two
    # inputs, the aggregate the join's rows
    month = [(6e6, 1.0), (2e5, 1.0), (75e3, 80.0), (2e5, 1.0), (75e3, 80.0)]
    expected = (6.2e6 + 6e6 + 2e5 + 6e6) / (6.2e6 + 75e3 + 2e5 + 75e3)
    assert work_ratio(month) == pytest.approx(expected)
    assert work_ratio([]) is None and work_ratio([(0.0, 3.0)]) is None
    assert work_ratio([(5.0, 1.0), (7.0, 1.0)]) == 1.0  # nothing on the path grows
    prior, overhead = (2.0, "estimate"), (1.5, "rows_estimate")
    ratio, source = lift_cost_ratio(prior, overhead, 80.0, work_ratio(month))
    assert source == "rows_estimate" and ratio == pytest.approx(1.5 * expected)
    # the rows' ratio, where known, decides over the prior, whichever is higher
    assert lift_cost_ratio((2.3, "measured"), (1.4, "rows"), 26.0, 1.25) == (1.75, "rows")
    assert lift_cost_ratio((2.3, "measured"), (1.4, "rows"), 26.0, None) == (2.3, "measured")
    # the filters' growth bounds both: lifting costs no more than the rows it adds
    assert lift_cost_ratio(prior, overhead, 1.02, 1.01) == (1.02, "selectivity")
    assert lift_cost_ratio(prior, overhead, 1.5, None) == (1.5, "selectivity")
    assert lift_cost_ratio(prior, overhead, None, None) == prior


def test_a_rolled_up_result_is_cached_as_itself_where_its_repeats_pay():
    """Each repeat of a result the cache serves by a roll-up reads the finer result and
    rolls it up again; caching the result itself pays where the repeats expected (those
    of a first-seen result, else the paper's ref) save more than writing it and what the
    action adds cost."""
    from criss.policies.lifting import ROLL_UP_STAGES, RolledUpResult, decide_rolled_up_result
    from criss.policies.reasons import describe

    def facts(ref=1, expected=0.6, source=0.1, size=800.0, first_sight=0.05):
        return RolledUpResult(ref, expected, 0.15, source, size, 200e6, None, first_sight)

    paying = decide_rolled_up_result(facts())
    assert paying.action == "cache" and paying.reason == "rolled_up_result_cached"
    roll_up = ROLL_UP_STAGES * 0.15 + 0.1
    assert paying.numbers["roll_up_seconds"] == pytest.approx(roll_up)
    assert paying.numbers["gain"] == pytest.approx(0.6 * (roll_up - 800 / 200e6) - 4e-6 - 0.05)
    # a statement seen once, in a home whose statements rarely repeat: not worth it
    rare = decide_rolled_up_result(facts(expected=0.1))
    assert rare.action == "skip" and rare.reason == "rolled_up_result_not_cached"
    # seen before: its references count, not the home's share
    again = decide_rolled_up_result(facts(ref=3, expected=0.1))
    assert again.action == "cache" and again.numbers["expected_repeats"] == 3
    # a result as large as what it is rolled up from saves nothing by being read instead
    assert decide_rolled_up_result(facts(ref=3, size=200e6)).action == "skip"
    assert "repeats expected" in describe(paying) and "gain" in describe(rare)
