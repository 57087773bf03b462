"""Implication between conjunctions of simple conditions (criss.qtree.predicates)."""

from __future__ import annotations

import pytest

from criss.qtree.predicates import Atom, implies, order_key


def cmp(op: str, value, column: str = "x", data_type: str = "integer") -> Atom:
    return Atom.compare(column, op, data_type, str(value))


def one_of(*values, column: str = "x", data_type: str = "integer") -> Atom:
    return Atom.one_of(column, data_type, [str(v) for v in values])


@pytest.mark.parametrize(
    ("wanted", "cached", "expected"),
    [
        ({cmp(">", 5)}, {cmp(">", 3)}, True),
        ({cmp(">", 3)}, {cmp(">", 5)}, False),
        ({cmp(">", 3)}, {cmp(">", 3)}, True),
        ({cmp(">=", 3)}, {cmp(">", 3)}, False),  # the boundary 3 itself
        ({cmp(">", 3)}, {cmp(">=", 3)}, True),
        ({cmp(">=", 4)}, {cmp(">", 3)}, True),
        ({cmp("<", 10)}, {cmp("<=", 10)}, True),
        ({cmp("<=", 10)}, {cmp("<", 10)}, False),
        ({cmp(">=", 4), cmp("<", 8)}, {cmp(">=", 2), cmp("<=", 8)}, True),
        ({cmp(">=", 4), cmp("<", 9)}, {cmp(">=", 2), cmp("<=", 8)}, False),
        ({cmp("=", 5)}, {cmp(">", 3), cmp("<", 6)}, True),
        ({cmp("=", 5)}, {one_of(1, 5, 7)}, True),
        ({one_of(1, 5)}, {one_of(1, 5, 7)}, True),
        ({one_of(1, 5, 9)}, {one_of(1, 5, 7)}, False),
        ({one_of(1, 5, 9), cmp("<", 8)}, {one_of(1, 5, 7)}, True),  # 9 cannot pass
        ({one_of(1, 5)}, {cmp(">", 0)}, True),
        ({cmp(">", 0)}, {one_of(1, 5)}, False),
        ({cmp(">=", 5), cmp("<=", 5)}, {cmp("=", 5)}, False),  # only sets and = pin values
        ({cmp(">", 5)}, {Atom.not_null("x")}, True),  # NULL fails every comparison
        ({Atom.opaque("like")}, {Atom.not_null("x")}, False),
        ({Atom.opaque("like"), cmp(">", 5)}, {Atom.opaque("like")}, True),
        ({cmp(">", 5)}, {Atom.opaque("like")}, False),
        ({cmp(">", 5, column="y")}, {cmp(">", 3)}, False),  # another column
        ({cmp(">", 5)}, set(), True),
        (set(), {cmp(">", 5)}, False),
    ],
)
def test_implication_of_ranges_sets_and_opaque_conjuncts(wanted, cached, expected):
    assert implies(wanted, cached) is expected


def test_literals_of_another_type_say_nothing():
    assert not implies({cmp(">", 5, data_type="long")}, {cmp(">", 3)})


def test_dates_decimals_and_strings_order_as_spark_orders_them():
    assert implies(
        {cmp(">=", "1995-03-02", data_type="date")}, {cmp(">", "1995-03-01", data_type="date")}
    )
    decimal = "decimal(15,2)"
    assert implies({cmp(">", "0.10", data_type=decimal)}, {cmp(">", "0.05", data_type=decimal)})
    assert not implies({cmp(">", "0.05", data_type=decimal)}, {cmp(">", "0.1", data_type=decimal)})
    assert implies({cmp(">", "0.10", data_type=decimal)}, {cmp(">=", "0.1", data_type=decimal)})
    # binary order: 'Z' < 'a' < 'é'
    assert implies({cmp(">", "a", data_type="string")}, {cmp(">", "Z", data_type="string")})
    assert implies({cmp(">", "é", data_type="string")}, {cmp(">", "z", data_type="string")})
    assert not implies({cmp(">", "B", data_type="string")}, {cmp(">", "a", data_type="string")})


def test_nan_is_above_every_double_and_negative_zero_is_zero():
    nan, inf = "NaN", "Infinity"
    assert order_key("double", nan) > order_key("double", inf)
    assert order_key("double", "-0.0") == order_key("double", "0.0")
    # x > 1e308 lets NaN through (Spark: NaN > any other value), so it implies x > 5 ...
    assert implies({cmp(">", "1e308", data_type="double")}, {cmp(">", "5.0", data_type="double")})
    # ... and x < Infinity keeps NaN out, so it does not imply x <= 1e308
    assert not implies(
        {cmp("<", inf, data_type="double")}, {cmp("<=", "1e308", data_type="double")}
    )
    assert implies({cmp("=", nan, data_type="double")}, {cmp(">", inf, data_type="double")})
    assert implies({cmp(">=", "0.0", data_type="double")}, {cmp(">=", "-0.0", data_type="double")})


def test_types_that_are_not_ordered_here_imply_only_themselves():
    ts = cmp(">", "2020-01-01 00:00:00", data_type="timestamp")
    later = cmp(">", "2021-01-01 00:00:00", data_type="timestamp")
    assert implies({ts}, {ts}) and not implies({later}, {ts})


def test_atoms_round_trip_through_json():
    atoms = [cmp(">", 5), one_of(3, 1), Atom.not_null("x"), Atom.opaque("text")]
    assert [Atom.from_json(a.to_json()) for a in atoms] == atoms
    assert one_of(3, 1, 3).values == ("1", "3")
