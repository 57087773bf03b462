"""Benchmark data as Parquet, written by a generator from PyPI and reused when complete.

A data directory holds one Parquet file per table and a marker file written last: a
generation that was interrupted has no marker and is never reused. Processes that ask for
the same directory at once take turns on a lock file beside it: the first generates, the
others find the data complete (two test workers, or two ``criss datagen``, never wipe each
other's files). TPC-H comes from ``tpchgen-cli``, TPC-DS from ``tpcgen-cli`` (both Rust
ports of the official dbgen/dsdgen).
"""

from __future__ import annotations

import contextlib
import json
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from criss.errors import EnvironmentProblem, WorkloadError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

#: Several row groups per file let Spark split the big tables across tasks.
ROW_GROUP_BYTES = "16MB"


@dataclass(frozen=True)
class ParquetData:
    """How one benchmark's tables are generated, found complete, and registered."""

    benchmark: str  # "tpch", the folder under data/
    title: str  # "TPC-H", for messages
    tool: str  # the generator's command
    subcommand: tuple[str, ...]  # arguments before the options, e.g. ("tpcds", "parquet")
    tables: tuple[str, ...]
    #: (table, name, existing column): a column the queries know by an older name, added to
    #: the table's view as a copy of the column the generator writes
    renamed_columns: tuple[tuple[str, str, str], ...] = ()

    @property
    def marker(self) -> str:
        return f"_CRISS_{self.benchmark.upper()}.json"

    def default_root(self) -> Path:
        return Path.cwd() / "data" / self.benchmark

    def dir_for(self, sf: float, root: Path | None = None) -> Path:
        return (root or self.default_root()) / f"sf{sf:g}"

    def read_marker(self, path: Path) -> dict | None:
        marker = Path(path) / self.marker
        if not marker.is_file():
            return None
        try:
            return json.loads(marker.read_text())
        except (OSError, json.JSONDecodeError):
            return None

    def is_complete(self, path: Path, sf: float) -> bool:
        meta = self.read_marker(path)
        return bool(
            meta
            and float(meta.get("sf", -1)) == float(sf)
            and all((Path(path) / f"{t}.parquet").is_file() for t in self.tables)
        )

    def ensure(self, sf: float, path: Path | None = None, *, quiet: bool = False) -> Path:
        """A directory with complete data at ``sf``, generated if needed.

        An incomplete or different-SF directory is wiped and regenerated, never reused.
        """
        if sf <= 0:
            raise WorkloadError(f"scale factor must be positive, got {sf}")
        path = Path(path) if path else self.dir_for(sf)
        if self.is_complete(path, sf):
            return path
        with _generation_lock(path, quiet=quiet):
            if self.is_complete(path, sf):  # another process generated it while we waited
                return path
            return self._generate(sf, path, quiet=quiet)

    def _generate(self, sf: float, path: Path, *, quiet: bool) -> Path:
        if path.exists():
            shutil.rmtree(path)
        path.mkdir(parents=True)
        started = time.perf_counter()
        if not quiet:
            print(f"generating {self.title} SF{sf:g} Parquet into {path} ...", file=sys.stderr)
        command = [self._executable(), *self.subcommand, "-s", f"{sf:g}", "-o", str(path)]
        command += ["--row-group-bytes", ROW_GROUP_BYTES]
        proc = subprocess.run(command, capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            shutil.rmtree(path, ignore_errors=True)
            raise WorkloadError(
                f"{self.tool} failed ({proc.returncode}): {proc.stderr.strip()[-2000:]}"
            )
        missing = [t for t in self.tables if not (path / f"{t}.parquet").is_file()]
        if missing:
            raise WorkloadError(f"{self.tool} did not write tables {missing} into {path}")
        meta = {
            "sf": sf,
            "generator": self.tool,
            "seconds": round(time.perf_counter() - started, 3),
        }
        (path / (self.marker + ".tmp")).write_text(json.dumps(meta))
        (path / (self.marker + ".tmp")).rename(path / self.marker)
        return path

    def register_views(self, spark: SparkSession, path: Path) -> None:
        """Create (or replace) one temporary view per table over the Parquet files."""
        for table in self.tables:
            df = spark.read.parquet(str(Path(path) / f"{table}.parquet"))
            for name, existing in ((n, e) for t, n, e in self.renamed_columns if t == table):
                df = df.withColumn(name, df[existing])
            df.createOrReplaceTempView(table)

    def _executable(self) -> str:
        beside_python = Path(sys.executable).with_name(self.tool)
        found = str(beside_python) if beside_python.exists() else shutil.which(self.tool)
        if not found:
            raise EnvironmentProblem(
                f"{self.tool} is not installed, and {self.title} data needs it: "
                f"`pip install {self.tool}`."
            )
        return found


@contextlib.contextmanager
def _generation_lock(path: Path, *, quiet: bool):
    """Hold an exclusive lock on ``.<name>.lock`` beside ``path`` (POSIX ``flock``).

    The lock is released by the kernel when the process dies, so a killed generation never
    blocks the next one. Where ``fcntl`` does not exist (Windows), generation is unguarded.
    """
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not a POSIX system
        yield
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.parent / f".{path.name}.lock", "a") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if not quiet:
                print(f"waiting for another process generating into {path} ...", file=sys.stderr)
            fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
