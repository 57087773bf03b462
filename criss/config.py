"""Options of a Criss session.

Keyword arguments win, then SparkConf ``spark.criss.*``, then the defaults here.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from criss.errors import ConfigError

_UNITS = {
    "": 1,
    "b": 1,
    "k": 1 << 10,
    "kb": 1 << 10,
    "m": 1 << 20,
    "mb": 1 << 20,
    "g": 1 << 30,
    "gb": 1 << 30,
    "t": 1 << 40,
    "tb": 1 << 40,
}


def parse_bytes(value: Any, option: str = "size") -> int | None:
    """``"512m"`` → 536870912; ints pass through; None stays None."""
    if value is None or isinstance(value, int):
        return value
    text = str(value).strip().lower()
    digits = text.rstrip("bkmgt")
    unit = text[len(digits) :]
    try:
        return int(float(digits) * _UNITS[unit])
    except (ValueError, KeyError):
        raise ConfigError(
            f"{option}={value!r} is not a size; write e.g. 536870912, '512m' or '4g'"
        ) from None


MEDIA = ("hybrid", "memory", "disk")
GRANULARITIES = ("partition", "operator")
REUSE_SCOPES = ("operators", "results")


def default_home() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "criss"


def _as_bool(value: Any, option: str) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("0", "false", "no", "off"):
        return False
    raise ConfigError(f"{option}={value!r} is not a boolean; use true or false")


@dataclass(frozen=True)
class CrissOptions:
    """Everything a session can be told. See README "Options" for each one."""

    home: Path = field(default_factory=default_home)
    #: Benefit model by name (``criss`` or ``recycler``).
    policy: str = "criss"
    #: Cache a query's final result the first time it is seen (before any statistics).
    eager_results: bool = True
    #: References an operator needs before it is cached to collect its statistics.
    min_ref: int = 2
    #: Operators estimated to take less (from their input bytes) are not worth a separate
    #: materialization job until measured otherwise.
    min_texec: float = 0.2
    #: Tiers taking new data: ``hybrid`` (memory, then disk), ``memory`` or ``disk`` only.
    media: str = "hybrid"
    #: Unit of placement and replacement: ``partition`` or ``operator`` (whole results).
    granularity: str = "partition"
    #: ``operators`` (Criss) or ``results``: cache and reuse only whole query results,
    #: keyed on the canonical plan, as an exact-result cache does (a baseline to compare).
    reuse_scope: str = "operators"
    #: Quotas in bytes ("512m", "4g"); default: a share of tmpfs / free disk space, capped.
    memory_capacity: int | None = None
    disk_capacity: int | None = None
    #: Memory tier directory on tmpfs; default derived from ``home`` under /dev/shm.
    memory_dir: str | None = None
    #: Tier bandwidths in bytes/s; measured once per home when not given.
    memory_bandwidth: float | None = None
    disk_bandwidth: float | None = None
    #: Spark's Parquet write+read throughput through a tier, in bytes/s (it bounds every
    #: tier's effective bandwidth); measured once per home with a small Spark job if not given.
    codec_rate: float | None = None
    #: Alluxio proxy REST address (e.g. http://host:39999); when set, Alluxio is the fast tier.
    alluxio_url: str | None = None
    #: Alluxio directory for this home's data (default /criss/<hash of home>).
    alluxio_root: str | None = None
    #: Local path where Alluxio is mounted (FUSE) so Spark reads files as local paths.
    alluxio_mount: str | None = None
    alluxio_capacity: int | None = None
    alluxio_bandwidth: float | None = None
    #: Cached results up to this size (bytes of Parquet) are read on the driver with pyarrow
    #: and handed to Spark as a local relation, which spares a read job per query; 0: never.
    local_read_bytes: int = 2 << 20
    #: Python UDF names trusted to be deterministic.
    allowed_udfs: tuple[str, ...] = ()
    #: Seconds to wait for a catalog lock held by another application before running uncached.
    catalog_timeout: float = 10.0
    #: False turns Criss into a pass-through (queries run as plain Spark).
    enabled: bool = True
    #: Join optimizations (criss.joins), each chosen per join from measured statistics;
    #: False switches one off.
    range_join: bool = True
    semi_prefilter: bool = True
    bloom_join: bool = True
    runtime_filters: bool = True
    #: Plan and explain only: nothing is cached, recomputed, promoted or recorded, and the
    #: returned DataFrame is the plain one (``criss explain`` uses this).
    dry_run: bool = False

    @classmethod
    def resolve(cls, spark_conf: dict[str, str] | None = None, **overrides: Any) -> CrissOptions:
        known = {f.name for f in fields(cls)}
        unknown = set(overrides) - known
        if unknown:
            raise ConfigError(f"unknown Criss option(s) {sorted(unknown)}; known: {sorted(known)}")
        values: dict[str, Any] = {}
        for name in known:
            conf_key = "spark.criss." + name.replace("_", ".")
            if overrides.get(name) is not None:
                values[name] = overrides[name]
            elif spark_conf and conf_key in spark_conf:
                values[name] = spark_conf[conf_key]
        return cls._coerce(values)

    @classmethod
    def _coerce(cls, values: dict[str, Any]) -> CrissOptions:
        out = dict(values)
        if "home" in out:
            out["home"] = Path(out["home"]).expanduser()
        for name in (
            "eager_results",
            "enabled",
            "dry_run",
            "range_join",
            "semi_prefilter",
            "bloom_join",
            "runtime_filters",
        ):
            if name in out:
                out[name] = _as_bool(out[name], name)
        if "min_ref" in out:
            out["min_ref"] = int(out["min_ref"])
            if out["min_ref"] < 1:
                raise ConfigError(f"min_ref must be >= 1, got {out['min_ref']}")
        if "min_texec" in out:
            out["min_texec"] = float(out["min_texec"])
        if "catalog_timeout" in out:
            out["catalog_timeout"] = float(out["catalog_timeout"])
        for name in ("memory_bandwidth", "disk_bandwidth", "alluxio_bandwidth", "codec_rate"):
            if name in out:
                out[name] = float(parse_bytes(out[name], name))
        for name in ("memory_capacity", "disk_capacity", "alluxio_capacity", "local_read_bytes"):
            if name in out:
                out[name] = parse_bytes(out[name], name)
        for name, allowed in (
            ("media", MEDIA),
            ("granularity", GRANULARITIES),
            ("reuse_scope", REUSE_SCOPES),
        ):
            if name in out and out[name] not in allowed:
                raise ConfigError(f"{name}={out[name]!r} is not one of {', '.join(allowed)}")
        if "allowed_udfs" in out and isinstance(out["allowed_udfs"], str):
            out["allowed_udfs"] = tuple(
                x.strip() for x in out["allowed_udfs"].split(",") if x.strip()
            )
        return cls(**out)
