"""Criss: automatic reuse of intermediate results for Spark SQL.

>>> import criss                                        # doctest: +SKIP
>>> cs = criss.session(spark)                           # doctest: +SKIP
>>> cs.sql("select l_returnflag, count(*) from lineitem group by 1").show()  # doctest: +SKIP
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from criss.errors import (
    BridgeError,
    CatalogError,
    ConfigError,
    CrissError,
    EnvironmentProblem,
    NotFoundError,
    SessionClosed,
    StorageError,
    UsageError,
    WorkloadError,
)

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from criss.engine import CrissSession

__version__ = "0.1.0"
__all__ = [
    "BridgeError",
    "CatalogError",
    "ConfigError",
    "CrissError",
    "EnvironmentProblem",
    "NotFoundError",
    "SessionClosed",
    "StorageError",
    "UsageError",
    "WorkloadError",
    "session",
]


def session(spark: SparkSession, home: str | None = None, **options: Any) -> CrissSession:
    """Wrap an existing SparkSession; run queries through ``.sql()`` / ``.dataframe()``.

    ``home`` (default: SparkConf ``spark.criss.home``, else ``~/.cache/criss``) holds the
    QTree catalog and the cache; another application pointed at the same home reuses it.
    Other options (also settable as ``spark.criss.<option>``) are listed in the README.

    Everything is checked before anything is written or any Spark job runs: the Spark
    version (4.0+), every option name and value (a misspelling names the closest option),
    and that ``home`` can be created and written.
    """
    from criss.bridge import require_supported_spark
    from criss.config import CrissOptions, check_home

    require_supported_spark(spark.version)
    conf = dict(spark.sparkContext.getConf().getAll())
    try:
        conf.update({k: v for k, v in spark.conf.getAll.items() if k.startswith("spark.criss.")})
    except Exception:  # getAll is a property in newer PySpark; absent on some
        pass
    resolved = CrissOptions.resolve(conf, home=home, **options)
    check_home(resolved.home)

    from criss.engine import CrissSession

    return CrissSession(spark, resolved)
