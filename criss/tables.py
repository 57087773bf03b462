"""Facts about a query's input tables read without Spark: row counts from Parquet footers.

A relation's identity (``criss.bridge.file_relation_identity``) lists its files with size
and modification time, so a footer read once is valid until the file changes; the cache is
keyed by all three.
"""

from __future__ import annotations

import functools
from typing import Any
from urllib.parse import unquote, urlparse


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


@functools.lru_cache(maxsize=8192)
def _footer_rows(path: str, size: int, mtime: int) -> int | None:
    url = urlparse(path)
    if url.scheme not in ("", "file"):
        return None
    import pyarrow.parquet as pq

    try:
        return int(pq.read_metadata(unquote(url.path)).num_rows)
    except (OSError, ValueError):
        return None
