"""Shared fixtures: one real local SparkSession per test run, TPC-H SF 0.01 data."""

from __future__ import annotations

from pathlib import Path

import pytest

from criss.sparksession import local_spark
from experiments.tpch.data import ensure_tpch, register_views

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="session")
def spark():
    # SF 0.01 tables are far below the default min_texec: let the tests cache them anyway.
    session = local_spark(
        "criss-tests", conf={"spark.sql.shuffle.partitions": "4", "spark.criss.min.texec": "0"}
    )
    yield session
    session.stop()


@pytest.fixture(scope="session")
def tpch_dir():
    return ensure_tpch(0.01, REPO / "data" / "tpch" / "sf0.01", quiet=True)


@pytest.fixture(scope="session")
def tpch(spark, tpch_dir):
    register_views(spark, tpch_dir)
    return spark


@pytest.fixture
def no_coalescing(spark):
    """Keep every shuffle partition: SF 0.01 results would otherwise shrink to one partition."""
    key = "spark.sql.adaptive.coalescePartitions.enabled"
    before = spark.conf.get(key)
    spark.conf.set(key, "false")
    yield
    spark.conf.set(key, before)
