"""Where Spark writes a result before the cache places its partitions.

A staged result is a directory of Spark's part files, one per task. It lies in the
slowest tier taking writes, so placing a partition there is a rename: a local directory
(a :class:`storage.tiers.LocalTier`'s scratch directory) or, when that tier is at a Hadoop
file system URI, a URI under its ``_tmp/`` (:class:`storage.hadoop.HadoopTier`), which
the driver lists and reads through the tier's file system, never as a local path.

A staged file is a ``Path`` (local) or a ``str`` (a URI): :class:`Staging` measures,
reads and removes either.
"""

from __future__ import annotations

import os
import re
import shutil
import uuid
import zlib
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from criss.errors import StorageError
from criss.storage.hadoop import HadoopTier
from criss.storage.tiers import Tier, file_uri

#: Spark's output file name: part-<task index>-<job uuid>-c<file counter>.<codec>.parquet
PART_FILE = re.compile(r"^part-(\d+)-.*\.parquet$")

#: A staged result (a directory) or one staged file: a local path, or a URI.
Staged = Path | str


class Staging:
    """Staged results of one cache: created in ``tiers[-1]``, the slowest tier taking
    writes (or, when it has no local scratch directory and is not at a URI, in the first
    of ``tiers`` and then ``readable`` that has one)."""

    def __init__(self, tiers: list[Tier], readable: list[Tier]) -> None:
        last = tiers[-1]
        self.remote: HadoopTier | None = last if isinstance(last, HadoopTier) else None
        self._scratch = next(
            (s for t in (last, *tiers, *readable) if (s := t.scratch_dir()) is not None), None
        )
        if self.remote is None and self._scratch is None:
            raise StorageError("no tier can stage Spark's output: none is local or at a URI")

    def new(self, label: str) -> Staged:
        """A fresh directory (not created) for Spark to write ``label``'s partitions into."""
        if self.remote is not None:
            return self.remote.staging_uri(f"{label}.{os.getpid()}")
        return self._scratch / f"stage.{label}.{os.getpid()}.{uuid.uuid4().hex[:8]}"

    def files(self, staged: Staged, indices: list[int]) -> dict[int, Staged | None]:
        """Map Spark's part files in ``staged`` to partition indices (None: empty, no file)."""
        found: dict[int, Staged | None] = dict.fromkeys(indices)
        if not indices:
            return found  # an RDD without partitions: Spark still writes one schema-only file
        for name in self._names(staged):
            match = PART_FILE.match(name)
            if not match:
                continue
            task = int(match.group(1))
            if task >= len(indices):
                raise StorageError(f"unexpected output file {name} for {len(indices)} tasks")
            if found[indices[task]] is not None:
                raise StorageError(f"partition {indices[task]} was written as several files")
            found[indices[task]] = (
                f"{staged}/{name}" if isinstance(staged, str) else Path(staged) / name
            )
        return found

    def _names(self, staged: Staged) -> list[str]:
        if isinstance(staged, str):
            return [n for n in self._remote(staged).list(staged) if "/" not in n]
        return [p.name for p in Path(staged).iterdir()]

    def bytes(self, staged: Staged) -> int:
        """Bytes of Spark's part files in ``staged``."""
        if isinstance(staged, str):
            listed = self._remote(staged).list(staged)
            return sum(size for name, size in listed.items() if PART_FILE.match(name))
        return sum(p.stat().st_size for p in Path(staged).iterdir() if PART_FILE.match(p.name))

    def remove(self, staged: Staged) -> None:
        """Delete a staged result and whatever it still holds; a missing one is no error."""
        if isinstance(staged, str):
            try:
                self._remote(staged).delete(staged, recursive=True)
            except (OSError, StorageError):
                pass  # the tier's _tmp/ is cleaned when the next application opens alone
        else:
            shutil.rmtree(staged, ignore_errors=True)

    def size(self, file: Staged) -> int:
        if isinstance(file, str):
            size = self._remote(file).size(file)
            if size is None:
                raise StorageError(f"staged file {file} is gone")
            return size
        return Path(file).stat().st_size

    def rows(self, file: Staged) -> int:
        """Rows in a staged Parquet file, from its footer."""
        if isinstance(file, str):
            with self._remote(file).open(file) as reader:
                return pq.ParquetFile(reader).metadata.num_rows
        return pq.ParquetFile(file).metadata.num_rows

    def crc(self, file: Staged) -> int:
        if isinstance(file, str):
            with self._remote(file).open(file) as reader:
                return crc32(reader)
        with open(file, "rb") as reader:
            return crc32(reader)

    def place(self, file: Staged, tier: Tier, name: str) -> int:
        """Move a staged file into ``tier`` as ``name``: a rename where both share a file
        system, else a copy through the driver; the bytes placed."""
        if isinstance(file, str) and tier is not self.remote:
            files = self._remote(file)
            with files.open(file) as reader:
                size = tier.write(name, reader)
            files.delete(file)
            return size
        return tier.adopt(file, name)

    @staticmethod
    def uri(file: Staged) -> str:
        """Where Spark reads a staged file."""
        return file if isinstance(file, str) else file_uri(file)

    def _remote(self, uri: str) -> Any:
        if self.remote is None or not uri.startswith(self.remote.root + "/"):
            raise StorageError(f"{uri} is not in a tier this cache stages into")
        return self.remote.files


def crc32(reader: Any) -> int:
    crc = 0
    while chunk := reader.read(1 << 20):
        crc = zlib.crc32(chunk, crc)
    return crc
