"""The DataFrame handed out when a query reads cached results: Spark's own, with actions
that fall back to the plain plan when Criss's files fail them.

Planning verifies every cached partition it serves (size, CRC-32, row count), but a file
can still be deleted, truncated or overwritten between planning and the action that reads
it (an administrator, a full disk, another program). Spark then fails the action with an
error plain Spark would never have raised. An action of this DataFrame that fails reading
a file under one of Criss's tiers runs again on the query's own plan, so the user gets
plain Spark's answer; any other failure is the user's and is raised as it is.

Only actions that compute their whole result before handing any of it back are run again
(``collect``, ``count``, ``show``, ``toPandas``, …): ``foreach`` or ``toLocalIterator``
could have acted on rows already, and ``write`` on files. A DataFrame derived from this one
(``df.filter(...)``) is Spark's plain DataFrame and is not covered.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

#: Actions that return nothing before they have computed everything: safe to run again.
RETRIED_ACTIONS = (
    "collect",
    "count",
    "show",
    "take",
    "head",
    "first",
    "tail",
    "isEmpty",
    "toArrow",
    "toPandas",
)


def _falling_back(action: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(action)
    def run(self: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return action(self, *args, **kwargs)
        except Exception as exc:  # any type: what Spark raised for Criss's files is ours
            try:
                ours = self._criss_recover(exc)
            except Exception:  # the check itself failed: the error stays the user's
                ours = False
            if not ours:
                raise
        return getattr(self._criss_plain, action.__name__)(*args, **kwargs)

    return run


@functools.cache
def served_class() -> type:
    """``ServedDataFrame``: PySpark's DataFrame with :data:`RETRIED_ACTIONS` falling back
    (built on first use, so importing Criss does not import PySpark)."""
    from pyspark.sql.classic.dataframe import DataFrame as ClassicDataFrame

    methods = {name: _falling_back(getattr(ClassicDataFrame, name)) for name in RETRIED_ACTIONS}
    methods["__doc__"] = "A DataFrame reading cached results; see criss.bridge.handout."
    return type("ServedDataFrame", (ClassicDataFrame,), methods)


def served_dataframe(planned: Any, plain: Any, recover: Callable[[BaseException], bool]) -> Any:
    """``planned`` (which reads cached files) as a ``ServedDataFrame`` that runs ``plain``
    instead when ``recover(error)`` says an action failed on Criss's files."""
    served = served_class()(planned._jdf, planned.sparkSession)
    served._criss_plain = plain
    served._criss_recover = recover
    return served


def names_any(error: BaseException, locations: tuple[str, ...]) -> bool:
    """Whether ``error`` (a Spark error raised through py4j, with its Java cause) names a
    file under one of ``locations``."""
    text = str(error)
    return any(location in text for location in locations)
