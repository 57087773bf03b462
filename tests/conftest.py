"""Shared fixtures: one real local SparkSession per test run, TPC-H SF 0.01 data."""

from __future__ import annotations

from pathlib import Path

import pytest
from criss.workload.tpch.data import ensure_tpch, register_views

from criss.sparksession import local_spark

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="session")
def spark():
    # SF 0.01 tables are far below the default min_texec: let the tests cache them anyway.
    session = local_spark(
        "criss-tests",
        conf={
            "spark.sql.shuffle.partitions": "4",
            "spark.criss.min.texec": "0",
            # measured once in test_bandwidth.py; other tests skip the calibration job
            "spark.criss.codec.rate": "20m",
        },
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


@pytest.fixture(scope="session")
def replayed_home(tpch, tpch_dir, tmp_path_factory):
    """A Criss home and a results folder filled by a real replay (Zipf, 8 queries, SF 0.01).

    Shared by the dashboard and CLI inspection tests, which only read it (tests that change
    a home work on a copy). A small memory quota puts some partitions on disk; shuffle
    partitions are not coalesced, so entries have several partitions.
    """
    from types import SimpleNamespace

    from criss.workload.replay import ReplayConfig, run_replay, write_results

    root = tmp_path_factory.mktemp("replayed")
    config = ReplayConfig(
        stream="zipf",
        queries=8,
        sf=0.01,
        seed=11,
        modes=("spark", "criss"),
        home=root / "home",
        data_dir=tpch_dir,
        criss_options={"memory_capacity": "8k"},
    )
    key = "spark.sql.adaptive.coalescePartitions.enabled"
    before = tpch.conf.get(key)
    tpch.conf.set(key, "false")
    try:
        result = run_replay(tpch, config)
    finally:
        tpch.conf.set(key, before)
    results = root / "results"
    write_results(result, results / "zipf-sf0.01-8.json")
    return SimpleNamespace(home=root / "home", results=results, result=result, config=config)
