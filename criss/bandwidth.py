"""Measure a tier's bandwidth with a short write-then-read of a scratch file."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

from criss.storage.tiers import file_uri

CALIBRATION_BYTES = 32 << 20


def measure_bandwidth(directory: str | Path, size: int = CALIBRATION_BYTES) -> float:
    """Bytes per second for writing (with fsync) and reading back ``size`` bytes."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f".calibrate.{os.getpid()}"
    block = os.urandom(1 << 20)
    try:
        started = time.perf_counter()
        with open(path, "wb") as f:
            for _ in range(size // len(block)):
                f.write(block)
            f.flush()
            os.fsync(f.fileno())
        with open(path, "rb") as f:
            while f.read(1 << 22):
                pass
        elapsed = time.perf_counter() - started
    finally:
        path.unlink(missing_ok=True)
    return 2 * size / max(elapsed, 1e-6)


def measure_tier_bandwidth(tier, size: int = CALIBRATION_BYTES) -> float:
    """Bytes per second writing and reading ``size`` bytes through a tier's own contract."""
    import io

    name = f"calibrate-{os.getpid()}.bin"
    payload = os.urandom(size)
    started = time.perf_counter()
    try:
        tier.write(name, io.BytesIO(payload))
        with tier.open(name) as reader:
            while reader.read(1 << 22):
                pass
        elapsed = time.perf_counter() - started
    finally:
        tier.delete(name)
    return 2 * size / max(elapsed, 1e-6)


#: Rows of the Spark calibration job (about 10 MB of Parquet).
CODEC_ROWS = 1_000_000
#: Dot folder (never listed by a tier) holding the calibration job's output.
CODEC_SCRATCH = ".calibrate"


def measure_codec_rate(spark, directory: str | Path, rows: int = CODEC_ROWS) -> float:
    """Bytes of Parquet per second Spark writes and reads back (encode + decode + I/O),
    measured in the local ``directory``.

    On a 2-core machine this is tens of MB/s, far below a raw file copy: it is what loading
    or storing a cached result really costs, so it bounds each tier's bandwidth.
    """
    import shutil

    # Spark skips (and warns "All paths were ignored" about) a path whose own name starts
    # with "." or "_": the job's folder is visible, inside a dot folder tiers never list.
    scratch = Path(directory) / CODEC_SCRATCH
    target = scratch / f"codec-{os.getpid()}"

    def remove() -> None:
        shutil.rmtree(target, ignore_errors=True)
        try:
            scratch.rmdir()  # unless another application measures there right now
        except OSError:
            pass

    def size() -> int:
        return sum(p.stat().st_size for p in target.glob("*.parquet"))

    return measure_codec_rate_at(spark, file_uri(target), size, remove, rows)


def measure_codec_rate_at(
    spark,
    target: str,
    size: Callable[[], int],
    remove: Callable[[], None],
    rows: int = CODEC_ROWS,
) -> float:
    """``measure_codec_rate`` at the URI ``target``: ``size`` gives the bytes Spark wrote
    there, ``remove`` deletes them."""

    def frame(n: int):
        return spark.range(0, n, 1, 2).selectExpr(
            "id",
            "id * 7 % 1000 as a",
            "cast(id * 13 as string) as s",
            "cast(id % 977 as double) / 3 as d",
            "date_add(date'1992-01-01', cast(id % 2500 as int)) as dt",
        )

    try:
        frame(rows // 20).write.mode("overwrite").parquet(target)  # JIT warm-up, untimed
        started = time.perf_counter()
        frame(rows).write.mode("overwrite").parquet(target)
        wrote = time.perf_counter() - started
        written = size()
        started = time.perf_counter()
        spark.read.parquet(target).write.format("noop").mode("overwrite").save()
        read = time.perf_counter() - started
    finally:
        remove()
    return 2 * written / max(wrote + read, 1e-6)
