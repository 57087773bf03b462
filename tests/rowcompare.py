"""Compare query results as multisets of rows, floats within a relative tolerance."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from criss.workload.rows import row_difference


def assert_same_rows(
    actual: Sequence[Sequence[Any]], expected: Sequence[Sequence[Any]], rel: float = 1e-6
) -> None:
    """Equal as multisets of rows (order ignored), floats within ``rel``."""
    difference = row_difference(actual, expected, rel)
    assert difference is None, difference
