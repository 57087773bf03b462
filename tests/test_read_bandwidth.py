"""Reading a cached result back is priced at what the queries that read the cache were
measured to take (their scans' own time), not at a calibration job's guess; storing it
stays priced at what writes were measured to take."""

from __future__ import annotations

import os

import pytest
from rowcompare import assert_same_rows

import criss
from criss.bridge import OperatorMetrics
from criss.planner.decide import caching_rules
from criss.planner.executions import cache_reads
from criss.qtree.plan import PlanNode

MB = 1 << 20
CACHE_ROOT = "/dev/shm/criss-root/abc"


def _relation(path, *roots):
    return PlanNode("LogicalRelation", {}, (), path, relation={"roots": list(roots)})


def test_only_timed_scans_of_cached_files_count_as_reads_of_the_cache():
    cached = _relation((0, 0, 0), f"file:{CACHE_ROOT}/e1/00000-a.parquet")
    table = _relation((0, 1, 0), "file:/data/tpch/lineitem.parquet")
    untimed = _relation((0, 2, 0), f"file:{CACHE_ROOT}/e2/00000-b.parquet")
    scans = [PlanNode("Project", {}, (leaf,), leaf.path[:-1]) for leaf in (cached, table, untimed)]
    tree = PlanNode("Union", {}, tuple(scans), (0,))
    metrics = {
        # Spark links a scan to the projection over its relation: its time is found there
        (0, 0): OperatorMetrics(rows=10, task_seconds=0.5, scan_seconds=0.25, file_bytes=4 * MB),
        (0, 1): OperatorMetrics(rows=10, task_seconds=2.0, scan_seconds=1.5, file_bytes=90 * MB),
        (0, 2): OperatorMetrics(rows=10, task_seconds=0.1, scan_seconds=0.0, file_bytes=MB),
        (0,): OperatorMetrics(rows=30, task_seconds=0.2),
    }
    assert cache_reads(tree, metrics, (CACHE_ROOT, "/home/criss/disk")) == (4 * MB, 0.25)
    assert cache_reads(tree, metrics, ("/elsewhere",)) == (0, 0.0)


WIDE = "select id, x * 2 as y, g from read_bw where x > 0.01"


@pytest.mark.spark
def test_queries_reading_the_cache_teach_the_read_bandwidth(spark, tmp_path):
    """A result read back by Spark (not on the driver) is timed by its scan: the session
    learns the bandwidth reads reach and decides with it, through the disk's medium."""
    table = tmp_path / "read_bw"
    spark.range(0, 400_000, 1, 4).selectExpr("id", "rand(7) as x", "id % 97 as g").write.parquet(
        str(table)
    )
    spark.read.parquet(str(table)).createOrReplaceTempView("read_bw")
    expected = spark.sql(WIDE).collect()
    # the disk's bandwidth is measured (its medium known), not configured
    cs = criss.session(spark, home=str(tmp_path / "home"), local_read_bytes=0)
    try:
        assert cs.cache.tiers["disk"].medium_bandwidth is not None
        reused = 0
        for _ in range(4):
            df = cs.sql(WIDE)
            assert_same_rows(df.collect(), expected)
            reused += cs.last_query_summary().get("operators_reused", 0)
            cs.settle_harvests()
        assert reused >= 1, "the result was never read back from the cache"
        learned = cs.learning.read_bandwidth
        assert learned is not None and learned > 0
        medium = cs.cache.tiers["disk"].medium_bandwidth
        assert cs.read_bandwidth == pytest.approx(1 / (1 / medium + 1 / learned))
        assert cs.report()["read_bandwidth"] == cs.read_bandwidth
        rules = caching_rules(cs)
        assert rules.load_bandwidth == cs.read_bandwidth != cs.disk_bandwidth
        assert rules.store_bandwidth != rules.load_bandwidth
    finally:
        cs.close()


@pytest.mark.spark
def test_a_configured_disk_bandwidth_is_not_replaced_by_measured_reads(spark, tmp_path):
    cs = criss.session(spark, home=str(tmp_path / "home"), disk_bandwidth="5m")
    try:
        cs.learning.learn_read_bandwidth(8 * MB, 0.01)
        assert cs.learning.read_bandwidth == pytest.approx(8 * MB / 0.01)
        assert cs.read_bandwidth is None
        assert caching_rules(cs).load_bandwidth == cs.disk_bandwidth == 5 * MB
    finally:
        cs.close()


@pytest.mark.spark
def test_read_time_is_spread_over_the_task_slots_not_the_default_parallelism(spark):
    """Local mode runs ``local[N]``'s N tasks at once whatever spark.default.parallelism
    says (4 in Criss's local defaults): the seconds a read took are its task time over N."""
    from criss.bridge import CatalystBridge

    bridge = CatalystBridge(spark)
    master = spark.sparkContext.master
    if master.startswith("local"):
        cores = master[len("local[") : -1] if master.startswith("local[") else "1"
        expected = os.cpu_count() if cores == "*" else int(cores.split(",")[0])
        assert bridge.task_slots() == expected
    else:  # the loopback cluster: two one-core executors once registered
        assert bridge.task_slots() in (2, bridge.parallelism)
    assert bridge.parallelism == spark.sparkContext.defaultParallelism
