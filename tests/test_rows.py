"""criss.workload.rows: results compared as multisets of rows, floats within a tolerance.

Pure Python: every differential test in the suite, and the soak, rely on this comparison.
"""

from __future__ import annotations

import math
from decimal import Decimal

from criss.workload.rows import row_difference


def test_equal_multisets_in_another_order_are_equal():
    rows = [(i, f"s{i % 7}", Decimal(i) / 3, i * 0.5) for i in range(1000)]
    assert row_difference(list(reversed(rows)), rows) is None


def test_a_row_repeated_instead_of_another_differs():
    assert row_difference([(1,), (1,), (2,)], [(1,), (2,), (2,)]) is not None


def test_floats_within_the_tolerance_are_equal_and_beyond_it_differ():
    assert row_difference([(1, 2.0 * (1 + 1e-9))], [(1, 2.0)]) is None
    assert row_difference([(1, 2.0 * (1 + 1e-3))], [(1, 2.0)]) is not None


def test_nans_are_equal_to_each_other_and_to_nothing_else():
    # each NaN a different object, as rows collected from Spark hold them
    assert row_difference([(1, float("nan"))], [(1, float("nan"))]) is None
    assert row_difference([(1, float("nan"))], [(1, 0.0)]) is not None
    assert row_difference([(1, None)], [(1, math.nan)]) is not None


def test_rows_holding_arrays_and_maps_are_compared():
    # lists and dicts cannot be hashed: the tolerant comparison decides
    assert row_difference([(1, [1, 2], {"a": 1})], [(1, [1, 2], {"a": 1})]) is None
    assert row_difference([(1, [1, 2])], [(1, [2, 1])]) is not None


def test_a_missing_row_is_named():
    assert row_difference([(1,)], [(1,), (2,)]) == "1 rows, expected 2"
    assert row_difference([(1,), (3,)], [(1,), (2,)]) == "row 1 differs: (3,) != (2,)"
