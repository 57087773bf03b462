"""How a replay warms an application up before its timed queries: each distinct statement
of the stream run untimed, through plain Spark and, for a Criss mode, through Criss in a
throwaway home, so that no timed query pays what an application pays once (the JVM's
compilation of the statements' code, Python imports, Criss's own machinery) and every
application, plain or Criss, has executed each statement's plan as often as the others.
"""

from __future__ import annotations

import logging
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from criss.workload.streams import StreamQuery

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

progress_log = logging.getLogger("criss.progress")
#: Times a Criss application's warm-up executes each statement's whole plan: ``warm_up``'s
#: run through plain Spark, then ``warm_up_criss``'s first sight (its second run reads the
#: cache). A plain application in a JVM of its own runs ``warm_up`` this many times, so
#: neither starts its timed queries with more of the statements' code compiled: with one
#: plain run, a result-cache application ran 0.88x plain Spark on a drift stream's
#: positions where it reused nothing (experiments/results/issue20/session25/).
FULL_RUNS_IN_CRISS_WARMUP = 2


def plain_runs(plain: bool) -> int:
    """How many times an application's ``warm_up`` runs each statement through plain Spark
    (in a JVM of its own): a plain one as often as a Criss one executes them in full."""
    return FULL_RUNS_IN_CRISS_WARMUP if plain else 1


def warm_up(
    spark: SparkSession,
    stream: list[StreamQuery],
    *,
    runs: int = 1,
    on_statement: Callable[[int, int], None] | None = None,
) -> float:
    """Run each distinct statement of ``stream`` ``runs`` times, untimed; return the
    seconds it took."""
    from criss.workload.replay import spark_error

    statements = distinct_statements(stream) * runs
    progress_log.info(
        "warm-up: running the %d distinct statements %s through plain Spark, untimed "
        "(JVM and page cache; --no-warmup skips it)",
        len(statements) // runs,
        "once" if runs == 1 else f"{runs} times",
    )
    from pyspark.errors import PySparkException

    started = time.perf_counter()
    for done, sql in enumerate(statements, 1):
        try:
            spark.sql(sql).collect()
        except PySparkException as exc:  # the timed runs record it in every mode
            progress_log.info("warm-up: Spark rejects a statement (%s)", spark_error(exc))
        if on_statement:
            on_statement(done, len(statements))
    return time.perf_counter() - started


def distinct_statements(stream: list[StreamQuery]) -> list[str]:
    """The stream's statements, each once, in the order they first occur."""
    return list(dict.fromkeys(item.sql for item in stream))


def warm_up_criss(
    spark: SparkSession, options: dict[str, Any], stream: list[StreamQuery]
) -> dict[str, float]:
    """Run the distinct statements of ``stream`` through Criss, untimed, in a throwaway
    home, after ``warm_up`` ran them through plain Spark: each once as a first
    sight (cached by its action, written), then once more as a repeat (served), so an
    application warms up on the paths its mode will run, as plain Spark's does on its own.

    What an application pays once (Python imports, the JVM code of Spark's columnar cache
    and of Criss's bridge) then falls on no timed query, and neither does what a warm-up of
    another kind would leave: a small table of its own (longs to booleans, cached and
    served) run after the statements slowed plain Spark's next statements in the same
    application by 9-12 % (22.97 and 22.80 s against 21.00 and 20.39 s for eight TPC-H
    statements, SF 1, session 23; most likely the JIT compiler's code for the statements'
    columns compiled again for the table's, which the probe did not look into). Nothing of
    it reaches the replay's home, and Spark's cache is emptied when its session closes.
    Returns the seconds it took (recorded apart) and what it cached and reused. A failure
    only costs the warming: it is logged and the replay goes on."""
    from pyspark.errors import PySparkException

    import criss

    statements = distinct_statements(stream)
    progress_log.info(
        "warm-up: running the %d distinct statements through Criss twice, untimed, in a "
        "throwaway home",
        len(statements),
    )
    started = time.perf_counter()
    counters: dict[str, int] = {}
    with tempfile.TemporaryDirectory(prefix="criss-warmup-") as scratch:
        try:
            with criss.session(spark, home=str(Path(scratch) / "home"), **options) as cs:
                for _ in range(2):
                    for sql in statements:
                        try:
                            cs.sql(sql).collect()
                        except PySparkException:  # Spark's own rejection, as in warm_up
                            pass
                        cs.settle_harvests()
                counters = {k: cs.counters[k] for k in ("operators_cached", "operators_reused")}
        except Exception as exc:
            progress_log.warning("warm-up: Criss's own warm-up failed (%s); replaying anyway", exc)
    return {"seconds": round(time.perf_counter() - started, 4), **counters}
