"""How a session's options become its cache space: tiers, quotas and bandwidths.

One ``home`` is one cache space. The memory tier lives on tmpfs in a directory derived
from ``home``, so two homes never share or evict each other's data.
"""

from __future__ import annotations

import functools
import getpass
import hashlib
import logging
import os
import shutil
import socket
import time
from collections.abc import Callable
from pathlib import Path

from criss.bandwidth import (
    CALIBRATION_BYTES,
    CODEC_SCRATCH,
    measure_bandwidth,
    measure_codec_rate,
    measure_codec_rate_at,
    measure_tier_bandwidth,
)
from criss.config import MEDIA, CrissOptions
from criss.errors import ConfigError
from criss.policies.benefit import BenefitModel
from criss.qtree import QTree
from criss.storage.cache import PartitionCache
from criss.storage.hadoop import HadoopTier, RemoteFiles
from criss.storage.reach import parse_mounts, reach_problems
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


def build_tiers(
    options: CrissOptions, home: Path, remote: Callable[[str], RemoteFiles] | None = None
) -> tuple[list[Tier], list[Tier]]:
    """(tiers taking writes fastest first, every tier that may hold data); ``remote``
    opens a Hadoop file system URI (a tier there needs it: Spark's JVM reaches it)."""
    if options.media not in MEDIA:
        raise ConfigError(f"media must be one of {MEDIA}, not {options.media!r}")
    disk = _disk_tier(options, home, remote)
    fast = _fast_tier(options, home)
    everything = [fast, disk]
    if options.media == "memory":
        return [fast], everything
    if options.media == "disk":
        return [disk], everything
    return [fast, disk], everything


def _disk_tier(
    options: CrissOptions, home: Path, remote: Callable[[str], RemoteFiles] | None
) -> Tier:
    if options.disk_uri is None:
        capacity = options.disk_capacity
        if capacity is None:
            capacity = _default_quota(home, DEFAULT_DISK_SHARE, DEFAULT_DISK_CAP)
        return LocalTier("disk", home / "disk", capacity)
    if remote is None:
        raise ConfigError(
            f"the disk tier at {options.disk_uri} is reached through Spark's Hadoop "
            "FileSystem: manage it from an application (cs.clear(), cs.report())"
        )
    capacity = options.disk_capacity if options.disk_capacity is not None else DEFAULT_DISK_CAP
    return HadoopTier("disk", remote(options.disk_uri), capacity)


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
                else measure_tier_bandwidth(tier, _calibration_bytes(tier))
            )
            qtree.set_meta(key, medium)
        tier.medium_bandwidth = float(medium)
        tier.bandwidth = 1 / (1 / float(medium) + 1 / codec_rate)


def _calibration_bytes(tier: Tier) -> int:
    """A tier at a URI is calibrated with less: its bytes cross to Python through the JVM,
    slower than Spark's tasks move them (the measure is a floor)."""
    return CALIBRATION_BYTES // 4 if isinstance(tier, HadoopTier) else CALIBRATION_BYTES


def spark_codec_rate(spark, options: CrissOptions, qtree: QTree, disk: Tier) -> float:
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
    rate = (
        measure_codec_rate(spark, disk.root)
        if isinstance(disk, LocalTier)
        else _codec_rate_at_uri(spark, disk)
    )
    qtree.set_meta("codec_rate", rate)
    progress_log.info(
        "Parquet rate %.0f MB/s, measured in %.1f s", rate / 1e6, time.perf_counter() - started
    )
    return rate


def _codec_rate_at_uri(spark, disk: HadoopTier) -> float:
    target = f"{disk.root}/{CODEC_SCRATCH}/codec-{os.getpid()}"

    def size() -> int:
        return sum(n for name, n in disk.files.list(target).items() if name.endswith(".parquet"))

    return measure_codec_rate_at(
        spark, target, size, lambda: disk.files.delete(target, recursive=True)
    )


def open_cache(
    spark,
    options: CrissOptions,
    home: Path,
    qtree: QTree,
    policy: BenefitModel,
    reach: TierReach | None = None,
) -> PartitionCache:
    from criss.bridge.hadoopfs import HadoopFiles

    writable, everything = build_tiers(options, home, lambda uri: HadoopFiles(spark, uri))
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
        if reach is not None:  # before any Spark job writes into a tier (the calibration)
            reach.check(cache.tiers_in_use, force=True)
        calibrate(everything, options, qtree, spark_codec_rate(spark, options, qtree, disk))
    except BaseException:
        cache.close()
        raise
    return cache


class TierReach:
    """Checks that every executor Spark has can use every tier (see criss.storage.reach).

    ``hosts`` returns the driver's host, the executors' hosts and how many executors there
    are. A master starting with ``local`` runs everything in the driver's JVM: nothing to
    check. Otherwise the check runs when the session opens, then when a query is planned:
    every time until an executor has registered, and after that at most every ``interval``
    seconds (executors may join later). A query planned while a tier is out of an
    executor's reach runs as plain Spark.
    """

    def __init__(
        self,
        master: str,
        hosts: Callable[[], tuple[str, tuple[str, ...], int]],
        vouched_shared: bool,
        interval: float = 30.0,
    ) -> None:
        self.needed = not master.startswith("local")
        self.hosts = hosts
        self.vouched_shared = vouched_shared
        self.interval = interval
        self._checked_at = float("-inf")

    def check(self, tiers: Callable[[], list[Tier]], force: bool = False) -> None:
        """Raise ConfigError naming each tier (of those ``tiers()`` returns) that an
        executor on another host cannot use."""
        now = time.monotonic()
        if not self.needed or (not force and now - self._checked_at < self.interval):
            return
        driver, executors, registered = self.hosts()
        problems = reach_problems(
            {tier.name: _location(tier) for tier in tiers()},
            driver_addresses(driver),
            executors,
            parse_mounts(_mount_table()),
            vouched_shared=self.vouched_shared,
        )
        if problems:
            raise ConfigError("; ".join(map(str, problems)))
        if registered:  # with none yet, the next query asks again
            self._checked_at = now


def _location(tier: Tier) -> str | None:
    root = tier.local_root()
    return None if root is None else str(root.resolve())


def _mount_table() -> str:
    try:
        return Path("/proc/mounts").read_text()
    except OSError:
        return ""  # no mount table: every tier counts as local to the driver's host


@functools.lru_cache(maxsize=4)
def driver_addresses(driver_host: str) -> frozenset[str]:
    """Names and addresses of the driver's machine: the configured driver host, this
    machine's name, and the addresses both resolve to. Other loopback addresses such as
    127.0.0.2 are not included: Spark reports a worker bound there as another host."""
    names = {driver_host, socket.gethostname(), socket.getfqdn(), "localhost", "127.0.0.1"}
    addresses = set(names)
    for name in names - {""}:
        try:
            addresses.update(socket.gethostbyname_ex(name)[2])
        except OSError:
            continue
    return frozenset(addresses - {""})
