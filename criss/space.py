"""How a session's options become its cache space: tiers, quotas and bandwidths.

One ``home`` is one cache space. The memory tier lives on tmpfs in a directory derived
from ``home``, so two homes never share or evict each other's data.
"""

from __future__ import annotations

import getpass
import hashlib
import logging
import os
import shutil
import time
from pathlib import Path

from criss.bandwidth import (
    CALIBRATION_BYTES,
    measure_bandwidth,
    measure_codec_rate,
    measure_tier_bandwidth,
)
from criss.config import MEDIA, CrissOptions
from criss.errors import ConfigError
from criss.policies.benefit import BenefitModel
from criss.qtree import QTree
from criss.storage.cache import PartitionCache
from criss.storage.tiers import LocalTier, Tier, make_private_dir

log = logging.getLogger("criss")
#: INFO lines naming slow once-only steps (the CLI shows them; see workload.replay).
progress_log = logging.getLogger("criss.progress")

SHM = Path("/dev/shm")
#: Default quotas: a share of the medium's size, capped.
DEFAULT_MEMORY_SHARE, DEFAULT_MEMORY_CAP = 0.25, 2 << 30
DEFAULT_DISK_SHARE, DEFAULT_DISK_CAP = 0.5, 20 << 30


#: Marker in a memory tier directory naming the home it belongs to.
HOME_MARKER = ".home"


def memory_dir(home: Path) -> Path:
    """``/dev/shm/criss-<user>/<hash of home>`` (``<home>/memory`` where there is no tmpfs)."""
    if SHM.is_dir() and os.access(SHM, os.W_OK):
        digest = hashlib.sha256(str(home.resolve()).encode()).hexdigest()[:16]
        return SHM / f"criss-{getpass.getuser()}" / digest
    log.warning("no /dev/shm: the memory tier falls back to %s (not RAM-backed)", home / "memory")
    return home / "memory"


def sweep_abandoned_memory_dirs(parent: Path) -> list[Path]:
    """Free RAM held by memory tiers whose home directory no longer exists."""
    removed = []
    for directory in parent.iterdir() if parent.is_dir() else ():
        marker = directory / HOME_MARKER
        try:
            home = Path(marker.read_text().strip())
        except OSError:
            continue  # not ours, or being created right now
        if not home.exists():
            shutil.rmtree(directory, ignore_errors=True)
            removed.append(directory)
    return removed


def _default_quota(path: Path, share: float, cap: int) -> int:
    total = shutil.disk_usage(path).total if path == SHM else shutil.disk_usage(path).free
    return int(min(cap, total * share))


def build_tiers(options: CrissOptions, home: Path) -> tuple[list[Tier], list[Tier]]:
    """(tiers taking writes fastest first, every tier that may hold data)."""
    if options.media not in MEDIA:
        raise ConfigError(f"media must be one of {MEDIA}, not {options.media!r}")
    disk = LocalTier(
        "disk",
        home / "disk",
        options.disk_capacity
        if options.disk_capacity is not None
        else _default_quota(home, DEFAULT_DISK_SHARE, DEFAULT_DISK_CAP),
    )
    fast = _fast_tier(options, home)
    everything = [fast, disk]
    if options.media == "memory":
        return [fast], everything
    if options.media == "disk":
        return [disk], everything
    return [fast, disk], everything


def _fast_tier(options: CrissOptions, home: Path) -> Tier:
    if options.alluxio_url:
        from criss.storage.alluxio import AlluxioTier  # the client is imported only when configured

        digest = hashlib.sha256(str(home.resolve()).encode()).hexdigest()[:16]
        return AlluxioTier(
            name="alluxio",
            url=options.alluxio_url,
            root=options.alluxio_root or f"/criss/{digest}",
            mount=options.alluxio_mount,
            capacity_bytes=options.alluxio_capacity,
        )
    directory = Path(options.memory_dir) if options.memory_dir else memory_dir(home)
    make_private_dir(directory.parent)
    if not options.memory_dir:
        sweep_abandoned_memory_dirs(directory.parent)
    tier = LocalTier("memory", directory, None)
    (directory / HOME_MARKER).write_text(str(home.resolve()))
    tier.capacity_bytes = (
        options.memory_capacity
        if options.memory_capacity is not None
        else _default_quota(SHM if SHM.is_dir() else home, DEFAULT_MEMORY_SHARE, DEFAULT_MEMORY_CAP)
    )
    return tier


def calibrate(tiers: list[Tier], options: CrissOptions, qtree: QTree, codec_rate: float) -> None:
    """Give each tier its effective bandwidth: configured, or measured once and cached.

    A cached result moves through the medium *and* through Spark's Parquet encoder/decoder,
    so the effective bandwidth is 1 / (1/medium + 1/codec_rate).
    """
    configured = {
        "memory": options.memory_bandwidth,
        "disk": options.disk_bandwidth,
        "alluxio": options.alluxio_bandwidth,
    }
    for tier in tiers:
        if configured.get(tier.name):
            tier.bandwidth = float(configured[tier.name])
            continue
        key = f"bandwidth:{tier.name}:{tier.describe().get('root') or tier.describe()}"
        medium = qtree.meta(key)
        if not medium:
            progress_log.info(
                "measuring the %s tier's bandwidth (%d MiB written and read back; once per "
                "home, option %s_bandwidth skips it)",
                tier.name,
                CALIBRATION_BYTES >> 20,
                tier.name,
            )
            # A dot file at the tier's root, never in its temp directory: another application
            # starting on this home may clean that temp directory while we measure.
            medium = (
                measure_bandwidth(tier.root)
                if isinstance(tier, LocalTier)
                else measure_tier_bandwidth(tier)
            )
            qtree.set_meta(key, medium)
        tier.bandwidth = 1 / (1 / float(medium) + 1 / codec_rate)


def spark_codec_rate(spark, options: CrissOptions, qtree: QTree, scratch: Path) -> float:
    """Spark's Parquet throughput: configured, cached in the catalog, or measured once."""
    if options.codec_rate:
        return float(options.codec_rate)
    cached = qtree.meta("codec_rate")
    if cached:
        return float(cached)
    progress_log.info(
        "measuring Spark's Parquet write+read rate with a small Spark job (~15-30 s, once "
        "per home; option codec_rate skips it)"
    )
    started = time.perf_counter()
    rate = measure_codec_rate(spark, scratch)
    qtree.set_meta("codec_rate", rate)
    progress_log.info(
        "Parquet rate %.0f MB/s, measured in %.1f s", rate / 1e6, time.perf_counter() - started
    )
    return rate


def open_cache(
    spark, options: CrissOptions, home: Path, qtree: QTree, policy: BenefitModel
) -> PartitionCache:
    writable, everything = build_tiers(options, home)
    disk = next(t for t in everything if t.name == "disk")
    for tier in everything:  # for readers of the catalog alone (dashboard, CLI)
        qtree.set_meta(f"capacity:{tier.name}", tier.capacity_bytes)
    # Open (and so register this application with) the cache before measuring anything:
    # another application starting on this home cleans leftovers only while it is alone.
    cache = PartitionCache(
        home / "cache.db",
        writable,
        readable=[t for t in everything if t not in writable],
        policy=policy,
        usage=qtree.usage,
        granularity=options.granularity,
        timeout=options.catalog_timeout,
    )
    try:
        calibrate(everything, options, qtree, spark_codec_rate(spark, options, qtree, disk.root))
    except BaseException:
        cache.close()
        raise
    return cache
