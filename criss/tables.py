"""Facts about a query's input tables read without Spark: row counts, the bytes of each
column and each row group's range of a column, from Parquet footers.

A relation's identity (``criss.bridge.file_relation_identity``) lists its files with size
and modification time, so a footer read once is valid until the file changes; the cache is
keyed by all three.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Collection
from typing import Any, TypeVar
from urllib.parse import unquote, urlparse

_T = TypeVar("_T")


def table_rows(relation: dict[str, Any] | None) -> int | None:
    """Rows of a Parquet relation on the local file system, or None where unknown
    (another format, a remote file system, an unreadable footer)."""
    if not relation or str(relation.get("format", "")).lower() != "parquet":
        return None
    total = 0
    for path, size, mtime in relation.get("files", ()):
        rows = _footer_rows(path, size, mtime)
        if rows is None:
            return None
        total += rows
    return total


def read_bytes(relation: dict[str, Any] | None, positions: Collection[int]) -> int | None:
    """Bytes of the columns at ``positions`` of a Parquet relation's output (its fields'
    compressed column chunks, from the footers) on the local file system, or None where
    unknown. A partition column is in no file and reads none."""
    if not relation or str(relation.get("format", "")).lower() != "parquet":
        return None
    fields = relation.get("fields")
    if not fields or any(not 0 <= p < len(fields) for p in positions):
        return None
    wanted = {str(fields[p]).lower() for p in positions}
    total = 0
    for path, size, mtime in relation.get("files", ()):
        footer = _footer(path, size, mtime)
        if footer is None:
            return None
        total += sum(n for name, n in footer[1] if name in wanted)
    return total


def column_ranges(
    relation: dict[str, Any] | None, position: int
) -> list[tuple[int, Any, Any]] | None:
    """Each row group of a Parquet relation's files with the rows it holds and the minimum
    and maximum of the column at ``position`` of the relation's output (footer
    statistics), or None where any is unknown (another format, a remote file system, a
    partition column, a file written without statistics)."""
    if not relation or str(relation.get("format", "")).lower() != "parquet":
        return None
    fields = relation.get("fields")
    if not fields or not 0 <= position < len(fields):
        return None
    name = str(fields[position]).lower()
    groups: list[tuple[int, Any, Any]] = []
    for path, size, mtime in relation.get("files", ()):
        found = _column_ranges(path, size, mtime, name)
        if found is None:
            return None
        groups.extend(found)
    return groups


@functools.lru_cache(maxsize=4096)
def _column_ranges(
    path: str, size: int, mtime: int, name: str
) -> tuple[tuple[int, Any, Any], ...] | None:
    return _from_footer(path, functools.partial(_ranges_in, name=name))


def _ranges_in(metadata: Any, name: str) -> tuple[tuple[int, Any, Any], ...] | None:
    groups = []
    for group in range(metadata.num_row_groups):
        row_group = metadata.row_group(group)
        chunks = [
            row_group.column(i)
            for i in range(row_group.num_columns)
            if row_group.column(i).path_in_schema.lower() == name
        ]
        statistics = chunks[0].statistics if len(chunks) == 1 else None
        if statistics is None or not statistics.has_min_max:
            return None
        groups.append((int(row_group.num_rows), statistics.min, statistics.max))
    return tuple(groups)


def _footer_rows(path: str, size: int, mtime: int) -> int | None:
    footer = _footer(path, size, mtime)
    return None if footer is None else footer[0]


@functools.lru_cache(maxsize=8192)
def _footer(path: str, size: int, mtime: int) -> tuple[int, tuple[tuple[str, int], ...]] | None:
    """A local Parquet file's rows and compressed bytes per top-level column (lower case,
    as Spark matches them), or None where it cannot be read."""
    return _from_footer(path, _rows_and_column_bytes)


def _rows_and_column_bytes(metadata: Any) -> tuple[int, tuple[tuple[str, int], ...]]:
    columns: dict[str, int] = {}
    for group in range(metadata.num_row_groups):
        row_group = metadata.row_group(group)
        for index in range(row_group.num_columns):
            chunk = row_group.column(index)
            name = chunk.path_in_schema.split(".")[0].lower()
            columns[name] = columns.get(name, 0) + int(chunk.total_compressed_size)
    return int(metadata.num_rows), tuple(sorted(columns.items()))


def _from_footer(path: str, read: Callable[[Any], _T]) -> _T | None:
    """``read`` applied to a local Parquet file's footer (pyarrow's FileMetaData), or None
    where the file is not on the local file system or its footer cannot be read."""
    url = urlparse(path)
    if url.scheme not in ("", "file"):
        return None
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        return read(pq.read_metadata(unquote(url.path)))
    except (OSError, ValueError, pa.ArrowException):  # a damaged footer: file bytes count
        return None
