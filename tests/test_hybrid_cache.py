"""The hybrid memory/disk cache with real Spark: placement, partial recompute, replacement,
promotion, pins, operator granularity, the Alluxio tier, and recovery after a killed writer.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
import warnings
from pathlib import Path

import pytest
from alluxio_standin import AlluxioStandin
from rowcompare import assert_same_rows

import criss

pytestmark = [pytest.mark.spark, pytest.mark.usefixtures("no_coalescing")]

#: An aggregate with ~15k groups at SF 0.01: four partitions of similar size.
BY_ORDER = "select l_orderkey, sum(l_extendedprice) s, count(*) c from lineitem group by l_orderkey"
BY_ORDER_QTY = (
    "select l_orderkey, sum(l_quantity) q, max(l_tax) t from lineitem group by l_orderkey"
)


def _session(spark, home: Path, **options):
    return criss.session(spark, home=str(home), **options)


def _run(cs, sql):
    df = cs.sql(sql)
    rows = df.collect()
    return rows, cs.last_query_summary()


def _entry(cs, sql_key_op="Aggregate"):
    entries = [e for e in cs.report()["entries"] if e["op"] == sql_key_op]
    assert len(entries) == 1, entries
    return entries[0]


def _tiers(cs):
    return cs.report()["tiers"]


def _entry_bytes(tpch, tmp_path, sql) -> int:
    probe = _session(tpch, tmp_path / "probe")
    _run(probe, sql)
    size = _entry(probe)["bytes"]
    probe.close()
    return size


def test_memory_quota_smaller_than_one_entry_splits_it_across_tiers(tpch, tmp_path):
    size = _entry_bytes(tpch, tmp_path, BY_ORDER)
    cs = _session(tpch, tmp_path / "h", memory_capacity=size // 2)
    expected = tpch.sql(BY_ORDER).collect()
    rows, summary = _run(cs, BY_ORDER)
    assert summary["operators_cached"] == 1
    assert_same_rows(rows, expected)
    strip = _entry(cs)["bitmap"]
    assert "M" in strip and "D" in strip, strip
    tiers = _tiers(cs)
    assert 0 < tiers["memory"]["used_bytes"] <= size // 2
    assert tiers["memory"]["used_bytes"] + tiers["disk"]["used_bytes"] == size
    rows, summary = _run(cs, BY_ORDER)  # read back from both tiers at once
    assert summary["operators_reused"] == 1 and summary["partitions_reused"] == 4
    assert_same_rows(rows, expected)
    cs.close()


@pytest.mark.cluster
def test_only_the_missing_partitions_are_recomputed(tpch, tmp_path):
    cs = _session(tpch, tmp_path / "h")
    expected = tpch.sql(BY_ORDER).collect()
    _run(cs, BY_ORDER)
    records = sorted(cs.cache.catalog.partitions(), key=lambda p: p.index)
    assert len([r for r in records if r.rows]) >= 3
    for record in records[1:3]:
        cs.cache.tiers[record.tier].local_path(record.name).unlink()
    rows, summary = _run(cs, BY_ORDER)
    assert summary["partitions_recomputed"] == 2
    assert summary["partitions_reused"] == 2 and summary["operators_reused"] == 1
    assert sum(t["misses"] for t in _tiers(cs).values()) == 2
    assert_same_rows(rows, expected)
    assert _entry(cs)["reusable"] == [0, 1, 2, 3]  # re-committed under their own indices
    rows, summary = _run(cs, BY_ORDER)
    assert summary.get("partitions_recomputed", 0) == 0
    assert_same_rows(rows, expected)
    cs.close()


def test_a_changed_partition_layout_recomputes_the_whole_entry(tpch, tmp_path):
    cs = _session(tpch, tmp_path / "h")
    expected = tpch.sql(BY_ORDER).collect()
    _run(cs, BY_ORDER)
    first = sorted(cs.cache.catalog.partitions(), key=lambda p: p.index)[0]
    cs.cache.tiers[first.tier].local_path(first.name).unlink()
    tpch.conf.set("spark.sql.shuffle.partitions", "3")
    try:
        rows, summary = _run(cs, BY_ORDER)
    finally:
        tpch.conf.set("spark.sql.shuffle.partitions", "4")
    # partition 0 of a 3-way split is not partition 0 of the 4-way one: all are recomputed
    assert summary["partitions_recomputed"] == 3
    assert_same_rows(rows, expected)
    assert _entry(cs)["num_partitions"] == 3 and _entry(cs)["reusable"] == [0, 1, 2]
    cs.close()


def test_coalesced_partitions_are_verified_not_assumed(tpch, tmp_path):
    tpch.conf.set("spark.sql.adaptive.coalescePartitions.enabled", "true")
    cs = _session(tpch, tmp_path / "h")
    sql = BY_ORDER.replace("group by", "where l_quantity > 5 group by")
    expected = tpch.sql(sql).collect()
    _run(cs, sql)
    assert _entry(cs)["num_partitions"] == 1  # AQE merged the small shuffle partitions
    (only,) = cs.cache.catalog.partitions()
    cs.cache.tiers[only.tier].local_path(only.name).unlink()
    rows, summary = _run(cs, sql)
    assert_same_rows(rows, expected)
    assert summary.get("partitions_recomputed", 0) + summary.get("operators_cached", 0) >= 1
    cs.close()


def _stream(n: int) -> list[str]:
    """Distinct aggregates of similar size (different filters), one hot query in between."""
    out = []
    for i in range(n):
        out.append(
            f"select l_orderkey, sum(l_extendedprice) s, count(*) c from lineitem "
            f"where l_linenumber <= {7 - i % 4} and l_quantity > {i} group by l_orderkey"
        )
        out.append(BY_ORDER)  # the hot one
    return out


def test_a_stream_past_capacity_keeps_quotas_and_the_hot_entry(tpch, tmp_path):
    size = _entry_bytes(tpch, tmp_path, BY_ORDER)
    memory, disk = int(size * 1.5), int(size * 2.5)
    cs = _session(tpch, tmp_path / "h", memory_capacity=memory, disk_capacity=disk)
    for sql in _stream(6):
        rows, _ = _run(cs, sql)
        assert_same_rows(rows, tpch.sql(sql).collect())
        tiers = _tiers(cs)
        assert tiers["memory"]["used_bytes"] <= memory
        assert tiers["disk"]["used_bytes"] <= disk
    tiers = _tiers(cs)
    assert tiers["disk"]["demotions"] > 0  # memory victims landed on disk
    assert tiers["disk"]["evictions"] > 0  # and disk victims were deleted
    hot = [e for e in cs.report()["entries"] if len(e["reusable"]) == e["num_partitions"]]
    assert hot, "no entry survived whole"
    _, summary = _run(cs, BY_ORDER)  # the most referenced result went last, if at all
    assert summary["operators_reused"] == 1 and summary.get("partitions_recomputed", 0) == 0
    cs.close()


def test_a_reused_disk_entry_with_higher_benefit_is_promoted(tpch, tmp_path):
    size = _entry_bytes(tpch, tmp_path, BY_ORDER)
    cs = _session(tpch, tmp_path / "h", memory_capacity=int(size * 1.02))
    _run(cs, BY_ORDER)  # fills memory, seen once
    _run(cs, BY_ORDER_QTY)  # memory full: lands on disk
    entries = {e["key"]: e for e in cs.report()["entries"]}
    cold = next(e for e in entries.values() if "M" in e["bitmap"])
    hot = next(e for e in entries.values() if e is not cold)
    assert set(hot["bitmap"]) <= {"D", "0"}, hot
    expected = tpch.sql(BY_ORDER_QTY).collect()
    for _ in range(3):  # references raise its benefit above the cold entry's
        rows, _ = _run(cs, BY_ORDER_QTY)
        assert_same_rows(rows, expected)
    entries = {e["key"]: e for e in cs.report()["entries"]}
    assert set(entries[hot["key"]]["bitmap"]) <= {"M", "0"}, entries[hot["key"]]
    assert "D" in entries[cold["key"]]["bitmap"]  # demoted to make room, not deleted
    assert _tiers(cs)["memory"]["promotions"] > 0
    assert _tiers(cs)["memory"]["used_bytes"] <= int(size * 1.02)
    cs.close()


def test_eviction_spares_entries_a_live_dataframe_reads(tpch, tmp_path):
    size = _entry_bytes(tpch, tmp_path, BY_ORDER)
    cs = _session(tpch, tmp_path / "h", media="disk", disk_capacity=int(size * 1.5))
    _run(cs, BY_ORDER)
    live = cs.sql(BY_ORDER)  # reads the cached entry, not yet collected
    assert cs.last_query_summary()["operators_reused"] == 1
    newcomers = _stream(3)[::2]
    for sql in newcomers:  # more recent, as often referenced: they want the room
        for _ in range(3):
            _run(cs, sql)
    assert cs.report()["partitions_refused"] > 0  # the pinned entry could not be evicted
    assert_same_rows(live.collect(), tpch.sql(BY_ORDER).collect())
    pinned_key = cs.cache.catalog.entries()[0].key
    assert cs.cache.lookup(pinned_key).complete
    del live
    for sql in newcomers:
        _run(cs, sql)
    entry = cs.cache.lookup(pinned_key)
    assert entry is None or not entry.complete  # unpinned, it gave way
    cs.close()


def test_operator_granularity_keeps_results_whole(tpch, tmp_path):
    size = _entry_bytes(tpch, tmp_path, BY_ORDER)
    cs = _session(
        tpch, tmp_path / "h", granularity="operator", memory_capacity=size // 2, media="memory"
    )
    rows, summary = _run(cs, BY_ORDER)
    assert_same_rows(rows, tpch.sql(BY_ORDER).collect())
    # the whole result does not fit: with whole-operator placement nothing of it is kept
    assert cs.report()["entries"] == [] or _entry(cs)["reusable"] == []
    assert _tiers(cs)["memory"]["used_bytes"] == 0
    cs.close()
    hybrid = _session(tpch, tmp_path / "h2", granularity="operator", memory_capacity=size // 2)
    _run(hybrid, BY_ORDER)
    assert set(_entry(hybrid)["bitmap"]) <= {"D", "0"}  # all of it on disk, none in memory
    hybrid.close()


def test_alluxio_tier_serves_spark_reads(tpch, tmp_path):
    backing = tmp_path / "alluxio"
    with AlluxioStandin(backing) as standin:
        cs = _session(
            tpch,
            tmp_path / "h",
            alluxio_url=standin.url,
            alluxio_root="/criss/test",
            alluxio_mount=str(backing),
            alluxio_bandwidth="1g",
        )
        expected = tpch.sql(BY_ORDER).collect()
        _run(cs, BY_ORDER)
        rows, summary = _run(cs, BY_ORDER)
        assert summary["operators_reused"] == 1
        assert_same_rows(rows, expected)
        tiers = _tiers(cs)
        assert set(tiers) == {"alluxio", "disk"} and tiers["alluxio"]["used_bytes"] > 0
        assert tiers["alluxio"]["hits"] >= 1
        assert any("create-file" in call for call in map(str, standin.calls))
        cs.close()


WRITER = textwrap.dedent(
    """
    import sys
    import criss
    from criss.sparksession import local_spark
    from criss.workload.tpch.data import register_views
    import json, os  # the suite's master and settings (tests/conftest.py)
    spark = local_spark(
        "killed-writer",
        master=os.environ.get("CRISS_TEST_MASTER", "local[2]"),
        conf={"spark.sql.shuffle.partitions": "4",
              **json.loads(os.environ.get("CRISS_TEST_CONF", "{}"))},
    )
    register_views(spark, sys.argv[2])
    # local_read_bytes=0: every result is written by a Spark job, the write this test kills
    # (a small result written on the driver with pyarrow is committed within ~50 ms)
    cs = criss.session(
        spark, home=sys.argv[1], min_texec=0, codec_rate="20m", local_read_bytes=0
    )
    print("ready", flush=True)
    for i in range(200):
        cs.sql(
            "select l_orderkey, l_partkey, sum(l_extendedprice) s from lineitem "
            f"where l_quantity > {i % 50} group by 1, 2"
        ).collect()
    """
)


@pytest.mark.cluster
@pytest.mark.cluster_pass
def test_killed_writer_leaves_nothing_reusable_that_is_not_whole(tpch, tpch_dir, tmp_path):
    home = tmp_path / "h"
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
    proc = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(home), str(tpch_dir)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
        start_new_session=True,
    )
    try:
        assert proc.stdout.readline().strip() == b"ready"
        staging = home / "disk" / "_tmp"
        deadline = time.time() + 120
        while time.time() < deadline:  # kill while Spark writes a staged result
            if any(p.name.startswith("stage.") for p in staging.iterdir()):
                break
            time.sleep(0.005)
        else:
            pytest.fail("the writer never started materializing")
        time.sleep(0.05)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    time.sleep(1)  # the JVM notices its parent is gone
    cs = _session(tpch, home)
    recovered = cs.report()["faults"]
    assert recovered.get("temp_removed", 0) + recovered.get("orphans_removed", 0) >= 1
    for name, tier in cs.cache.tiers.items():  # catalog and tiers agree, file by file
        recorded = {p.name: p.bytes for p in cs.cache.catalog.partitions(name)}
        assert tier.list() == recorded
        assert not list(tier.scratch_dir().iterdir())
    sql = (
        "select l_orderkey, l_partkey, sum(l_extendedprice) s from lineitem "
        "where l_quantity > 0 group by 1, 2"
    )
    rows, _ = _run(cs, sql)
    assert_same_rows(rows, tpch.sql(sql).collect())
    cs.close()


SHARER = textwrap.dedent(
    """
    import json, sys
    sys.path.insert(0, sys.argv[3])
    import criss
    from criss.sparksession import local_spark
    from criss.workload.tpch.data import register_views
    from rowcompare import assert_same_rows
    import os  # the suite's master and settings (tests/conftest.py)
    spark = local_spark(
        "sharer",
        master=os.environ.get("CRISS_TEST_MASTER", "local[2]"),
        conf={"spark.sql.shuffle.partitions": "4",
              **json.loads(os.environ.get("CRISS_TEST_CONF", "{}"))},
    )
    register_views(spark, sys.argv[2])
    cs = criss.session(
        spark, home=sys.argv[1], min_texec=0, memory_capacity="300k", codec_rate="20m"
    )
    queries = [
        f"select l_orderkey, sum(l_extendedprice) s from lineitem where l_quantity > {q} "
        "group by l_orderkey"
        for q in (10, 20, 10, 30, 20, 10, 40, 10)
    ]
    for sql in queries:
        assert_same_rows(cs.sql(sql).collect(), spark.sql(sql).collect())
    print(json.dumps(cs.report()["counters"]), flush=True)
    """
)


@pytest.mark.cluster
@pytest.mark.cluster_pass
def test_two_applications_sharing_a_home_both_get_correct_results(tpch_dir, tmp_path):
    tests = Path(__file__).resolve().parent
    env = {**os.environ, "PYTHONPATH": str(tests.parent)}
    args = [sys.executable, "-c", SHARER, str(tmp_path / "shared"), str(tpch_dir), str(tests)]
    procs = [
        subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
        for _ in range(2)
    ]
    outputs = [p.communicate(timeout=600) for p in procs]
    for proc, (_, err) in zip(procs, outputs, strict=True):
        assert proc.returncode == 0, err.decode()[-3000:]
    counters = [json.loads(out.decode().strip().splitlines()[-1]) for out, _ in outputs]
    assert sum(c["operators_reused"] for c in counters) >= 4
    assert all(c["fallbacks"] == 0 for c in counters)


def test_a_result_without_partitions_is_cached_and_reused(tpch, tmp_path):
    # AQE turns a plan whose input filters to nothing into an RDD with no partitions
    sql = "select l_orderkey, count(*) c from lineitem where l_quantity > 1000 group by 1"
    cs = _session(tpch, tmp_path / "h")
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # no fallback to plain Spark
        assert _run(cs, sql)[0] == []
        rows, summary = _run(cs, sql)
    assert rows == [] and summary["operators_reused"] == 1
    assert _entry(cs)["num_partitions"] == 0
    cs.close()
