"""How many of a table's rows a conjunction of conditions keeps, estimated from what its
files say of each column: every Parquet row group's rows and its minimum and maximum.

Within a row group a column's values are taken as spread evenly over its range, and
conditions on different columns as independent, as Catalyst's own estimates of a filter
do without histograms. Row groups are counted one by one, so data clustered on a column
(a table written in date order) is estimated by the groups that hold the values asked for.
Only what can be counted is: comparisons and IN lists over integral, date and decimal
columns (each a discrete domain: a decimal counts in steps of its scale). Other conditions
(strings, floating point, anything opaque) keep every row here: the estimate errs towards
fewer rows dropped, never more.

>>> from criss.qtree.predicates import Atom
>>> year = [Atom.compare("d", ">=", "integer", "1994"), Atom.compare("d", "<", "integer", "1995")]
>>> kept_share(year, {"d": [(1000, 1992, 1998)]})  # one year of seven
0.14285714285714285
>>> kept_share(year, {"d": [(500, 1992, 1994), (500, 1995, 1998)]})  # clustered by year
0.16666666666666666
"""

from __future__ import annotations

import datetime as dt
import re
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from decimal import Decimal, InvalidOperation
from typing import Any

from criss.qtree.predicates import INTEGRAL, Atom

#: One row group of a column: its rows, and the minimum and maximum value it holds.
ColumnRange = tuple[int, Any, Any]
_DECIMAL_SCALE = re.compile(r"^decimal\(\d+,(\d+)\)$")


def kept_share(atoms: Iterable[Atom], ranges: Mapping[str, Sequence[ColumnRange]]) -> float:
    """The share of rows that satisfy every one of ``atoms``, from ``ranges`` (the row
    groups of each column, by lineage): the product over the columns they compare, each
    column's share counted over its row groups. 1.0 where nothing can be counted."""
    by_column: dict[str, list[Atom]] = defaultdict(list)
    for atom in atoms:
        if atom.kind in ("compare", "in"):
            by_column[atom.column].append(atom)
    share = 1.0
    for column, conditions in by_column.items():
        groups = ranges.get(column)
        counted = column_share(conditions, groups) if groups else None
        if counted is not None:
            share *= counted
    return share


def column_share(atoms: Sequence[Atom], groups: Sequence[ColumnRange]) -> float | None:
    """The share of the rows in ``groups`` whose value satisfies every one of ``atoms``
    (comparisons and IN lists on one column); None where it cannot be counted (a type
    with no discrete steps here, a literal or a group bound that is not one of its
    values, a group without a minimum and maximum)."""
    types = {a.data_type for a in atoms}
    if len(types) != 1:
        return None
    data_type = types.pop()
    try:
        low, high, allowed = _bounds(atoms, data_type)
        total = kept = 0.0
        for rows, smallest, largest in groups:
            first, last = _step(data_type, smallest), _step(data_type, largest)
            if first is None or last is None or last < first:
                return None
            width = last - first + 1
            if allowed is None:
                inside = min(high, last) - max(low, first) + 1
            else:
                inside = sum(1 for v in allowed if max(low, first) <= v <= min(high, last))
            total += rows
            kept += rows * min(max(inside, 0) / width, 1.0)
    except (ValueError, TypeError, InvalidOperation):
        return None
    return kept / total if total > 0 else None


def _bounds(atoms: Sequence[Atom], data_type: str) -> tuple[float, float, set[int] | None]:
    """The lowest and highest step the comparisons allow, and the steps the IN lists allow
    (None: no IN list)."""
    low, high = float("-inf"), float("inf")
    allowed: set[int] | None = None
    for atom in atoms:
        values = [_step(data_type, v) for v in atom.values]
        if any(v is None for v in values):
            raise ValueError(f"{atom.values!r} are not steps of {data_type}")
        if atom.kind == "in":
            chosen = {int(v) for v in values if v is not None}
            allowed = chosen if allowed is None else allowed & chosen
            continue
        value = values[0]
        if atom.op in (">", ">=", "="):
            low = max(low, value + 1 if atom.op == ">" else value)
        if atom.op in ("<", "<=", "="):
            high = min(high, value - 1 if atom.op == "<" else value)
    return low, high, allowed


def _step(data_type: str, value: Any) -> int | None:
    """``value`` (a literal's text, or a footer's minimum or maximum) as an integer step of
    ``data_type``'s domain; None for a type counted in no steps here."""
    if data_type in INTEGRAL:
        return int(value)
    if data_type == "date":
        day = dt.date.fromisoformat(value) if isinstance(value, str) else value
        if not isinstance(day, dt.date) or isinstance(day, dt.datetime):
            raise TypeError(f"not a date: {value!r}")
        return day.toordinal()
    scale = _DECIMAL_SCALE.match(data_type)
    if scale:
        scaled = Decimal(str(value)).scaleb(int(scale.group(1)))
        if scaled != scaled.to_integral_value():
            raise ValueError(f"{value!r} is not a step of {data_type}")
        return int(scaled)
    return None
