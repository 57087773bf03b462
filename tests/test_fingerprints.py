"""Fingerprints: equal for the same computation however it is spelled, across JVMs too."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import threading

import pytest

import criss
from criss.bridge import CatalystBridge
from criss.qtree import canonicalize, fingerprint_tree
from criss.qtree.rewrite import result_node
from criss.workload.tpch import queries

pytestmark = pytest.mark.spark

SPELLINGS = [
    # aliases, conjunct order, a = b vs b = a, x > c vs c < x
    (
        "select o_orderpriority, count(*) from orders, lineitem where o_orderkey = l_orderkey "
        "and l_quantity > 30 and o_orderdate >= date '1994-01-01' group by o_orderpriority",
        "select o_orderpriority as prio, count(*) as n from orders o, lineitem l "
        "where o_orderdate >= date '1994-01-01' and 30 < l_quantity "
        "and l.l_orderkey = o.o_orderkey "
        "group by o_orderpriority",
    ),
]


def fingerprints(spark, sql):
    tree = fingerprint_tree(canonicalize(CatalystBridge(spark).capture(spark.sql(sql)).tree))
    return tree


def test_same_sql_twice_gives_identical_fingerprints(tpch):
    sql = queries.statement(5, sf=0.01).sql
    a = [n.fingerprint for n in fingerprints(tpch, sql).walk()]
    b = [n.fingerprint for n in fingerprints(tpch, sql).walk()]
    assert a == b and len(set(a)) == len(a)


def test_an_existence_join_gets_the_same_fingerprints_each_time(tpch):
    """``EXISTS (...) OR ...`` plans an ExistenceJoin, whose new ``exists`` column carries a
    fresh attribute id per query even in Catalyst's canonical form (TPC-DS q10, q35)."""
    sql = (
        "select c_mktsegment, count(*) from customer where c_acctbal > 9000 or exists "
        "(select 1 from orders where o_custkey = c_custkey and o_totalprice > 400000) "
        "group by c_mktsegment"
    )
    a, b = fingerprints(tpch, sql), fingerprints(tpch, sql)
    assert any("ExistenceJoin" in json.dumps(n.args, default=str) for n in a.walk())
    assert [n.fingerprint for n in a.walk()] == [n.fingerprint for n in b.walk()]


@pytest.mark.parametrize(("one", "other"), SPELLINGS)
def test_reformulations_share_fingerprints(tpch, one, other):
    a, b = fingerprints(tpch, one), fingerprints(tpch, other)
    assert result_node(a).fingerprint == result_node(b).fingerprint


def test_changed_literal_changes_fingerprints_above_it_only(tpch):
    base = "select o_orderpriority, count(*) from orders where o_totalprice > {} group by 1"
    a, b = fingerprints(tpch, base.format(1000)), fingerprints(tpch, base.format(2000))
    leaves_a = {n.fingerprint for n in a.leaves()}
    assert leaves_a == {n.fingerprint for n in b.leaves()}
    assert a.fingerprint != b.fingerprint


def test_dataframe_api_and_sql_reuse_each_other(tpch, tmp_path):
    from pyspark.sql import functions as F

    cs = criss.session(tpch, home=str(tmp_path / "h"))
    sql = (
        "select o_orderpriority, sum(o_totalprice) s from orders "
        "where o_orderdate < date '1995-01-01' group by o_orderpriority"
    )
    cs.sql(sql).collect()
    api = (
        tpch.table("orders")
        .where(F.col("o_orderdate") < F.lit("1995-01-01").cast("date"))
        .groupBy("o_orderpriority")
        .agg(F.sum("o_totalprice").alias("s"))
    )
    rows = cs.dataframe(api).collect()
    assert cs.last_query_summary().get("operators_reused", 0) >= 1
    assert sorted(rows) == sorted(tpch.sql(sql).collect())
    cs.close()


FRESH_APP = textwrap.dedent("""
    import json, sys
    import criss
    from criss.bridge import CatalystBridge
    from criss.sparksession import local_spark
    from criss.workload.replay import result_checksum
    from criss.workload.tpch.data import register_views
    from criss.workload.tpch import queries
    from criss.qtree import canonicalize, fingerprint_tree
    home, data, qids = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
    import os  # the suite's master and settings (tests/conftest.py)
    spark = local_spark(
        "fresh-app",
        master=os.environ.get("CRISS_TEST_MASTER", "local[2]"),
        conf={"spark.sql.shuffle.partitions": "4",
              **json.loads(os.environ.get("CRISS_TEST_CONF", "{}"))},
    )
    register_views(spark, data)
    cs = criss.session(spark, home=home)
    out = {}
    for q in qids:
        sql = queries.statement(q, sf=0.01).sql
        tree = fingerprint_tree(canonicalize(CatalystBridge(spark).capture(spark.sql(sql)).tree))
        rows = cs.sql(sql).collect()
        reused = cs.last_query_summary().get("operators_reused", 0)
        again = cs.sql(sql).collect()
        out[q] = {"fingerprints": [n.fingerprint for n in tree.walk()], "reused": reused,
                  "checksums": [result_checksum(rows)[1], result_checksum(again)[1]]}
    print("RESULT" + json.dumps(out))
""")


@pytest.mark.cluster
@pytest.mark.cluster_pass
def test_fresh_application_gets_same_fingerprints_and_reuses_home(tpch, tpch_dir, tmp_path):
    from criss.workload.replay import result_checksum

    qids = list(queries.QUERY_IDS)
    home = tmp_path / "shared-home"
    cs = criss.session(tpch, home=str(home))
    mine = {}
    for q in qids:
        sql = queries.statement(q, sf=0.01).sql
        mine[q] = [n.fingerprint for n in fingerprints(tpch, sql).walk()]
        # twice: 22 first sights in a row teach Criss that results here are rarely
        # repeated, and it stops caching them eagerly (test_eager_results.py); a query
        # seen twice is cached whatever the measured repeats
        cs.sql(sql).collect()
        cs.sql(sql).collect()
    cs.close()
    proc = subprocess.run(
        [sys.executable, "-c", FRESH_APP, str(home), str(tpch_dir), json.dumps(qids)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    theirs = json.loads(proc.stdout.split("RESULT", 1)[1])
    for q in qids:
        other = theirs[str(q)]
        assert other["fingerprints"] == mine[q], f"Q{q} fingerprints differ across JVMs"
        assert other["reused"] >= 1, f"Q{q} did not reuse the first application's cache"
        expected = result_checksum(tpch.sql(queries.statement(q, sf=0.01).sql).collect())[1]
        assert other["checksums"] == [expected, expected], f"Q{q} differs in the fresh app"


def _connections_without_nagle(spark) -> list[bool]:
    """Per JVM end of a live py4j connection: is Nagle's algorithm off?"""
    field = spark._jvm.java.lang.Class.forName("py4j.GatewayServer").getDeclaredField("connections")
    field.setAccessible(True)
    connections = field.get(spark.sparkContext._gateway.java_gateway_server)
    return [connections.get(i).getSocket().getTcpNoDelay() for i in range(connections.size())]


def test_every_thread_capturing_plans_gets_replies_without_nagle_delay(spark):
    bridge = CatalystBridge(spark)
    seen: list[list[bool]] = []

    def capture_in_a_new_thread() -> None:  # py4j opens a connection per Python thread
        bridge.capture(spark.sql("select 1 as one"))
        seen.append(_connections_without_nagle(spark))

    worker = threading.Thread(target=capture_in_a_new_thread)
    worker.start()
    worker.join()
    assert len(seen[0]) >= 2 and all(seen[0])


def test_a_repeated_plan_reuses_its_tree_but_lists_its_files_afresh(spark, tmp_path):
    from pyspark.sql import functions as F

    path = str(tmp_path / "t")
    spark.range(0, 300).withColumn("g", F.col("id") % 3).write.parquet(path)
    spark.read.parquet(path).createOrReplaceTempView("remembered_t")
    sql = "select g, count(*) c from remembered_t where id > {} group by g"
    bridge = CatalystBridge(spark)

    def capture(literal):
        return fingerprint_tree(canonicalize(bridge.capture(spark.sql(sql.format(literal))).tree))

    first = capture(10)
    assert bridge.remembered_captures == 0
    again = capture(10)
    assert bridge.remembered_captures == 1
    assert [n.fingerprint for n in again.walk()] == [n.fingerprint for n in first.walk()]
    other = capture(11)  # a changed literal is another plan: captured in full
    assert bridge.remembered_captures == 1 and other.fingerprint != first.fingerprint

    with criss.session(spark, home=str(tmp_path / "home")) as cs:
        query = spark.sql(sql.format(10))
        tree = cs.canonical_tree(cs.bridge.capture(query))
        assert cs.canonical_tree(cs.bridge.capture(query)) is tree  # computed once

        spark.range(0, 500).withColumn("g", F.col("id") % 3).write.mode("overwrite").parquet(path)
        changed = cs.canonical_tree(cs.bridge.capture(query))
        assert changed is not tree and changed.fingerprint != tree.fingerprint

    changed = capture(10)
    assert bridge.remembered_captures == 2  # the same plan, over other files
    (leaf,) = changed.leaves()
    assert leaf.relation["version"] != next(first.leaves()).relation["version"]
    assert changed.fingerprint != first.fingerprint


def _leaf_identity(bridge, query):
    (leaf,) = (n for n in bridge.capture(query).tree.walk() if n.relation is not None)
    return leaf.relation


def test_an_unchanged_table_keeps_its_listing_and_any_change_on_disk_lists_it_again(
    spark, tmp_path
):
    """Refreshing a file index costs JVM calls; local files are looked at from Python
    first, and Spark lists them again only when something under the roots changed."""
    import os

    from pyspark.sql import functions as F

    path = tmp_path / "t"
    spark.range(0, 300).withColumn("g", F.col("id") % 3).write.parquet(str(path))
    spark.read.parquet(str(path)).createOrReplaceTempView("listed_t")
    query = spark.sql("select g, count(*) c from listed_t group by g")
    bridge = CatalystBridge(spark)
    first = _leaf_identity(bridge, query)
    assert _leaf_identity(bridge, spark.sql("select * from listed_t")) is first  # not re-listed
    assert len(bridge.known_relations) == 1

    data = sorted(p for p in path.iterdir() if p.name.endswith(".parquet"))[0]
    stamp = os.stat(data)
    os.utime(data, ns=(stamp.st_atime_ns, stamp.st_mtime_ns + 2_000_000_000))  # same bytes
    touched = _leaf_identity(bridge, query)
    assert touched is not first and touched["version"] != first["version"]
    assert _leaf_identity(bridge, query) is touched

    (path / "_note").write_text("ignored by Spark, noticed here")  # listed again, same files
    noted = _leaf_identity(bridge, query)
    assert noted is not touched and noted["version"] == touched["version"]

    spark.range(0, 500).withColumn("g", F.col("id") % 5).write.mode("overwrite").parquet(str(path))
    rewritten = _leaf_identity(bridge, query)
    assert rewritten["version"] != noted["version"]
    assert sorted(r["g"] for r in query.collect()) == [0, 1, 2, 3, 4]  # Spark's index too


def test_a_large_listing_is_not_held_between_captures(spark, tmp_path, monkeypatch):
    from criss.bridge import capture

    path = str(tmp_path / "t")
    spark.range(0, 100).repartition(3).write.parquet(path)
    spark.read.parquet(path).createOrReplaceTempView("large_t")
    bridge = CatalystBridge(spark)
    monkeypatch.setattr(capture, "REMEMBERED_FILES", 2)
    first = _leaf_identity(bridge, spark.sql("select * from large_t"))
    assert len(first["files"]) == 3 and len(bridge.known_relations) == 0
    assert bridge.known_relations.large  # not looked at from Python again
    looked = []
    monkeypatch.setattr(capture, "local_snapshot", lambda roots: looked.append(roots))
    assert _leaf_identity(bridge, spark.sql("select * from large_t")) is not first
    assert not looked and len(bridge.known_relations) == 0


def test_a_snapshot_of_local_files_sees_every_change_and_gives_up_elsewhere(tmp_path):
    import os

    from criss.bridge.capture import local_snapshot

    root = tmp_path / "table"
    (root / "p=1").mkdir(parents=True)
    (root / "p=1" / "a.parquet").write_bytes(b"1234")
    roots = [f"file:{root}"]
    before = local_snapshot(roots)
    assert before is not None and local_snapshot(roots) == before
    (root / "p=1" / "a.parquet").write_bytes(b"5678")  # same size, new content
    after = local_snapshot(roots)
    assert after is not None and after != before
    os.rename(root / "p=1" / "a.parquet", root / "p=1" / "b.parquet")
    assert local_snapshot(roots) not in (before, after)
    single = root / "p=1" / "b.parquet"
    assert local_snapshot([f"file:{single}"]) is not None  # a root may be one file
    assert local_snapshot([f"file:{tmp_path / 'missing'}"]) is None
    assert local_snapshot(["hdfs://namenode:8020/table"]) is None
    assert local_snapshot([str(root)]) is None  # not a qualified file: URI
    (root / "link").symlink_to(tmp_path)
    assert local_snapshot(roots) is None
