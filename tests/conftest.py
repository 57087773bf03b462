"""Shared fixtures: one real local SparkSession per test run, TPC-H SF 0.01 data.

Every test that needs the ``spark`` fixture, directly or through another fixture, is marked
``spark`` here, so ``pytest -m "not spark"`` runs without starting a JVM.
"""

from __future__ import annotations

import getpass
import shutil
from pathlib import Path

import pytest

from criss.sparksession import local_spark
from criss.workload.tpch.data import ensure_tpch, register_views

REPO = Path(__file__).resolve().parent.parent
#: Where memory tiers live (criss.space.memory_dir); the suite removes the ones it made.
MEMORY_TIERS = Path("/dev/shm") / f"criss-{getpass.getuser()}"


def pytest_collection_modifyitems(config, items):
    """Mark ``spark`` every test whose fixtures (their closure) include ``spark``; a test
    that starts Spark in a child process carries the mark itself."""
    for item in items:
        if "spark" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.spark)


@pytest.fixture(scope="session", autouse=True)
def _remove_memory_tiers_made_by_this_run(tmp_path_factory):
    """Memory tier directories (RAM) created during the run are removed at its end.

    Only those whose home is under this run's temporary directory, or no longer exists:
    another test run or application may be using the others right now.
    """
    before = set(MEMORY_TIERS.iterdir()) if MEMORY_TIERS.is_dir() else set()
    yield
    base = tmp_path_factory.getbasetemp().resolve()
    for directory in set(MEMORY_TIERS.iterdir()) - before if MEMORY_TIERS.is_dir() else ():
        if _made_by_this_run(directory, base):
            shutil.rmtree(directory, ignore_errors=True)


def _made_by_this_run(directory: Path, base: Path) -> bool:
    from criss.space import HOME_MARKER

    try:
        home = Path((directory / HOME_MARKER).read_text().strip())
    except OSError:
        return False  # no marker yet: being created by someone else
    return home.is_relative_to(base) or not home.exists()


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
