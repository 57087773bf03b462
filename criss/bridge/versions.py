"""Which Spark the bridge runs on, the JVM classes that moved in Spark 4, and the py4j
connection speed-up: every version shim of the bridge, in one place."""

from __future__ import annotations

import logging
import re
import threading
from typing import TYPE_CHECKING, Any

from criss.errors import BridgeError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

log = logging.getLogger("criss.bridge")

#: Oldest Spark the bridge runs on: Spark 4 moved Dataset to ``org.apache.spark.sql.classic``
#: and builds Columns from ``ExpressionColumnNode``; the plan JSON, the adaptive plan's
#: ResultQueryStageExec and the metrics the engine reads are Spark 4's as well.
OLDEST_SPARK = (4, 0)
#: Spark 4 class names (Spark 3 had ``org.apache.spark.sql.Dataset`` and Column(Expression)).
DATASET_CLASS = "org.apache.spark.sql.classic.Dataset"
EXPRESSION_COLUMN_NODE_CLASS = "org.apache.spark.sql.classic.ExpressionColumnNode"


def require_supported_spark(version: str) -> None:
    """Raise BridgeError, naming the version, for a Spark older than ``OLDEST_SPARK``.

    >>> require_supported_spark("4.1.1")
    """
    match = re.match(r"(\d+)\.(\d+)", version)
    if match is None or (int(match[1]), int(match[2])) < OLDEST_SPARK:
        raise BridgeError(
            f"Criss needs Spark {'.'.join(map(str, OLDEST_SPARK))} or later; this session runs "
            f"Spark {version}"
        )


def jvm_class(jvm: Any, name: str) -> Any:
    """The py4j handle of the JVM class with fully qualified ``name``."""
    found = jvm
    for part in name.split("."):
        found = getattr(found, part)
    return found


class FastGateway:
    """Turns off Nagle's algorithm on the JVM end of every py4j connection (once per
    Python thread: each thread gets a connection of its own).

    py4j 0.10.9.9 (PySpark 4.1) writes a reply over 8 KB in two parts; Nagle holds the
    second until Python's delayed ACK, so every large reply (a plan's JSON is 20-60 KB)
    took 45 ms instead of 3 (py4j issue #516, fixed upstream by py4j PR #592). Only the
    socket option changes; if this py4j keeps its connections elsewhere, nothing does.
    """

    def __init__(self, spark: SparkSession) -> None:
        self.spark = spark
        #: Python threads whose py4j connection has had Nagle's algorithm turned off.
        self._threads: set[int] = set()
        self.enabled = True

    def __call__(self) -> None:
        thread = threading.get_ident()
        if not self.enabled or thread in self._threads:
            return
        self._threads.add(thread)
        try:
            server = self.spark.sparkContext._gateway.java_gateway_server
            field = self.spark._jvm.java.lang.Class.forName("py4j.GatewayServer").getDeclaredField(
                "connections"
            )
            field.setAccessible(True)
            connections = field.get(server)
            for i in range(connections.size()):
                socket = connections.get(i).getSocket()
                if not socket.getTcpNoDelay():
                    socket.setTcpNoDelay(True)
        except Exception as exc:  # another py4j or a locked-down JVM: slower, still correct
            self.enabled = False
            log.debug("py4j connections keep Nagle's algorithm: %s", exc)
