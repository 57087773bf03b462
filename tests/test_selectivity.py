"""The share of a table's rows that conditions keep, from its files' column ranges: the
rule (pure), and the row groups' ranges read from real Parquet footers."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from criss.qtree.predicates import Atom
from criss.qtree.selectivity import column_share, kept_share
from criss.tables import column_ranges


def _between(column, data_type, low, high):
    return [Atom.compare(column, ">=", data_type, low), Atom.compare(column, "<=", data_type, high)]


def test_a_year_of_seven_keeps_a_seventh_and_clustered_groups_count_apart():
    year = [Atom.compare("d", ">=", "integer", "1994"), Atom.compare("d", "<", "integer", "1995")]
    assert kept_share(year, {"d": [(1000, 1992, 1998)]}) == pytest.approx(1 / 7)
    clustered = [(500, 1992, 1994), (500, 1995, 1998)]
    assert kept_share(year, {"d": clustered}) == pytest.approx(0.5 * 1 / 3)


def test_strict_and_inclusive_bounds_count_steps_of_the_type():
    groups = [(10, 0, 9)]
    assert kept_share([Atom.compare("x", ">", "integer", "7")], {"x": groups}) == 0.2
    assert kept_share([Atom.compare("x", ">=", "integer", "7")], {"x": groups}) == 0.3
    assert kept_share([Atom.compare("x", "=", "integer", "3")], {"x": groups}) == 0.1
    assert kept_share([Atom.compare("x", "<", "integer", "0")], {"x": groups}) == 0.0


def test_decimals_count_in_steps_of_their_scale_and_dates_in_days():
    """TPC-H Q6's discount between 0.05 and 0.07 (three of eleven values) and a year of
    ship dates: independent columns multiply."""
    discount = _between("d", "decimal(15,2)", "0.05", "0.07")
    ranges = {"d": [(100, Decimal("0.00"), Decimal("0.10"))]}
    assert kept_share(discount, ranges) == pytest.approx(3 / 11)
    year = _between("s", "date", "1994-01-01", "1994-12-31")
    ranges["s"] = [(100, dt.date(1994, 1, 1), dt.date(1995, 12, 31))]
    assert kept_share(year, ranges) == pytest.approx(365 / 730)
    assert kept_share(discount + year, ranges) == pytest.approx(3 / 11 * 365 / 730)


def test_in_lists_count_their_values_within_each_group_and_the_range():
    groups = [(10, 0, 9), (10, 10, 19)]
    values = Atom.one_of("x", "integer", ["1", "5", "12", "50"])
    assert kept_share([values], {"x": groups}) == pytest.approx((2 / 10 + 1 / 10) / 2)
    narrowed = [values, Atom.compare("x", "<", "integer", "5")]
    assert kept_share(narrowed, {"x": groups}) == pytest.approx(1 / 10 / 2)


@pytest.mark.parametrize(
    "atoms, groups",
    [
        ([Atom.one_of("x", "string", ["a"])], [(10, "a", "z")]),  # strings: no steps
        ([Atom.compare("x", "<", "double", "2.5")], [(10, 0.0, 9.0)]),  # floating point
        ([Atom.compare("x", "<", "decimal(15,2)", "0.055")], [(10, Decimal(0), Decimal(1))]),
        ([Atom.compare("x", "<", "integer", "5")], [(10, None, None)]),  # no statistics
        ([Atom.opaque("x like 'a%'", ["x"])], [(10, 0, 9)]),
    ],
)
def test_what_cannot_be_counted_keeps_every_row(atoms, groups):
    assert kept_share(atoms, {"x": groups}) == 1.0


def test_a_column_without_ranges_keeps_every_row_and_others_still_count():
    atoms = [Atom.compare("x", "<", "integer", "5"), Atom.compare("y", "<", "integer", "5")]
    assert kept_share(atoms, {"y": [(10, 0, 9)]}) == 0.5
    assert column_share(atoms[:1], []) is None
    assert kept_share(atoms[:1], {"x": []}) == 1.0


def test_row_groups_ranges_come_from_the_parquet_footers(tmp_path):
    path = tmp_path / "t.parquet"
    table = pa.table(
        {
            "K": list(range(100)),
            "day": [dt.date(2020, 1, 1) + dt.timedelta(days=i) for i in range(100)],
            "s": ["x"] * 100,
        }
    )
    pq.write_table(table, path, row_group_size=40)
    stat = path.stat()
    relation = {
        "format": "parquet",
        "fields": ["k", "day", "s", "part"],
        "files": [(str(path), stat.st_size, int(stat.st_mtime * 1000))],
    }
    assert column_ranges(relation, 0) == [(40, 0, 39), (40, 40, 79), (20, 80, 99)]
    days = column_ranges(relation, 1)
    assert days[0] == (40, dt.date(2020, 1, 1), dt.date(2020, 2, 9))
    atoms = [Atom.compare("k", "<", "integer", "50")]
    assert kept_share(atoms, {"k": column_ranges(relation, 0)}) == pytest.approx(0.5)
    assert column_ranges(relation, 3) is None  # a partition column: in no file
    assert column_ranges(relation, 9) is None
    assert column_ranges({**relation, "format": "csv"}, 0) is None
    unwritten = {**relation, "files": [(str(tmp_path / "gone.parquet"), 1, 1)]}
    assert column_ranges(unwritten, 0) is None
