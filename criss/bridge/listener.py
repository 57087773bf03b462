"""Every finished action of a SparkSession, reported back from the JVM.

Spark calls each registered ``QueryExecutionListener`` after an action (``collect``,
``show``, ``count``, ``toPandas``, a write, ...) with the QueryExecution that ran, its
executed plan holding the SQL metrics. :class:`ExecutionListener` implements that interface
in Python through py4j's callback server, as PySpark's own streaming listeners do. The
callback runs on Spark's listener thread, so it only hands the execution on; reading its
metrics (dozens of py4j calls) happens later, off that thread.
"""

from __future__ import annotations

import itertools
import logging
import threading
import weakref
from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from criss.bridge.errors import is_jvm_error
from criss.bridge.metrics import OperatorMetrics, operator_metrics

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from criss.bridge.capture import CapturedPlan
    from criss.bridge.catalyst import CatalystBridge

log = logging.getLogger("criss")

_LISTENER_INTERFACE = "org.apache.spark.sql.util.QueryExecutionListener"


@dataclass(frozen=True)
class FinishedExecution:
    """One action that ran to the end: its name (``collectToPython``, ``count``, ...), the
    seconds Spark measured for it (planning, every job, the driver's share) and the JVM
    QueryExecution, valid while this object lives."""

    action: str
    seconds: float
    query_execution: Any
    #: The QueryExecution's id, as :func:`execution_id` gives it for a DataFrame.
    execution_id: int

    def built_on(self, bridge: CatalystBridge, identities: Collection[int], depth: int = 4) -> bool:
        """Whether the action's logical plan has, within ``depth`` levels of its root, a
        plan of one of ``identities`` (see :func:`plan_identity`): ``count()`` puts an
        Aggregate over it, ``show()`` a limit and a Project, a write its command."""
        if not identities:
            return False
        identity = bridge.jvm.System.identityHashCode
        level = [self.query_execution.logical()]
        for _ in range(depth + 1):
            if any(int(identity(node)) in identities for node in level):
                return True
            level = [
                kids.apply(i)
                for node in level
                for kids in [node.children()]
                for i in range(kids.size())
            ]
            if not level:
                return False
        return False

    def statistics(
        self, bridge: CatalystBridge
    ) -> tuple[CapturedPlan, dict[tuple[int, ...], OperatorMetrics]]:
        """The executed query's optimized plan, captured, and what each of its operators
        did (keyed by path in that plan)."""
        qe = self.query_execution
        # the file listings it ran with, not fresh ones: the statistics are of those files
        captured = bridge.capture_plan(qe.optimizedPlan(), refresh_listings=False)
        return captured, operator_metrics(bridge, qe, qe.executedPlan())


def execution_id(df: DataFrame) -> int:
    """The id of the QueryExecution an action on ``df`` itself (``collect``, ``toPandas``,
    ``foreach``) runs; actions that build a new plan (``count``, ``show``, a write) run
    another."""
    return int(df._jdf.queryExecution().id())


def plan_identity(df: DataFrame) -> int:
    """The JVM identity of ``df``'s logical plan: ``count()``, ``show()`` or a write of
    ``df`` build their plan over that very object (see ``FinishedExecution.built_on``)."""
    return int(df.sparkSession._jvm.System.identityHashCode(df._jdf.logicalPlan()))


class _ListenerProxy:
    """The py4j-side ``QueryExecutionListener`` of one JVM SparkSession, shared by every
    Criss session on it: forwards finished actions to the receivers registered now, each
    held weakly, so a forgotten Criss session is not kept alive by Spark.

    One per JVM session, registered once and never unregistered: py4j makes a new JVM proxy
    each time a Python object is passed, and Spark removes a listener by reference, so
    ``unregister`` could never find it; a listener per Criss session would stay registered
    after ``close()``, one more callback into Python for every action of the application.
    """

    def __init__(self) -> None:
        self._receivers: dict[int, weakref.WeakMethod] = {}
        self._lock = threading.Lock()

    def add(self, receive: Callable[[FinishedExecution], None]) -> int:
        token = next(_tokens)
        with self._lock:
            self._receivers[token] = weakref.WeakMethod(receive)
        return token

    def remove(self, token: int) -> None:
        with self._lock:
            self._receivers.pop(token, None)

    def __len__(self) -> int:
        """How many receivers are registered and alive."""
        with self._lock:
            return sum(1 for r in self._receivers.values() if r() is not None)

    def onSuccess(self, func_name: str, qe: Any, duration_ns: int) -> None:  # noqa: N802 (Java)
        with self._lock:
            receivers = [r() for r in self._receivers.values()]
        receivers = [r for r in receivers if r is not None]
        if not receivers:
            return
        try:
            finished = FinishedExecution(str(func_name), int(duration_ns) / 1e9, qe, int(qe.id()))
        except Exception as exc:  # never raise into Spark's listener thread
            log.info("a finished action was not recorded: %s", exc)
            return
        for receive in receivers:
            try:
                receive(finished)
            except Exception as exc:  # one session's failure is not another's
                log.info("a finished action was not recorded: %s", exc)

    def onFailure(self, func_name: str, qe: Any, exception: Any) -> None:  # noqa: N802
        """A failed action leaves no statistics worth keeping."""

    class Java:
        implements = [_LISTENER_INTERFACE]


_tokens = itertools.count(1)
#: The shared listener of each JVM SparkSession (by identity), with that session's JVM
#: object, to tell a new session that happens to reuse an identity hash from a stopped one.
_shared: dict[int, tuple[Any, _ListenerProxy]] = {}
_shared_lock = threading.Lock()


def _shared_listener(spark: SparkSession) -> _ListenerProxy:
    """The listener registered on ``spark``'s JVM session, registered on first use."""
    from pyspark.java_gateway import ensure_callback_server_started

    jsession = spark._jsparkSession
    key = int(spark._jvm.System.identityHashCode(jsession))
    with _shared_lock:
        found = _shared.get(key)
        if found is not None and found[0].equals(jsession):
            return found[1]
        ensure_callback_server_started(spark.sparkContext._gateway)
        proxy = _ListenerProxy()
        jsession.listenerManager().register(proxy)
        _shared[key] = (jsession, proxy)
        return proxy


class ExecutionListener:
    """Reports every finished action of ``spark`` to ``receive`` (a bound method, held
    weakly) until :meth:`stop`."""

    def __init__(self, spark: SparkSession, receive: Callable[[FinishedExecution], None]) -> None:
        self._spark = spark
        self._receive = weakref.WeakMethod(receive)
        self._proxy: _ListenerProxy | None = None
        self._token: int | None = None

    @property
    def _registered(self) -> bool:
        return self._token is not None

    def start(self) -> None:
        """Register with Spark; raises what py4j or Spark raise if the callback server
        cannot start (the caller then learns only from its own jobs)."""
        receive = self._receive()
        if receive is None:  # its session is gone already
            return
        self._proxy = _shared_listener(self._spark)
        self._token = self._proxy.add(receive)

    def wait_for_reports(self, timeout_seconds: float = 5.0) -> None:
        """Return once Spark has delivered the events of actions already finished.

        Spark delivers them on its listener thread, usually within milliseconds, but a
        query planned right after an action must not miss what that action measured.
        """
        if not self._registered:
            return
        try:
            bus = self._spark.sparkContext._jsc.sc().listenerBus()
            bus.waitUntilEmpty(int(timeout_seconds * 1000))
        except Exception as exc:
            if not is_jvm_error(exc):
                raise
            log.info("listener events still queued after %ss: %s", timeout_seconds, exc)

    def stop(self) -> None:
        if self._proxy is not None and self._token is not None:
            self._proxy.remove(self._token)
        self._token = None
