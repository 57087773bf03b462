"""How many new parameter values a lift can expect (criss.planner.learning), from how the
home's aggregates recurred: in a QTree on disk, without Spark."""

from __future__ import annotations

from contextlib import closing

import pytest

from criss.planner.learning import Learning
from criss.qtree.plan import PlanNode
from criss.qtree.tree import QTree


def fingerprint(template: str, value: int) -> str:
    return f"{template}-{value}".ljust(32, "0")


def seen_under(qtree: QTree, template: str, values: int, key: str | None = None) -> None:
    """Record an aggregate of ``template`` under ``values`` parameter values, with the
    subsumption key ``key`` (default: one of its own)."""
    for value in range(values):
        node = PlanNode("Aggregate", {}, fingerprint=fingerprint(template, value))
        qtree.observe(node, now=1000.0 + value)
        qtree.db.execute(
            "update nodes set subsume_key = ?, template_key = ? where fingerprint = ?",
            [f"aggregate:{key or template}", template, node.fingerprint],
        )


@pytest.fixture
def qtree(tmp_path):
    with closing(QTree(tmp_path / "catalog.db")) as tree:
        yield tree


def test_templates_that_stop_at_three_values_expect_no_fourth(qtree):
    """Random-QS-v's shape: every template under its three variants (measured there: Q4
    lifted at its third value took 1.7-2.2x plain on three seeds and no new value came)."""
    for template in "abcde":
        seen_under(qtree, template, 3)
    learning = Learning(qtree)
    # pooled over every level from the second (five went on to a third, five stopped
    # there), as every lift at a template's second value is weighed: one more expected
    assert learning.expected_parameter_values() == learning.expected_parameter_values(2) == 1.0
    assert qtree.parameter_recurrence(level=3) == (0, 5)
    # at the third, the five templates that reached three values say a fourth is rare
    assert learning.expected_parameter_values(3) < 0.3
    # a template asking at its third value has had no chance at a fourth: it does not count
    asking = fingerprint("a", 2)
    assert qtree.parameter_recurrence(level=3, besides=asking) == (0, 4)
    assert learning.expected_parameter_values(3, asking) > learning.expected_parameter_values(3)


def test_templates_that_share_a_subsumption_key_count_apart_past_two_values(qtree):
    """TPC-H aggregates summing lineitem without grouping share a subsumption key (eleven
    under one key on Random-QS-v seed 3, three values per template at most): past two
    values, each template counts its own, as the lift weighs its own siblings."""
    for template in "abc":
        seen_under(qtree, template, 3, key="lineitem")
    assert qtree.parameter_recurrence() == (7, 8)  # one key under nine values
    assert qtree.parameter_recurrence(level=3, besides=fingerprint("a", 0)) == (0, 2)
    learning = Learning(qtree)
    assert learning.expected_parameter_values(3, fingerprint("a", 0)) < 1.0


def test_templates_whose_values_drift_expect_more_at_every_level(qtree):
    for template in "abcde":
        seen_under(qtree, template, 8)
    learning = Learning(qtree)
    assert qtree.parameter_recurrence(level=3) == (25, 30)
    assert learning.expected_parameter_values(3) > 3
    # near the top, the five that reached eight values have had no chance at a ninth yet
    # and count as stops: still more than one expected
    assert learning.expected_parameter_values(7) > 1.0


def test_above_every_level_seen_the_pooled_share_decides(qtree):
    seen_under(qtree, "a", 4)
    learning = Learning(qtree)
    assert qtree.parameter_recurrence(level=9) == (0, 0)
    assert learning.expected_parameter_values(9) == pytest.approx(
        learning.expected_parameter_values(2)
    )
