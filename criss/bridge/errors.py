"""How failures inside Spark's JVM (or PySpark's layer over it) reach Criss: as BridgeError.

py4j raises ``Py4JJavaError`` and friends, PySpark its ``AnalysisException`` family; both
mean Catalyst refused or failed, which Criss answers by running the query uncached. Errors
of Criss's own code pass through unchanged.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import ParamSpec, TypeVar

from criss.errors import BridgeError

P = ParamSpec("P")
R = TypeVar("R")


def is_jvm_error(exc: BaseException) -> bool:
    """Whether ``exc`` was raised by py4j or PySpark (a JVM-side failure), not by Criss.

    >>> is_jvm_error(ValueError("mine"))
    False
    """
    return type(exc).__module__.startswith(("py4j", "pyspark"))


def jvm_unreachable(exc: BaseException) -> bool:
    """Whether ``exc`` (or an error it was raised from) says py4j could not reach Spark's
    JVM at all: the JVM has exited (killed for memory, crashed), not a query failing in it.

    >>> jvm_unreachable(ConnectionRefusedError(111, "Connection refused"))
    True
    >>> jvm_unreachable(ValueError("a query's own error"))
    False
    """
    from py4j.protocol import Py4JNetworkError

    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, (ConnectionError, Py4JNetworkError)):
            return True
        exc = exc.__cause__ or exc.__context__
    return False


def jvm_errors(operation: str) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """Decorator: a py4j or PySpark error raised by the function becomes
    ``BridgeError("cannot <operation>: <original error>")``, chained to the original.

    >>> @jvm_errors("read the plan")
    ... def read() -> None:
    ...     raise KeyError("not a JVM error: passes through")
    """

    def decorate(function: Callable[P, R]) -> Callable[P, R]:
        @functools.wraps(function)
        def guarded(*args: P.args, **kwargs: P.kwargs) -> R:
            try:
                return function(*args, **kwargs)
            except Exception as exc:
                if is_jvm_error(exc):
                    raise BridgeError(f"cannot {operation}: {exc}") from exc
                raise

        return guarded

    return decorate
