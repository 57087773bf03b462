"""Measure a tier's bandwidth with a short write-then-read of a scratch file."""

from __future__ import annotations

import os
import time
from pathlib import Path

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
