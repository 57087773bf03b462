"""The disk tier at a Hadoop file system URI (``disk_uri``), with real Spark.

The URI is ``viewfs://`` over a local directory (``tests/viewfs.py``): Spark's tasks write
and read the cached files through Hadoop's FileSystem, and the driver lists, renames and
deletes them through the same API, never as local paths. No HDFS, S3 or other multi-host
file system can run on these machines; ViewFs is Hadoop's own, with the same client API.
"""

from __future__ import annotations

from contextlib import closing
from pathlib import Path

import pytest
from rowcompare import assert_same_rows
from viewfs import viewfs_root

import criss
from criss.bridge.hadoopfs import HadoopFiles
from criss.config import CrissOptions
from criss.errors import ConfigError, CrissError
from criss.inspect import clear_home
from criss.qtree import QTree
from criss.space import calibrate, spark_codec_rate
from criss.storage.hadoop import HadoopTier

pytestmark = [pytest.mark.spark, pytest.mark.usefixtures("no_coalescing")]

#: An aggregate with ~15k groups at SF 0.01: four partitions of similar size.
BY_ORDER = "select l_orderkey, sum(l_extendedprice) s, count(*) c from lineitem group by l_orderkey"


def _session(spark, home: Path, uri: str, **options):
    # local_read_bytes=0: every reuse is Spark reading the files by their viewfs:// URIs
    options = {"media": "disk", "local_read_bytes": 0, "disk_bandwidth": "200m", **options}
    return criss.session(spark, home=str(home), disk_uri=uri, **options)


def _run(cs, sql):
    rows = cs.sql(sql).collect()
    return rows, cs.last_query_summary()


def _cached_files(backing: Path) -> list[Path]:
    return sorted(
        p for p in backing.rglob("*.parquet") if "_tmp" not in p.parts and p.parent != backing
    )


@pytest.mark.cluster
def test_a_disk_tier_at_a_uri_caches_reuses_and_recomputes_what_is_missing(tpch, tmp_path):
    backing = tmp_path / "backing"
    uri = viewfs_root(tpch, backing)
    expected = tpch.sql(BY_ORDER).collect()
    cs = _session(tpch, tmp_path / "h", uri)
    try:
        rows, summary = _run(cs, BY_ORDER)
        assert summary["operators_cached"] == 1
        assert_same_rows(rows, expected)
        files = _cached_files(backing)
        assert len(files) == 4, files  # one file per partition, in the URI's directory
        assert not list((backing / "_tmp").iterdir())  # staged under _tmp/, renamed out
        entry = cs.cache.lookup(cs.cache.catalog.entries()[0].key)
        assert all(u.startswith("viewfs://") for u in cs.cache.uris(entry))
        assert cs.report()["tiers"]["disk"]["used_bytes"] == sum(p.stat().st_size for p in files)

        rows, summary = _run(cs, BY_ORDER)
        assert summary["operators_reused"] == 1 and summary["partitions_reused"] == 4
        assert_same_rows(rows, expected)

        for damaged in files[1:3]:
            damaged.unlink()
        rows, summary = _run(cs, BY_ORDER)
        assert summary["partitions_recomputed"] == 2 and summary["partitions_reused"] == 2
        assert_same_rows(rows, expected)
        assert len(_cached_files(backing)) == 4
    finally:
        cs.close()


@pytest.mark.cluster
def test_a_second_application_reuses_a_home_whose_disk_is_at_a_uri(tpch, tmp_path):
    uri = viewfs_root(tpch, tmp_path / "backing")
    with _session(tpch, tmp_path / "h", uri) as first:
        _run(first, BY_ORDER)
    with _session(tpch, tmp_path / "h", uri) as second:
        rows, summary = _run(second, BY_ORDER)
        assert summary["operators_reused"] == 1
        assert_same_rows(rows, tpch.sql(BY_ORDER).collect())
        assert second.cache.faults.get("temp_removed", 0) == 0


def test_memory_first_then_a_disk_at_a_uri_splits_a_result_across_both(tpch, tmp_path):
    """Staged at the URI, a partition placed in memory is copied out of it; the rest are
    renamed into place."""
    backing = tmp_path / "backing"
    uri = viewfs_root(tpch, backing)
    expected = tpch.sql(BY_ORDER).collect()
    cs = _session(tpch, tmp_path / "h", uri, media="hybrid", memory_capacity="150k")
    try:
        rows, summary = _run(cs, BY_ORDER)
        assert summary["operators_cached"] == 1
        strip = cs.report()["entries"][0]["bitmap"]
        assert "M" in strip and "D" in strip, strip
        rows, summary = _run(cs, BY_ORDER)
        assert summary["operators_reused"] == 1 and summary["partitions_reused"] == 4
        assert_same_rows(rows, expected)
    finally:
        cs.close()


def test_write_through_steps_aside_for_a_tier_at_a_uri_and_says_why(tpch, tmp_path):
    uri = viewfs_root(tpch, tmp_path / "backing")
    cs = _session(tpch, tmp_path / "h", uri, write_through=True)
    try:
        df = cs.sql(BY_ORDER)
        assert cs.last_query_summary()["operators_cached"] == 1
        assert "Python workers write local files only" in cs.explain(df)
        assert_same_rows(df.collect(), tpch.sql(BY_ORDER).collect())
    finally:
        cs.close()


def test_a_bad_disk_uri_and_a_spark_less_clear_are_errors_that_name_the_fix(tpch, tmp_path):
    with pytest.raises(ConfigError, match="scheme://authority/path"):
        criss.session(tpch, home=str(tmp_path / "h"), disk_uri="/not/a/uri")
    uri = viewfs_root(tpch, tmp_path / "backing")
    with _session(tpch, tmp_path / "h", uri) as cs:
        _run(cs, BY_ORDER)
    with pytest.raises(ConfigError, match="cs.clear()"):
        clear_home(tmp_path / "h", disk_uri=uri)


def test_a_file_system_spark_cannot_open_is_an_error_naming_it(tpch, tmp_path):
    with pytest.raises(CrissError, match=r"nosuchfs://cluster/criss.*No FileSystem for scheme"):
        criss.session(tpch, home=str(tmp_path / "h"), disk_uri="nosuchfs://cluster/criss")


@pytest.mark.parametrize("cache_in_action", [True, False])
def test_a_file_uri_tier_takes_small_results_written_on_the_driver(
    tpch, tmp_path, monkeypatch, cache_in_action
):
    """Small results are written on the driver with pyarrow; at a ``file:`` URI they must
    land in the staged directory itself (once a relative ``file:/...`` folder under the
    working directory, so nothing was cached)."""
    monkeypatch.chdir(tmp_path)
    sql = "select o_orderpriority, count(*) c from orders group by 1"
    uri = f"file://{tmp_path}/uri/cache"
    cs = _session(tpch, tmp_path / "h", uri, local_read_bytes="2m", cache_in_action=cache_in_action)
    try:
        assert cs.cache.tiers["disk"].local_root() == tmp_path / "uri" / "cache"
        _run(cs, sql)
        cs.settle_harvests()
        rows, summary = _run(cs, sql)
        assert summary.get("fallback") is None, summary
        assert summary["operators_reused"] == 1
        assert_same_rows(rows, tpch.sql(sql).collect())
        assert _cached_files(tmp_path / "uri" / "cache")
        assert not list(tmp_path.glob("file:*"))
    finally:
        cs.close()


def test_a_tier_at_a_uri_is_calibrated_through_its_file_system(tpch, tmp_path):
    """Spark's Parquet rate is measured by a job writing into the URI (where executors on
    other hosts write too), the tier's bandwidth through its file system; neither leaves a
    file behind."""
    backing = tmp_path / "backing"
    disk = HadoopTier("disk", HadoopFiles(tpch, viewfs_root(tpch, backing)))
    options = CrissOptions()  # nothing configured: both are measured
    with closing(QTree(tmp_path / "catalog.db")) as qtree:
        rate = spark_codec_rate(tpch, options, qtree, disk)
        calibrate([disk], options, qtree, rate)
    assert rate > 0 and 0 < disk.bandwidth < rate
    assert not [p for p in backing.rglob("*") if p.is_file()]
