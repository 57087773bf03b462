"""Compare query results as multisets of rows, floats within a relative tolerance."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from decimal import Decimal
from typing import Any


def _is_nan(v: Any) -> bool:
    return isinstance(v, float) and math.isnan(v)


def _sort_key(row: Sequence[Any]) -> tuple:
    # NaN sorts after every number, as Spark orders it (and compares equal to itself)
    return tuple(
        (0, "")
        if v is None
        else (3, "")
        if _is_nan(v)
        else (1, round(v, 6) if isinstance(v, float) else v)
        if isinstance(v, (int, float, Decimal))
        else (2, str(v))
        for v in row
    )


def _close(a: Any, b: Any, rel: float) -> bool:
    if isinstance(a, float) or isinstance(b, float):
        if a is None or b is None:
            return a is b
        if _is_nan(a) or _is_nan(b):
            return _is_nan(a) and _is_nan(b)
        return math.isclose(float(a), float(b), rel_tol=rel, abs_tol=1e-9)
    return a == b


def row_difference(
    actual: Sequence[Sequence[Any]], expected: Sequence[Sequence[Any]], rel: float = 1e-6
) -> str | None:
    """How ``actual`` differs from ``expected`` as multisets of rows (order ignored, floats
    within ``rel``), or None when they are equal.

    >>> row_difference([(1, 2.0)], [(1, 2.0000000001)]) is None
    True
    >>> row_difference([(1,)], [(1,), (2,)])
    '1 rows, expected 2'
    """
    if len(actual) != len(expected):
        return f"{len(actual)} rows, expected {len(expected)}"
    if _equal_exactly(actual, expected):
        return None
    left = sorted((tuple(r) for r in actual), key=_sort_key)
    right = sorted((tuple(r) for r in expected), key=_sort_key)
    for i, (a, e) in enumerate(zip(left, right, strict=True)):
        if len(a) != len(e) or not all(_close(x, y, rel) for x, y in zip(a, e, strict=True)):
            return f"row {i} differs: {a} != {e}"
    return None


def _equal_exactly(actual: Sequence[Sequence[Any]], expected: Sequence[Sequence[Any]]) -> bool:
    """Whether the rows are equal as multisets with every value exactly equal, which implies
    equal within any tolerance: hashing them is several times faster than sorting by
    :func:`_sort_key` on results of a million rows. False when they are not, or when a value
    cannot be hashed (arrays, maps), and the tolerant comparison decides."""
    try:
        return Counter(map(tuple, actual)) == Counter(map(tuple, expected))
    except TypeError:
        return False
