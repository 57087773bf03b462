"""A fast local SparkSession for tests, replays and the demo.

Takes the caller's settings; nothing here is global. Criss itself never builds
a session: ``criss.session(spark)`` wraps the one the user already has.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING

from criss.errors import ConfigError, EnvironmentProblem

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

#: Settings that make local Spark start fast and behave the same run after run.
LOCAL_DEFAULTS: dict[str, str] = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.shuffle.partitions": "8",
    "spark.default.parallelism": "4",
    "spark.sql.adaptive.enabled": "true",
    "spark.sql.adaptive.coalescePartitions.enabled": "true",
    "spark.sql.session.timeZone": "UTC",
    "spark.driver.memory": "6g",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    # Spark's 64 MB Tungsten pages are humongous objects to G1, and each may start a
    # concurrent mark that takes one of two cores from the query: side by side at SF 1
    # (experiments/results/issue22/session61/) plain Spark ran 0.888x as long under the
    # throughput collector; four identical applications spread 4.6 % under it (2.1 % with
    # a fixed heap, -Xms at the driver's memory: local_spark's fixed_heap, which replays
    # use) against 11 % under G1 (session62/)
    "spark.driver.extraJavaOptions": "-XX:+UseParallelGC",
}

#: PYSPARK_SUBMIT_ARGS come after the builder's settings on spark-submit's command line,
#: so any of these there decides the driver's heap or options instead of ``settings``.
_SUBMIT_ARGS_THAT_SET_THE_HEAP = (
    "--driver-memory",
    "spark.driver.memory",
    "--driver-java-options",
    "spark.driver.extraJavaOptions",
)


def driver_memory_bytes(setting: str) -> int | None:
    """Bytes of a ``spark.driver.memory`` setting such as ``6g``, ``512m`` or ``4096`` (a
    bare number is MiB, as Spark reads it); None for one of another form (Spark judges it)."""
    from criss.config import parse_bytes

    text = setting.strip()
    try:
        return parse_bytes(f"{text}m" if text.isdigit() else text, "spark.driver.memory")
    except ConfigError:
        return None


def with_fixed_heap(settings: Mapping[str, str], caller: Mapping[str, str]) -> dict[str, str]:
    """``settings`` with the driver's initial heap (``-Xms``) at its maximum, the driver
    memory, unless the ``caller`` set the driver's Java options itself.

    A heap that sizes itself resizes at different moments run after run: four identical
    applications spread 4.6 % with it and 2.1 % with the heap fixed, for the same total
    time (experiments/results/issue22/session62/). ``-Xms`` follows the driver memory
    wherever it was set, since one larger than ``-Xmx`` stops the JVM at start.
    """
    fixed = dict(settings)
    submit_args = os.environ.get("PYSPARK_SUBMIT_ARGS", "")
    heap = driver_memory_bytes(fixed.get("spark.driver.memory", ""))
    if (
        "spark.driver.extraJavaOptions" in caller
        or heap is None
        or any(arg in submit_args for arg in _SUBMIT_ARGS_THAT_SET_THE_HEAP)
    ):
        return fixed
    options = fixed.get("spark.driver.extraJavaOptions", "")
    fixed["spark.driver.extraJavaOptions"] = f"{options} -Xms{heap // 2**20}m".strip()
    return fixed


def java_major_version() -> int | None:
    """The major version of the ``java`` on PATH (or in JAVA_HOME), or None if there is none."""
    java = (
        os.path.join(os.environ["JAVA_HOME"], "bin", "java")
        if os.environ.get("JAVA_HOME")
        else None
    )
    java = java if java and os.path.exists(java) else shutil.which("java")
    if not java:
        return None
    out = subprocess.run([java, "-version"], capture_output=True, text=True, check=False).stderr
    for token in out.replace('"', " ").split():
        head = token.split(".")[0]
        if head.isdigit() and ("." in token or head == token):
            major = int(head)
            return 8 if major == 1 else major
    return None


def require_java(minimum: int = 17) -> int:
    """Raise a clear error unless Java ``minimum``+ is available; return its major version."""
    major = java_major_version()
    if major is None:
        raise EnvironmentProblem(
            "Java was not found. Spark 4 needs Java 17 or newer: "
            "install it (Debian/Ubuntu: `apt-get install openjdk-17-jre-headless`) "
            "or set JAVA_HOME."
        )
    if major < minimum:
        raise EnvironmentProblem(
            f"Java {major} was found but Spark 4 needs Java {minimum}+: install "
            "openjdk-17-jre-headless (or newer) and put it first on PATH or in JAVA_HOME."
        )
    return major


def local_spark(
    app_name: str = "criss",
    master: str = "local[2]",
    conf: Mapping[str, str] | None = None,
    *,
    coalesce_partitions: bool | None = None,
    fixed_heap: bool = False,
) -> SparkSession:
    """Build (or get) a local SparkSession with fast defaults, overridden by ``conf``.

    ``fixed_heap``: the driver's heap at its full size from the start (:func:`with_fixed_heap`),
    for replays, whose timings it steadies. A fixed 6 GB heap fills its 2 GB young
    generation before its first collection, so many applications at once (the test suite's)
    take more memory with it: 22.5 of this machine's 23 GB at the suite's peak, 17.6 without.

    >>> spark = local_spark(conf={"spark.sql.shuffle.partitions": "4"})  # doctest: +SKIP
    """
    require_java()
    from pyspark.sql import SparkSession

    settings = dict(LOCAL_DEFAULTS)
    # Python workers (the range index's mapInArrow) need the driver's packages (NumPy,
    # PyArrow): run them with the driver's interpreter, not PATH's python3 (PySpark reads
    # only this variable, not spark.pyspark.python, when it starts the context)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    if coalesce_partitions is not None:
        settings["spark.sql.adaptive.coalescePartitions.enabled"] = str(coalesce_partitions).lower()
    settings.update(conf or {})
    if fixed_heap:
        settings = with_fixed_heap(settings, conf or {})
    builder = SparkSession.builder.master(master).appName(app_name)
    for key, value in settings.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark
