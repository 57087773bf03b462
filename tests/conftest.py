"""Shared fixtures: one real SparkSession per test run, TPC-H SF 0.01 data.

Every test that needs the ``spark`` fixture, directly or through another fixture, is marked
``spark`` here, so ``pytest -m "not spark"`` runs without starting a JVM.

``--spark-master loopback`` runs the session on a Spark standalone cluster started for the
run on 127.0.0.1 (a master and two workers, executors in their own JVMs); ``scripts/test.sh``
runs the tests marked ``cluster`` that way after the local pass. Tests that start Spark in
a child process pass it the master and settings in CHILD_MASTER_ENV / CHILD_CONF_ENV.
"""

from __future__ import annotations

import getpass
import json
import os
import shutil
from pathlib import Path

import pytest

from criss.sparksession import local_spark
from criss.workload.tpch.data import ensure_tpch, register_views

REPO = Path(__file__).resolve().parent.parent
#: What a test's child application reads to run on the suite's master (default local[2]).
CHILD_MASTER_ENV, CHILD_CONF_ENV = "CRISS_TEST_MASTER", "CRISS_TEST_CONF"
#: Each worker offers two task slots on this 2-core machine: the suite's application takes
#: one per worker, and a test's child applications (two at once at most) one each.
WORKER_CORES, WORKER_MEMORY = 2, "3g"
#: Where memory tiers live (criss.space.memory_dir); the suite removes the ones it made.
MEMORY_TIERS = Path("/dev/shm") / f"criss-{getpass.getuser()}"


def pytest_addoption(parser):
    parser.addoption(
        "--spark-master",
        default="local[2]",
        help="local[2] (default); loopback: a standalone master and two workers started "
        "on 127.0.0.1 for the run; or the URL of a running master",
    )


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
def spark_master(request, tmp_path_factory):
    """The master URL the suite's applications run on (a loopback cluster lives as long)."""
    master = request.config.getoption("--spark-master")
    if master != "loopback":
        yield master
        return
    from criss.cluster import LoopbackCluster

    cluster = LoopbackCluster(
        tmp_path_factory.mktemp("cluster"), workers=2, cores=WORKER_CORES, memory=WORKER_MEMORY
    )
    url = cluster.start()
    os.environ.update({CHILD_MASTER_ENV: url, CHILD_CONF_ENV: json.dumps(cluster_conf(cores=1))})
    try:
        yield url
    finally:
        for name in (CHILD_MASTER_ENV, CHILD_CONF_ENV):
            os.environ.pop(name, None)
        cluster.stop()


def cluster_conf(cores: int) -> dict[str, str]:
    """Settings of an application on the loopback cluster: ``cores`` one-core executors."""
    return {
        "spark.driver.host": "127.0.0.1",
        "spark.cores.max": str(cores),
        "spark.executor.cores": "1",
        "spark.executor.memory": "1g",
    }


@pytest.fixture(scope="session")
def spark(spark_master):
    # SF 0.01 tables are far below the default min_texec: let the tests cache them anyway.
    conf = {
        "spark.sql.shuffle.partitions": "4",
        "spark.criss.min.texec": "0",
        # measured once in test_bandwidth.py; other tests skip the calibration job
        "spark.criss.codec.rate": "20m",
        # Spark frees a broadcast table once a GC finds its plan unreachable; the suite's
        # long-lived session runs hundreds of plans (TPC-DS broadcasts a 1.9M-row
        # customer_demographics), so a GC every 30 s keeps them from filling the heap
        "spark.cleaner.periodicGC.interval": "30s",
    }
    if not spark_master.startswith("local"):
        conf.update(cluster_conf(cores=2))
    session = local_spark("criss-tests", master=spark_master, conf=conf)
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
