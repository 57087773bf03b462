"""The modes of a replay, each played in a Spark application of its own or all in one.

Spark compiles each stage's code once per JVM and keeps the last hundred classes
(``spark.sql.codegen.cache.maxEntries``, a static setting), so in one JVM whichever mode
runs a statement first compiles what the next mode then finds compiled. Measured at SF 1
(2026-11-26): the first run of a TPC-H template with fresh literals takes 1.14x the next
(47.3 s against 41.5 s for the 22 queries) and compiles two to three times as many classes;
on the committed one-JVM replays a mode's first occurrences took 0.85-0.90x the other's when
it ran second and 1.16-1.31x when it ran first. ``isolation="application"`` removes that:
each mode runs in a child process with a Spark application of its own, as two deployments
would, and the parent alternates them statement by statement as before (the machine is
shared, never two statements at once). ``isolation="session"`` keeps every mode on the
SparkSession handed in.

A player answers ``run`` (one timed statement, its record), ``finish`` (the Criss session's
report and each query's final counters) and ``describe`` (the application's Spark version,
master and settings, for the results file); an application also warms itself up.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from criss.errors import WorkloadError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from criss.workload.replay import ReplayConfig
    from criss.workload.streams import StreamQuery

#: What isolation ``auto`` means: an application per mode where the master runs in this
#: machine's JVM (``local``), the modes in one session elsewhere: a cluster gives its cores
#: to the application that asks first, and the others would wait for them.
ISOLATIONS = ("auto", "application", "session")

log = logging.getLogger("criss.progress")

Progress = Callable[[int, int], None]


#: What a replay application takes beside its driver heap: the JVM's own memory (classes,
#: compiled code, threads' stacks, Spark's off-heap buffers) and its Python process.
BEYOND_HEAP_BYTES = 2**30


def side_by_side_memory(config: ReplayConfig) -> tuple[str, int | None, int]:
    """Each application's driver heap setting, the bytes of heap the replay's applications
    may take together (each mode's runs for the whole replay; None for a setting this does
    not read, which Spark then judges), and this machine's memory."""
    from criss.sparksession import LOCAL_DEFAULTS, driver_memory_bytes

    heap = config.spark_conf.get("spark.driver.memory", LOCAL_DEFAULTS["spark.driver.memory"])
    physical = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    each = driver_memory_bytes(heap)
    return heap, None if each is None else len(config.modes) * each, physical


def memory_advice(config: ReplayConfig) -> str | None:
    """What to change when the applications' heaps, with what each takes beyond its heap,
    together exceed the machine's memory (the kernel then kills one when the heaps fill
    up, mid-replay); None when they fit."""
    heap, heaps, physical = side_by_side_memory(config)
    if heaps is None:
        return None
    needed = heaps + len(config.modes) * BEYOND_HEAP_BYTES
    if needed <= physical:
        return None
    return (
        f"{len(config.modes)} Spark applications run side by side with "
        f"spark.driver.memory={heap} each: {heaps / 2**30:.1f} GB of heap and about "
        f"{BEYOND_HEAP_BYTES / 2**30:.0f} GB beside each, {needed / 2**30:.1f} GB on a "
        f"machine of {physical / 2**30:.1f} GB; the kernel kills one when their heaps fill "
        "up: lower --replicas or pass --conf spark.driver.memory=<smaller>"
    )


def resolve_isolation(isolation: str, master: str) -> str:
    """``application`` or ``session`` for ``isolation`` on ``master``."""
    if isolation not in ISOLATIONS:
        raise WorkloadError(
            f"unknown replay isolation {isolation!r}; choose one of {', '.join(ISOLATIONS)}"
        )
    if isolation == "auto":
        return "application" if master.startswith("local") else "session"
    return isolation


class SessionPlayer:
    """A mode played on a SparkSession shared with the other modes."""

    def __init__(self, spark: SparkSession, config: ReplayConfig, mode: str, home: Path | None):
        from criss.workload.replay import is_plain, open_criss

        self.spark = spark
        self.criss = None if is_plain(mode) else open_criss(spark, config, mode, home)
        self.planned: list[Any] = []

    def describe(self) -> dict[str, Any]:
        from criss.workload.replay import spark_facts

        return spark_facts(self.spark)

    def run(self, item: StreamQuery) -> dict[str, Any]:
        from criss.bridge import compiled_classes, jvm_gc_seconds
        from criss.workload.replay import criss_summary, run_statement, settle

        gc_before = jvm_gc_seconds(self.spark)
        classes_before = compiled_classes(self.spark)
        record = run_statement(self.spark.sql if self.criss is None else self.criss.sql, item)
        # a mode slower on the same plan: its JVM collecting garbage, or compiling stage
        # code the other found compiled
        record["jvm_gc_seconds"] = round(jvm_gc_seconds(self.spark) - gc_before, 4)
        record["classes_compiled"] = compiled_classes(self.spark) - classes_before
        if self.criss is None:
            return record
        self.planned.append(self.criss.last_record)
        record["criss"] = criss_summary(self.planned[-1])
        record["background_seconds"] = settle(self.criss)
        return record

    def finish(self) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
        """The Criss session's report and each query's final counters (the writes of an
        action commit in a later query's planning); ``(None, [])`` for plain Spark."""
        from criss.workload.replay import criss_summary

        if self.criss is None:
            return None, []
        report = self.criss.report()
        return report, [criss_summary(q) for q in self.planned]

    def close(self) -> None:
        if self.criss is not None:
            self.criss.close()
            self.criss = None


class ApplicationPlayer:
    """A mode played in a child process with a Spark application of its own."""

    def __init__(
        self,
        config: ReplayConfig,
        mode: str,
        home: Path | None,
        data_dir: Path,
        stream: list[StreamQuery],
    ) -> None:
        self.mode = mode
        context = multiprocessing.get_context("spawn")  # never fork a process with a JVM
        self._conn, child = context.Pipe()
        self._process = context.Process(
            target=_serve,
            args=(child, config, mode, home, data_dir, stream),
            name=f"criss-replay-{mode}",
            daemon=True,
        )
        self._process.start()
        child.close()
        self._description: dict[str, Any] | None = None

    def describe(self) -> dict[str, Any]:
        """The application's facts; the first call waits for it to be up (a JVM of its own
        takes seconds to start)."""
        if self._description is None:
            self._description = self._call("describe")
        return self._description

    def warm_up(self, on_statement: Progress | None = None) -> dict[str, Any]:
        """Warm the application up (``criss.workload.warmup.warm_up``, and
        ``warm_up_criss`` for a Criss mode); what each took."""
        return self._call("warm_up", on_progress=on_statement)

    def run(self, item: StreamQuery) -> dict[str, Any]:
        return self._call("run", item.position)

    def finish(self) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
        return self._call("finish")

    def close(self) -> None:
        if self._process.is_alive():
            try:
                self._conn.send(("stop",))
            except (BrokenPipeError, OSError):
                pass
            self._process.join(timeout=60)
        if self._process.is_alive():
            self._process.terminate()
            self._process.join(timeout=10)
        self._conn.close()

    def _call(self, *message: Any, on_progress: Progress | None = None) -> Any:
        try:
            self._conn.send(message)
            while True:
                kind, *payload = self._conn.recv()
                if kind == "progress" and on_progress is not None:
                    on_progress(*payload)
                elif kind == "ok":
                    return payload[0]
                elif kind == "error":
                    raise WorkloadError(
                        f"replay mode {self.mode!r} failed in its Spark application: {payload[0]}"
                    )
        except (EOFError, BrokenPipeError, ConnectionResetError) as exc:
            raise WorkloadError(
                f"the Spark application of replay mode {self.mode!r} stopped "
                f"(exit code {self._process.exitcode}); its output above says why"
            ) from exc


def _serve(
    conn: Any,
    config: ReplayConfig,
    mode: str,
    home: Path | None,
    data_dir: Path,
    stream: list[StreamQuery],
) -> None:
    """The child process: one Spark application playing ``mode``, one request at a time."""
    from criss.sparksession import local_spark
    from criss.workload.benchmarks import parquet_data
    from criss.workload.replay import is_plain, spark_facts
    from criss.workload.warmup import plain_runs, warm_up, warm_up_criss

    player: SessionPlayer | None = None
    try:
        spark = local_spark(
            f"criss-replay-{mode}", master=config.master, conf=config.spark_conf, fixed_heap=True
        )
        parquet_data(config.benchmark).register_views(spark, data_dir)
    except BaseException as exc:  # reported to the parent, which names the mode
        _reply_error(conn, exc)
        return
    try:
        while True:
            request, *args = conn.recv()
            if request == "stop":
                break
            try:
                answer: Any = None
                if request == "describe":
                    answer = spark_facts(spark)
                elif request == "warm_up":
                    # as many full runs of each statement in every application
                    seconds = warm_up(
                        spark,
                        stream,
                        runs=plain_runs(is_plain(mode)),
                        on_statement=lambda *p: conn.send(("progress", *p)),
                    )
                    answer = {"statements": round(seconds, 4)}
                    if not is_plain(mode):
                        answer["criss"] = warm_up_criss(spark, config.options_of(mode), stream)
                elif request in ("run", "finish"):
                    # the replay's Criss session opens after the warm-up, whose Criss
                    # part ran in a throwaway home of its own
                    player = player or SessionPlayer(spark, config, mode, home)
                    answer = player.run(stream[args[0]]) if request == "run" else player.finish()
                else:
                    raise WorkloadError(f"unknown request {request!r}")
            except Exception as exc:
                _reply_error(conn, exc, config)
                continue
            conn.send(("ok", answer))
    except EOFError:  # the parent is gone
        pass
    finally:
        if player is not None:
            player.close()
        spark.stop()


def _reply_error(conn: Any, exc: BaseException, config: ReplayConfig | None = None) -> None:
    text = f"{type(exc).__name__}: {exc}"
    from criss.bridge import jvm_unreachable

    if config is not None and jvm_unreachable(exc):
        advice = memory_advice(config)
        text = f"its JVM has exited ({text})" + (
            f"; most likely killed for memory: {advice}" if advice else ""
        )
    log.debug("replay application error: %s", "".join(traceback.format_exception(exc)))
    try:
        conn.send(("error", text))
    except (BrokenPipeError, OSError):
        pass
