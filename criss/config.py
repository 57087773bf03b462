"""Options of a Criss session.

Keyword arguments win, then SparkConf ``spark.criss.*``, then the defaults here.
"""

from __future__ import annotations

import difflib
import errno
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from criss.errors import ConfigError
from criss.policies.joins import METHODS, RangeJoinModel
from criss.storage.hadoop import check_uri

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


_SECONDS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_seconds(value: Any, option: str = "duration") -> float:
    """``"30d"`` → 2592000.0, ``"12h"``, ``"90m"``, ``"45s"``; numbers are seconds."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        seconds = float(value)
    else:
        text = str(value).strip().lower()
        digits = text.rstrip("smhd")
        try:
            seconds = float(digits) * _SECONDS[text[len(digits) :]]
        except (ValueError, KeyError):
            raise ConfigError(
                f"{option}={value!r} is not a duration; write e.g. 2592000, '30d', '12h' or '0'"
            ) from None
    if seconds < 0:
        raise ConfigError(f"{option}={value!r} is negative; write a duration, or 0 for never")
    return seconds


MEDIA = ("hybrid", "memory", "disk")
GRANULARITIES = ("partition", "operator")
REUSE_SCOPES = ("operators", "results")
#: ``lift_aggregates``: ``benefit`` lifts an aggregate when the benefit model says its new
#: parameter values to come pay for it (criss.policies.lifting), ``eager`` at its second
#: parameter value whatever it costs, ``off`` never (true and false mean benefit and off).
LIFT_MODES = ("benefit", "eager", "off")
#: ``join_measurements``: when a join input's key counts are measured (a Spark job).
JOIN_MEASUREMENTS = ("after-action", "planning")
#: ``range_join_method``: ``auto`` lets the cost model choose; the others force a method
#: where it applies (criss.policies.joins.METHODS).
RANGE_JOIN_METHODS = ("auto", *METHODS)
#: Prefix of every SparkConf key Criss reads: ``spark.criss.<option with dots>``.
CONF_PREFIX = "spark.criss."


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
    #: An aggregate seen again under other filter parameters is computed once grouped by
    #: the filtered columns too, and each of its queries rolled up from that (planner.lift):
    #: one of LIFT_MODES.
    lift_aggregates: str = "benefit"
    #: Cache what is chosen as the user's own action runs (a write-through step in the plan
    #: handed out), instead of a materialization job inside ``cs.sql()``. Off by default:
    #: the step's trip through a Python worker measured 1.08-1.60x a first occurrence's time
    #: here, the job 1.005-1.34x (experiments/results/issue22).
    write_through: bool = False
    #: The user's own action computes a first-seen result into Spark's cache (persist) and
    #: Criss writes its partitions from there after the action, off the user's path; off:
    #: a materialization job inside ``cs.sql()`` writes it (1.03x against 1.12x plain
    #: Spark's time on first sight at SF 1, experiments/results/issue22).
    cache_in_action: bool = True
    #: Criss's plans run stages plain Spark compiled under other stage numbers (a subtree
    #: cached or read in the action, the query above it), and Spark names each compiled
    #: class after its stage number (``spark.sql.codegen.useIdInClassName``), so the same
    #: code compiles again. True: the session wrapped names them by their code alone
    #: (unless the application set that setting); ``close()`` puts it back.
    share_stage_code: bool = True
    #: Under each operator cached for the largest measured benefit on its branch, also cache
    #: its shared base: of the operators below one of its joins whose benefit is at least
    #: this share of that one's, and whose reads expected here pay for caching it (the
    #: bases' own measured reads), the one with the least (a query changed higher up, such
    #: as a variant filtering a joined table, still shares it). 0: one operator per branch,
    #: as the paper (§1.3).
    base_share: float = 0.0
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
    #: The disk tier at a Hadoop file system URI (``hdfs://namenode:8020/criss/cache``,
    #: ``s3a://bucket/criss``), reached through Spark's Hadoop FileSystem by the driver and
    #: the executors alike; default: the local directory ``<home>/disk``.
    disk_uri: str | None = None
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
    #: The tier directories are on a file system every executor host mounts at the same
    #: path, though Criss does not recognise its type (see criss.storage.reach).
    shared_tiers: bool = False
    #: Cached results up to this size (bytes of Parquet) are read on the driver with pyarrow
    #: and handed to Spark as a local relation, which spares a read job per query; 0: never.
    local_read_bytes: int = 2 << 20
    #: Python UDF names trusted to be deterministic.
    allowed_udfs: tuple[str, ...] = ()
    #: Seconds to wait for a catalog lock held by another application before running uncached.
    catalog_timeout: float = 10.0
    #: Operators neither referenced nor cached for this long (seconds; "30d", "12h") are
    #: forgotten with their statistics, so the QTree stays as big as the live workload;
    #: 0: never.
    forget_after: float = 30 * 86400.0
    #: False turns Criss into a pass-through (queries run as plain Spark).
    enabled: bool = True
    #: Join optimizations (criss.joins), each chosen per join from measured statistics;
    #: False switches one off.
    range_join: bool = True
    semi_prefilter: bool = True
    bloom_join: bool = True
    runtime_filters: bool = True
    #: When a recurring join input's rows and key counts are measured (one Spark job per
    #: input, once): ``after-action``, in the background after the query's action, used from
    #: the next query on (a first occurrence costs what plain Spark costs); ``planning``:
    #: inside ``cs.sql()``, so this very query may be rewritten.
    join_measurements: str = "after-action"
    #: Range joins: the rewrite must save this many seconds and be this many times cheaper
    #: than Spark's nested loop (tests set 0 and 1 to rewrite tiny joins).
    range_join_min_seconds: float = RangeJoinModel.min_seconds
    range_join_min_ratio: float = RangeJoinModel.min_ratio
    #: ``auto`` (cost model), or force ``nested``, ``bucket`` or ``index`` where possible.
    range_join_method: str = "auto"
    #: The range index collects the interval side to the driver only below these sizes.
    range_join_index_max_rows: int = 5_000_000
    range_join_index_max_bytes: int = 512 << 20
    #: Plan and explain only: nothing is cached, recomputed, promoted or recorded, and the
    #: returned DataFrame is the plain one (``criss explain`` uses this).
    dry_run: bool = False

    def __post_init__(self) -> None:
        if not 0.0 <= self.base_share <= 1.0:
            raise ConfigError(f"base_share must be between 0 and 1 (0: off), got {self.base_share}")

    @classmethod
    def resolve(cls, spark_conf: Mapping[str, str] | None = None, **overrides: Any) -> CrissOptions:
        """Options from keyword arguments, then SparkConf ``spark.criss.*``, then defaults.

        A misspelled option or ``spark.criss.*`` key is an error naming the closest one:

        >>> CrissOptions.resolve(None, polcy="lru")
        Traceback (most recent call last):
        ...
        criss.errors.ConfigError: unknown Criss option 'polcy': did you mean 'policy'? ...
        """
        names = option_names()
        for name in overrides:
            if name not in names:
                raise ConfigError(_unknown("option", name, names))
        keys = {conf_key(name): name for name in names}
        conf = {k: v for k, v in (spark_conf or {}).items() if k.startswith(CONF_PREFIX)}
        for key in conf:
            if key not in keys:
                raise ConfigError(_unknown("SparkConf key", key, keys))
        values = {keys[k]: v for k, v in conf.items()}
        values.update({k: v for k, v in overrides.items() if v is not None})
        return cls._coerce(values)

    @classmethod
    def _coerce(cls, values: dict[str, Any]) -> CrissOptions:
        out = dict(values)
        if "home" in out:
            out["home"] = Path(out["home"]).expanduser()
        for name in (
            "eager_results",
            "write_through",
            "cache_in_action",
            "share_stage_code",
            "enabled",
            "dry_run",
            "range_join",
            "semi_prefilter",
            "bloom_join",
            "runtime_filters",
            "shared_tiers",
        ):
            if name in out:
                out[name] = _as_bool(out[name], name)
        if "lift_aggregates" in out:
            out["lift_aggregates"] = _lift_mode(out["lift_aggregates"])
        if "min_ref" in out:
            out["min_ref"] = int(out["min_ref"])
            if out["min_ref"] < 1:
                raise ConfigError(f"min_ref must be >= 1, got {out['min_ref']}")
        if "min_texec" in out:
            out["min_texec"] = float(out["min_texec"])
        if "catalog_timeout" in out:
            out["catalog_timeout"] = float(out["catalog_timeout"])
        if "forget_after" in out:
            out["forget_after"] = parse_seconds(out["forget_after"], "forget_after")
        if out.get("disk_uri"):
            out["disk_uri"] = check_uri(str(out["disk_uri"]), "disk_uri")
        for name in ("range_join_min_seconds", "range_join_min_ratio", "base_share"):
            if name in out:
                out[name] = _as_float(out[name], name)
        for name in ("range_join_index_max_rows", "range_join_index_max_bytes"):
            if name in out:
                out[name] = parse_bytes(out[name], name)
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
            ("join_measurements", JOIN_MEASUREMENTS),
            ("range_join_method", RANGE_JOIN_METHODS),
        ):
            if name in out and out[name] not in allowed:
                raise ConfigError(f"{name}={out[name]!r} is not one of {', '.join(allowed)}")
        if "allowed_udfs" in out and isinstance(out["allowed_udfs"], str):
            out["allowed_udfs"] = tuple(
                x.strip() for x in out["allowed_udfs"].split(",") if x.strip()
            )
        return cls(**out)


def option_names() -> tuple[str, ...]:
    """Every option ``criss.session()`` accepts, in declaration order."""
    return tuple(f.name for f in fields(CrissOptions))


def conf_key(name: str) -> str:
    """The SparkConf key of option ``name``: ``eager_results`` → ``spark.criss.eager.results``."""
    return CONF_PREFIX + name.replace("_", ".")


def _unknown(kind: str, name: str, valid: Iterable[str]) -> str:
    """``unknown Criss option 'polcy': did you mean 'policy'?`` (difflib's closest match)."""
    close = difflib.get_close_matches(name, list(valid), n=1, cutoff=0.6)
    hint = f"did you mean {close[0]!r}?" if close else "no option is spelled like it."
    return f"unknown Criss {kind} {name!r}: {hint} (every option: README, section Options)"


def _lift_mode(value: Any) -> str:
    """One of LIFT_MODES; a boolean (or its words) means ``benefit`` or ``off``."""
    if str(value).strip().lower() in LIFT_MODES:
        return str(value).strip().lower()
    try:
        return "benefit" if _as_bool(value, "lift_aggregates") else "off"
    except ConfigError:
        raise ConfigError(
            f"lift_aggregates={value!r} is not one of {', '.join(LIFT_MODES)} (or true/false)"
        ) from None


def _as_float(value: Any, option: str) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        raise ConfigError(f"{option}={value!r} is not a number") from None


def check_home(home: Path) -> Path:
    """Create ``home`` (private, 0700) or raise ConfigError naming it and the problem.

    Runs before anything else is written, so an unusable home (``/proc/criss``, a path
    under a file, a read-only directory) fails with the fix instead of a bare OSError.
    """
    from criss.storage.tiers import make_private_dir

    home = Path(home).expanduser()
    existing = next((p for p in (home, *home.parents) if p.exists()), None)
    if existing is not None and not existing.is_dir():
        raise ConfigError(_bad_home(home, f"{existing} is a file, not a directory"))
    if existing is not None and not os.access(existing, os.W_OK | os.X_OK):
        raise ConfigError(_bad_home(home, f"{existing} is not writable by this user"))
    try:
        make_private_dir(home)
        probe = home / f".criss-probe.{os.getpid()}"
        probe.touch()
        probe.unlink()
    except OSError as exc:
        reason = os.strerror(exc.errno) if exc.errno else str(exc)
        if exc.errno == errno.ENOENT:
            reason += " (this file system does not allow new directories here)"
        raise ConfigError(_bad_home(home, f"cannot create or write it: {reason}")) from exc
    return home


def _bad_home(home: Path, problem: str) -> str:
    return (
        f"Criss home {str(home)!r} is not usable: {problem}. Pass a writable directory, "
        "e.g. criss.session(spark, home='~/.cache/criss'), or set spark.criss.home."
    )
