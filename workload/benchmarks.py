"""The benchmarks Criss generates data for and replays, by name."""

from __future__ import annotations

from criss.errors import WorkloadError
from criss.workload.generated import ParquetData

BENCHMARKS = ("tpch", "tpcds")


def parquet_data(benchmark: str) -> ParquetData:
    """How ``benchmark``'s tables are generated and registered."""
    if benchmark == "tpch":
        from criss.workload.tpch.data import TPCH

        return TPCH
    if benchmark == "tpcds":
        from criss.workload.tpcds.data import TPCDS

        return TPCDS
    raise WorkloadError(f"unknown benchmark {benchmark!r}; choose one of {', '.join(BENCHMARKS)}")
