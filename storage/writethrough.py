"""Write-through: the tasks of the user's own action write a cached result as they compute it.

A write-through step stands in the plan over the operator to cache (Spark's ``mapInArrow``):
each task passes its partition's Arrow batches on unchanged and writes them to a Parquet
file beside. Only a partition read to its end is committed, by renaming its file to
``<staged>/part-<partition>.parquet`` (``.empty`` for no rows), so a ``show()`` that stopped
early leaves exactly the partitions it finished. A JSON file beside each partition says
what writing it cost.

Every action on one DataFrame runs the same plan under the step, so their partitions are
interchangeable; the session checks that each action reports the same layout and drops
the step's files otherwise.

This module runs in Spark's Python workers: plain pyarrow and the standard library.
"""

from __future__ import annotations

import json
import os
import re
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

#: The name a write-through step's function carries in Spark's plans, before its token.
WRITER_PREFIX = "criss_write_"
#: A committed partition: its data, or the marker of a partition without rows.
_WRITTEN = re.compile(r"^part-(\d{5})\.(parquet|empty)$")


def partition_writer(staged: str, token: str) -> Callable[[Iterator[Any]], Iterator[Any]]:
    """The ``mapInArrow`` function of a write-through step writing into ``staged``.

    Columns are written positionally (``c0..cN``, the cache's schema); batches are passed
    on as they came. Writing never fails the task: a partition that cannot be written
    (a full disk, a missing directory) is simply not committed. The function and this
    module travel by value, so Spark's Python workers need pyarrow but not Criss.
    """
    from pyspark import cloudpickle

    cloudpickle.register_pickle_by_value(sys.modules[__name__])

    def write(batches: Iterator[Any]) -> Iterator[Any]:
        partition = _PartitionFile.open(staged)
        try:
            for batch in batches:
                if partition is not None:
                    partition = partition.add(batch)
                yield batch
            if partition is not None:  # the input ended normally: the partition is whole
                partition.commit()
                partition = None
        finally:  # a task stopped early (a limit, a failure) commits nothing
            if partition is not None:
                partition.abandon()

    write.__name__ = write.__qualname__ = WRITER_PREFIX + token
    return write


class _PartitionFile:
    """One task's partition being written: a temporary file renamed when it is whole."""

    def __init__(self, directory: str, final: str, partial: str) -> None:
        self.directory, self.final, self.partial = directory, final, partial
        self.writer: Any = None
        self.rows = 0
        self.seconds = 0.0

    @classmethod
    def open(cls, staged: str) -> _PartitionFile | None:
        try:
            from pyspark import TaskContext

            context = TaskContext.get()
            final = os.path.join(staged, f"part-{context.partitionId():05d}")
            partial = f"{final}.{context.taskAttemptId()}.{uuid.uuid4().hex[:6]}.tmp"
            return cls(staged, final, partial)
        except Exception:
            return None

    def add(self, batch: Any) -> _PartitionFile | None:
        """Write ``batch``; None (and nothing left behind) if it could not be written."""
        started = time.perf_counter()
        try:
            import pyarrow as pa
            import pyarrow.parquet as pq

            names = [f"c{i}" for i in range(batch.num_columns)]
            batch = pa.RecordBatch.from_arrays(batch.columns, names=names)
            if self.writer is None:
                os.makedirs(self.directory, exist_ok=True)
                self.writer = pq.ParquetWriter(self.partial, batch.schema, compression="snappy")
            self.writer.write_batch(batch)
        except Exception:
            self.abandon()
            return None
        self.rows += batch.num_rows
        self.seconds += time.perf_counter() - started
        return self

    def commit(self) -> None:
        started = time.perf_counter()
        try:
            os.makedirs(self.directory, exist_ok=True)
            if self.writer is None:
                Path(self.partial).touch()
                suffix = ".empty"
            else:
                self.writer.close()
                self.writer = None
                suffix = ".parquet"
            self.seconds += time.perf_counter() - started
            with open(f"{self.final}.json", "w") as cost:
                json.dump({"rows": self.rows, "write_seconds": self.seconds}, cost)
            os.replace(self.partial, self.final + suffix)
        except Exception:
            self.abandon()

    def abandon(self) -> None:
        try:
            if self.writer is not None:
                self.writer.close()
                self.writer = None
            if os.path.exists(self.partial):
                os.remove(self.partial)
        except Exception:
            pass


def written_partitions(directory: Path) -> dict[int, Path | None]:
    """The partitions committed in ``directory``: index → file (None: no rows)."""
    found: dict[int, Path | None] = {}
    if not directory.is_dir():
        return found
    for path in directory.iterdir():
        match = _WRITTEN.match(path.name)
        if match:
            found[int(match.group(1))] = path if match.group(2) == "parquet" else None
    return found


def write_seconds(directory: Path, indices: list[int]) -> float:
    """Seconds the tasks spent writing partitions ``indices`` (their cost files)."""
    total = 0.0
    for index in indices:
        try:
            with open(directory / f"part-{index:05d}.json") as cost:
                total += float(json.load(cost)["write_seconds"])
        except (OSError, ValueError, KeyError):
            continue
    return total


def forget_partitions(directory: Path, indices: list[int]) -> None:
    """Remove what is left of partitions ``indices`` (their markers and cost files)."""
    for index in indices:
        for suffix in (".parquet", ".empty", ".json"):
            (directory / f"part-{index:05d}{suffix}").unlink(missing_ok=True)
