"""Cached results on the driver: reading Parquet files as Arrow, and sorting them as Spark.

Plain pyarrow and Python, no JVM: the bridge uses these to hand small cached results to
Spark as local relations (no read job) and to write small results without a write job.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from criss.errors import BridgeError
from criss.storage.tiers import local_file

if TYPE_CHECKING:
    from criss.qtree.rewrite import SortKey

#: Most rows a cached result may have to be put in ORDER BY order on the driver.
LOCAL_SORT_ROWS = 200_000


def read_arrow(files: list[str]) -> Any:
    """Cached Parquet files as one Arrow table (a damaged file raises BridgeError)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        return pa.concat_tables([pq.read_table(local_file(name) or name) for name in files])
    except (OSError, pa.ArrowException) as exc:
        raise BridgeError(f"cached files could not be read: {exc}") from exc


def parquet_rows(files: list[str]) -> int:
    """Rows in cached Parquet files, from their footers (a damaged file raises BridgeError)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        return sum(pq.read_metadata(local_file(name) or name).num_rows for name in files)
    except (OSError, pa.ArrowException) as exc:
        raise BridgeError(f"cached files could not be read: {exc}") from exc


def arrow_exact(data_type: Any) -> bool:
    """Whether values of ``data_type`` survive Parquet → Arrow → Spark unchanged.

    Timestamps stay with Spark: its INT96 Parquet timestamps read back without a time zone.
    Strings only with the default collation.
    """
    from pyspark.sql import types as T

    if isinstance(data_type, T.StringType):
        return data_type == T.StringType()
    return isinstance(
        data_type,
        (
            T.BooleanType,
            T.ByteType,
            T.ShortType,
            T.IntegerType,
            T.LongType,
            T.FloatType,
            T.DoubleType,
            T.DecimalType,
            T.DateType,
            T.BinaryType,
        ),
    )


def spark_order(table: Any, order: tuple[SortKey, ...]) -> Any:
    """``table``'s rows in the order Spark's Sort gives them for ``order`` (ties in any order).

    Spark's orderings: NaN above every other float (and equal to NaN), -0.0 equal to 0.0,
    strings and binaries by unsigned bytes (for UTF-8, code point order), nulls where
    ``nulls_first`` says. Stable passes from the last key to the first.
    """
    indices = list(range(table.num_rows))
    for key in reversed(order):
        values = table.column(key.column).to_pylist()
        # reverse=True keeps equal elements in order; place nulls so they land right after it
        null_rank = 0 if key.nulls_first != key.descending else 2

        def rank(i: int, values: list = values, null_rank: int = null_rank) -> tuple:
            value = values[i]
            if value is None:
                return (null_rank,)
            if isinstance(value, float) and value != value:
                return (1, 1)
            return (1, 0, value)

        indices.sort(key=rank, reverse=key.descending)
    import pyarrow as pa

    # typed: an empty Python list becomes a null-typed array, which ``take`` refuses
    return table.take(pa.array(indices, type=pa.int64()))
