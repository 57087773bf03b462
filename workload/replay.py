"""Replay a seeded TPC-H or TPC-DS stream through plain Spark and/or Criss and record what it cost.

The results JSON has a stable shape read by other tools (the dashboard, the experiments)::

    {"stream", "seed", "sf", "queries": N, "modes": {
        "spark": {"total_seconds": float, "queries": [{"position", "query", "variant",
                                                        "seconds", "rows", "checksum",
                                                        "turn"}, ...]},
        "criss": {...}}, ...}

With ``modes=("spark", "criss")`` both run alternating query by query, each in a Spark
application of its own (``isolation="application"``, what the CLI does on a local master:
no mode finds compiled what another compiled, see ``criss.workload.applications``) or both
on the SparkSession handed in (``isolation="session"``). The order the modes run in goes
through every permutation, so none is flattered by what another warmed up; each record's
``turn`` says when it ran at its position, 0 first. Further
Criss configurations run side by side as modes named ``criss-<name>`` whose options come
from ``ReplayConfig.variants`` (e.g. ``{"criss-disk": {"media": "disk"}}``), each with a
home of its own; every Criss mode is compared with ``spark`` under ``comparisons``. With
``ReplayConfig.replicas`` N > 1 every mode plays in N applications, the further ones as
modes ``<mode>#2`` ... ``<mode>#N`` (a plain replica compared with ``spark`` too: the spread
between two applications of the same plans).
"""

from __future__ import annotations

import datetime as dt
import functools
import hashlib
import itertools
import json
import logging
import math
import os
import platform
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any

from criss.errors import ConfigError, WorkloadError
from criss.workload.applications import (
    ApplicationPlayer,
    SessionPlayer,
    memory_advice,
    resolve_isolation,
)
from criss.workload.benchmarks import parquet_data
from criss.workload.idle import wait_for_idle
from criss.workload.streams import StreamQuery, check_stream, make_stream
from criss.workload.warmup import distinct_statements, plain_runs, warm_up, warm_up_criss

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

MODES = ("spark", "criss")
VARIANT_PREFIX = "criss-"
#: How a further application of the same mode is named: ``criss#2`` plays ``criss`` again.
REPLICA_MARK = "#"


def base_mode(mode: str) -> str:
    """The mode an application plays (``criss`` for ``criss#2``)."""
    return mode.split(REPLICA_MARK, 1)[0]


def is_plain(mode: str) -> bool:
    """Whether ``mode`` (or a replica of it) is plain Spark."""
    return base_mode(mode) == "spark"


_MASK64 = (1 << 64) - 1


def _canonical_value(value: Any) -> str:
    if isinstance(value, float):
        # Sums of doubles differ in the last bits with the order of aggregation.
        return "nan" if math.isnan(value) else format(value, ".9g")
    if isinstance(value, Decimal):
        return format(value.normalize(), "f")
    return repr(value)


def result_checksum(rows: Iterable[Sequence[Any]]) -> tuple[int, str]:
    """(row count, order-insensitive checksum) of a query result, as a multiset of rows."""
    total, count = 0, 0
    for row in rows:
        text = "\x1f".join(_canonical_value(v) for v in row)
        total = (
            total + int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")
        ) & _MASK64
        count += 1
    return count, f"{count}:{total:016x}"


@dataclass
class ReplayConfig:
    stream: str = "zipf"
    queries: int = 100
    sf: float = 1.0
    seed: int = 42
    modes: tuple[str, ...] = ("spark",)
    home: Path | None = None
    warm: bool = False
    data_dir: Path | None = None
    zipf_skew: float = 1.0
    #: Run every distinct statement once through plain Spark, untimed, before the replay, so
    #: neither mode pays the JVM's and the page cache's cold start on its first occurrences.
    warmup: bool = False
    criss_options: dict[str, Any] = field(default_factory=dict)
    #: Options of each extra Criss mode ``criss-<name>`` (over ``criss_options``).
    variants: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: ``tpch`` or ``tpcds`` (derived from TPC-DS; not comparable to TPC-DS results)
    benchmark: str = "tpch"
    #: ``session``: every mode on the SparkSession handed to ``run_replay``; ``application``:
    #: each mode in a Spark application of its own (``master``, ``spark_conf``), so that none
    #: runs on code another compiled; ``auto``: ``application`` on a local master.
    isolation: str = "session"
    #: The master and settings of each mode's own application (``isolation="application"``).
    master: str = "local[2]"
    spark_conf: dict[str, str] = field(default_factory=dict)
    #: Before each timed statement, wait (untimed) at most this many seconds for the machine
    #: to be idle (``criss.workload.idle``); 0: do not wait.
    idle_wait: float = 0.0
    #: Applications per mode (``isolation="application"`` only): two Spark applications
    #: running the same plans differ by several percent (their JIT compiler decides
    #: differently), so a difference of that size between modes needs more than one
    #: application of each. The further ones are modes named ``<mode>#2``, ``<mode>#3``, ...
    replicas: int = 1

    def __post_init__(self) -> None:
        # the modes asked for, their replicas added once: a config built again from this
        # one's fields (replicas already in ``modes``) expands to the same modes
        played = tuple(m for m in self.modes if REPLICA_MARK not in m)
        self.modes = played + tuple(
            f"{m}{REPLICA_MARK}{k}" for k in range(2, self.replicas + 1) for m in played
        )
        unknown = [
            m for m in self.modes if base_mode(m) not in MODES and base_mode(m) not in self.variants
        ]
        if unknown or not self.modes:
            raise WorkloadError(
                f"unknown replay mode(s) {unknown}; choose from {MODES} or a variant "
                f"named {VARIANT_PREFIX}<name> with its options in ReplayConfig.variants"
            )
        bad = [name for name in self.variants if not name.startswith(VARIANT_PREFIX)]
        if bad:
            raise WorkloadError(f"variant names must start with {VARIANT_PREFIX!r}: {bad}")
        check_stream(self.stream, self.benchmark)
        if not self.idle_wait >= 0:
            raise WorkloadError(
                f"idle_wait={self.idle_wait!r}: the seconds to wait for an idle machine "
                "before each timed statement must be 0 (do not wait) or more"
            )
        self.isolation = resolve_isolation(self.isolation, self.master)
        if not 1 <= self.replicas <= 4 or (self.replicas > 1 and self.isolation != "application"):
            raise WorkloadError(
                f"replicas={self.replicas!r}: applications per mode must be 1 to 4, and more "
                "than 1 only with isolation='application' (in one application a replica "
                "would run on the code the other compiled)"
            )

    def stream_queries(self) -> list[StreamQuery]:
        return make_stream(
            self.stream,
            self.queries,
            self.seed,
            self.sf,
            zipf_skew=self.zipf_skew,
            benchmark=self.benchmark,
        )

    @property
    def criss_modes(self) -> list[str]:
        return [m for m in self.modes if not is_plain(m)]

    def options_of(self, mode: str) -> dict[str, Any]:
        """The Criss options of ``mode``: the replay's, with its variant's over them."""
        return {**self.criss_options, **self.variants.get(base_mode(mode), {})}


Runner = Callable[[str], "DataFrame"]


#: INFO lines naming each slow phase of a run (data generation, warm-up, the once-per-home
#: bandwidth measurement); ``criss replay`` shows them above its progress bar.
progress_log = logging.getLogger("criss.progress")


def replay_homes(config: ReplayConfig) -> dict[str, Path]:
    """The home of each Criss mode: ``config.home`` (variants in subfolders), else a new
    temporary directory."""
    base = Path(config.home) if config.home else Path(tempfile.mkdtemp(prefix="criss-replay-"))
    return {m: base if m == "criss" else base / m for m in config.criss_modes}


def open_criss(spark: SparkSession, config: ReplayConfig, mode: str, home: Path | None) -> Any:
    """The Criss session of ``mode`` (its options over the replay's), emptied unless warm."""
    import criss

    cs = criss.session(spark, home=str(home), **config.options_of(mode))
    if not config.warm:
        cs.clear()
    return cs


def run_statement(run: Runner, item: StreamQuery) -> dict[str, Any]:
    """One timed statement. A statement Spark rejects (TPC-DS's q90 divides by zero at
    small scales under ANSI mode) is recorded with its error condition as its checksum:
    every mode must fail the same way, as every mode must return the same rows."""
    from pyspark.errors import PySparkException

    started = time.perf_counter()
    error = None
    try:
        count, checksum = result_checksum(run(item.sql).collect())
    except PySparkException as exc:
        error = spark_error(exc)
        count, checksum = None, f"error:{error}"
    seconds = time.perf_counter() - started
    record = {
        "position": item.position,
        "query": item.query,
        "variant": item.variant,
        "statement": hashlib.sha256(item.sql.encode()).hexdigest()[:16],
        "seconds": round(seconds, 4),
        "rows": count,
        "checksum": checksum,
    }
    if error is not None:
        record["error"] = error
    return record


def spark_error(exc: Exception) -> str:
    """The error condition Spark names (``DIVIDE_BY_ZERO``), else the exception's class."""
    condition = getattr(exc, "getCondition", None) or getattr(exc, "getErrorClass", None)
    named = condition() if condition is not None else None
    return str(named) if named else type(exc).__name__


def run_replay(
    spark: SparkSession | None,
    config: ReplayConfig,
    *,
    on_query: Callable[[str, dict[str, Any]], None] | None = None,
    on_warmup: Callable[[int, int], None] | None = None,
) -> dict[str, Any]:
    """Run ``config``'s stream in every requested mode; return the results dict.

    With ``config.isolation == "session"`` every mode runs on ``spark``; with
    ``"application"`` each in a Spark application of its own (``spark`` is not used and may
    be None). ``on_query(mode, record)`` follows each timed query, ``on_warmup(done,
    total)`` each untimed warm-up statement; slow phases are named on the
    ``criss.progress`` logger.
    """
    if spark is None and config.isolation == "session":
        raise WorkloadError("a replay in one session needs the SparkSession to run on")
    if config.isolation == "application":
        _check_machine(config)  # before anything else: data may be generated next
    stream = config.stream_queries()
    data_dir = _data(config)
    homes = replay_homes(config)
    players, warmed = _players(spark, config, stream, data_dir, homes, on_warmup)
    try:
        records: dict[str, list[dict[str, Any]]] = {m: [] for m in players}
        for position, item in enumerate(stream):
            for turn, mode in enumerate(run_order(list(players), position)):
                waited = wait_for_idle(config.idle_wait)
                record = players[mode].run(item)
                record["turn"] = turn
                if config.idle_wait:
                    record["idle_wait"] = waited
                records[mode].append(record)
                if on_query:
                    on_query(mode, record)
        reports = {}
        for mode, player in players.items():
            report, summaries = player.finish()
            if report is None:
                continue
            reports[mode] = report
            # each Criss query's counters grow when its action's writes commit, which
            # happens in a later query's (timed) planning, so they are read at the end
            for record, summary in zip(records[mode], summaries, strict=True):
                record["criss"] = summary
        described = {m: player.describe() for m, player in players.items()}
    finally:
        for player in players.values():
            player.close()
    result = _results(config, stream, records, next(iter(described.values())))
    result["applications"] = {m: facts["application"] for m, facts in described.items()}
    result["warmup_seconds"] = warmed
    result["criss_reports"] = reports
    if "criss" in reports:
        result["criss_report"] = reports["criss"]
    result["variants"] = {m: config.variants.get(m, {}) for m in reports}
    result["homes"] = {m: str(home) for m, home in homes.items()}
    return result


def _players(
    spark: SparkSession | None,
    config: ReplayConfig,
    stream: list[StreamQuery],
    data_dir: Path,
    homes: dict[str, Path],
    on_warmup: Callable[[int, int], None] | None,
) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """Each mode's player, started and warmed up (each application its own JVM), and what
    each mode's warm-up took (``warm_up``'s seconds, ``warm_up_criss``'s facts)."""
    warmed: dict[str, dict[str, Any]] = {}
    if config.isolation == "session":
        parquet_data(config.benchmark).register_views(spark, data_dir)
        if config.warmup:
            statements = round(warm_up(spark, stream, on_statement=on_warmup), 4)
            # one JVM for every mode: Criss's machinery is warmed once, by the first mode's options
            machinery = (
                warm_up_criss(spark, config.options_of(config.criss_modes[0]), stream)
                if config.criss_modes
                else {}
            )
            warmed = {
                m: {"statements": statements} | ({} if is_plain(m) else {"criss": machinery})
                for m in config.modes
            }
        players: dict[str, Any] = {}
        for mode in config.modes:
            if not is_plain(mode):
                progress_log.info("%s: opening Criss home %s", mode, homes[mode])
            players[mode] = SessionPlayer(spark, config, mode, homes.get(mode))
        return players, warmed
    progress_log.info(
        "starting a Spark application (%s) for each of %s", config.master, ", ".join(config.modes)
    )
    players = {
        m: ApplicationPlayer(config, m, homes.get(m), data_dir, stream) for m in config.modes
    }
    try:
        for player in players.values():
            player.describe()  # every application up before any warms up
        if config.warmup:
            # one bar over every application's warm-up; each counts its own statements
            distinct = len(distinct_statements(stream))
            total = sum(plain_runs(is_plain(m)) * distinct for m in players)
            offset = 0
            for mode, player in players.items():
                warmed[mode] = player.warm_up(
                    None
                    if on_warmup is None
                    else lambda done, _, start=offset: on_warmup(start + done, total)
                )
                offset += plain_runs(is_plain(mode)) * distinct
    except BaseException:
        for player in players.values():
            player.close()
        raise
    return players, warmed


def _check_machine(config: ReplayConfig) -> None:
    """Before the applications start: Java (a clear error here rather than one per child),
    and their heaps together against the machine's memory. Each application's heap is
    fixed at its full size (``local_spark(fixed_heap=True)``), so heaps that do not fit
    together fill the machine, and the kernel kills one mid-replay (4 applications at 6 GB
    on 23 GB did, after ten minutes): refused here, with what to lower."""
    from criss.sparksession import require_java

    require_java()
    advice = memory_advice(config)
    if advice is not None:
        raise ConfigError(f"not started: {advice}")


def run_order(modes: Sequence[str], position: int) -> tuple[str, ...]:
    """The order the modes run in at ``position``: every permutation in turn, so each mode
    runs first, and before each other mode, equally often. The first run of a statement
    at a position compiles the classes the others may find compiled (Spark's code cache is
    the JVM's); rotating only who goes first would put one mode right before another at
    two positions of three with three modes, and hand the second the first one's work."""
    orders = _orders(tuple(modes))
    return orders[position % len(orders)]


@functools.cache
def _orders(modes: tuple[str, ...]) -> tuple[tuple[str, ...], ...]:
    """Every permutation of ``modes``, listed once per set of modes, not per position."""
    return tuple(itertools.permutations(modes))


def settle(cs: Any) -> float:
    """Let Criss finish what it does after an action (writing what the action computed
    into Spark's cache, reading statistics), untimed, as an analyst's think time would;
    the seconds it took. Without this, that work would slow whichever query runs next,
    plain Spark's half of the time."""
    started = time.perf_counter()
    cs.settle_harvests()
    return round(time.perf_counter() - started, 4)


#: The numbers of a lift decision a replay keeps (criss.policies.lifting).
LIFT_NUMBERS = ("texec", "expected_values", "cost_ratio", "rows_ratio", "gain")


def criss_summary(query: Any) -> dict[str, Any]:
    """A Criss query's counters and times, and its lift decisions with the numbers they
    used ({} if Criss did not plan it)."""
    if query is None:
        return {}
    summary = query.summary()
    if query.lifts:
        summary["lift_decisions"] = [_lift_decision(lift) for lift in query.lifts]
    return summary


def _lift_decision(lift: dict[str, Any]) -> dict[str, Any]:
    """A lift or widening decision as a replay keeps it: its reason, its numbers rounded,
    and where its cost ratio came from."""
    numbers = lift["numbers"]
    kept = {"reason": lift["reason"], "kind": lift.get("kind", "aggregate")}
    kept |= {
        k: round(numbers[k], 4) for k in LIFT_NUMBERS if isinstance(numbers.get(k), float | int)
    }
    if "cost_basis" in numbers:
        kept["cost_basis"] = numbers["cost_basis"]
    return kept


#: Driver settings a replay's results record besides the SQL ones: the heap and the JVM's
#: options (its collector alone moved plain Spark's time by 11 % at SF 1).
_DRIVER_FACTS = ("spark.driver.memory", "spark.driver.extraJavaOptions")


def spark_facts(spark: SparkSession) -> dict[str, Any]:
    """The Spark application, version, master, and the SQL and driver settings a replay
    ran with."""
    return {
        "application": spark.sparkContext.applicationId,
        "spark": spark.version,
        "master": spark.sparkContext.master,
        "spark_conf": {
            k: v
            for k, v in spark.sparkContext.getConf().getAll()
            if k.startswith(("spark.sql.", "spark.criss.")) or k in _DRIVER_FACTS
        },
    }


def _data(config: ReplayConfig) -> Path:
    """The stream's data, generated first if missing (a phase worth naming)."""
    data = parquet_data(config.benchmark)
    where = Path(config.data_dir) if config.data_dir else data.dir_for(config.sf)
    if not data.is_complete(where, config.sf):
        progress_log.info(
            "generating %s SF%g data into %s (once; reused by later runs)",
            data.title,
            config.sf,
            where,
        )
    return data.ensure(config.sf, where, quiet=True)


def _results(
    config: ReplayConfig,
    stream: list[StreamQuery],
    records: dict[str, list[dict[str, Any]]],
    facts: dict[str, Any],
) -> dict[str, Any]:
    modes = {
        m: {
            "total_seconds": round(sum(r["seconds"] for r in recs), 4),
            "background_seconds": round(sum(r.get("background_seconds", 0.0) for r in recs), 4),
            "queries": recs,
        }
        for m, recs in records.items()
    }
    result: dict[str, Any] = {
        "benchmark": config.benchmark,
        "stream": config.stream,
        "seed": config.seed,
        "sf": config.sf,
        "queries": len(stream),
        "modes": modes,
        "zipf_skew": config.zipf_skew if config.stream == "zipf" else None,
        "warmup": config.warmup,
        "isolation": config.isolation,
        "created": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "machine": {
            "host": platform.node(),
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "spark": facts.get("spark"),
            "master": facts.get("master"),
        },
        "spark_conf": facts.get("spark_conf", {}),
    }
    if "spark" in modes:
        # every other application against the first plain one (a plain replica: how far
        # two applications of the same plans differ)
        result["comparisons"] = {
            m: compare_modes(modes["spark"], modes[m]) for m in config.modes if m != "spark"
        }
        if "criss" in modes:
            result["comparison"] = result["comparisons"]["criss"]
    if config.replicas > 1:
        result["replicas"] = config.replicas
    return result


def compare_modes(baseline: dict[str, Any], other: dict[str, Any]) -> dict[str, Any]:
    """Ratio, time saved and whether every query returned the same checksum in both modes."""
    mismatches = [
        b["position"]
        for b, o in zip(baseline["queries"], other["queries"], strict=True)
        if b["checksum"] != o["checksum"]
    ]
    base, mine = baseline["total_seconds"], other["total_seconds"]
    background = other.get("background_seconds", 0.0)
    return {
        "speedup": round(base / mine, 3) if mine else None,
        # as if what Criss does after each action had kept the user waiting
        "speedup_counting_background": (
            round(base / (mine + background), 3) if mine + background else None
        ),
        "time_saved_fraction": round(1 - mine / base, 4) if base else None,
        "checksums_match": not mismatches,
        "mismatched_positions": mismatches,
    }


def write_results(result: dict[str, Any], out: Path) -> Path:
    """Write the results JSON atomically (temp file, then rename)."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(out.suffix + ".tmp")
    tmp.write_text(json.dumps(result, indent=1, default=str))
    tmp.replace(out)
    return out
