"""Input-table facts read from Parquet footers, and the rule that uses them."""

from __future__ import annotations

import os

import pyarrow as pa
import pyarrow.parquet as pq

from criss.policies.selection import MOST_ROWS, keeps_most_rows
from criss.tables import table_rows


def _relation(*paths, fmt="Parquet"):
    files = [(f"file:{p}", os.path.getsize(p), int(os.path.getmtime(p) * 1000)) for p in paths]
    return {"format": fmt, "files": files}


def test_table_rows_sums_the_footers_of_every_file(tmp_path):
    for name, n in (("a", 3), ("b", 4)):
        pq.write_table(pa.table({"x": list(range(n))}), tmp_path / f"{name}.parquet")
    relation = _relation(tmp_path / "a.parquet", tmp_path / "b.parquet")
    assert table_rows(relation) == 7


def test_table_rows_is_unknown_for_other_formats_remote_or_broken_files(tmp_path):
    pq.write_table(pa.table({"x": [1]}), tmp_path / "a.parquet")
    assert table_rows(_relation(tmp_path / "a.parquet", fmt="CSV")) is None
    assert table_rows({"format": "Parquet", "files": [("hdfs://nn/t/a.parquet", 1, 1)]}) is None
    (tmp_path / "bad.parquet").write_bytes(b"not parquet")
    assert table_rows(_relation(tmp_path / "a.parquet", tmp_path / "bad.parquet")) is None
    assert table_rows(None) is None


def test_a_changed_file_is_read_again(tmp_path):
    path = tmp_path / "a.parquet"
    pq.write_table(pa.table({"x": [1, 2]}), path)
    assert table_rows(_relation(path)) == 2
    pq.write_table(pa.table({"x": [1, 2, 3, 4, 5]}), path)
    os.utime(path, (1, 1))  # a new mtime even on a coarse clock
    assert table_rows(_relation(path)) == 5


def test_keeps_most_rows():
    assert keeps_most_rows(100, 100)
    assert keeps_most_rows(int(MOST_ROWS * 1000), 1000)
    assert not keeps_most_rows(int(MOST_ROWS * 1000) - 1, 1000)
    assert not keeps_most_rows(None, 1000)
    assert not keeps_most_rows(10, None)
    assert not keeps_most_rows(10, 0)
