"""``criss ls``, ``stats``, ``clear`` and ``explain`` over a home a real replay filled.

Numbers are checked against the catalogs read directly with SQLite and against the
replay's own per-query counters. Commands that change a home work on a copy of it.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from contextlib import closing
from pathlib import Path

import pytest
from click.testing import CliRunner
from pyroaring import BitMap

from criss.cli import main
from criss.space import HOME_MARKER, memory_dir
from criss.sparksession import LOCAL_DEFAULTS
from criss.workload.streams import make_stream

pytestmark = pytest.mark.spark


def rows(db: Path, sql: str) -> list[tuple]:
    with closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True)) as conn:
        return conn.execute(sql).fetchall()


def invoke(*args: str, **kwargs):
    return CliRunner().invoke(main, [str(a) for a in args], **kwargs)


@pytest.fixture
def home_copy(replayed_home, tmp_path):
    """A copy of the replayed home, with its own memory tier (a copy of the original's).

    No application uses the copy: the pins the replay's session left (its process, this
    one, is alive) are removed.
    """
    src, dst = replayed_home.home, tmp_path / "home"
    shutil.copytree(src, dst)
    with closing(sqlite3.connect(dst / "cache.db")) as conn, conn:
        conn.execute("delete from pins")
    src_memory, dst_memory = memory_dir(src), memory_dir(dst)
    shutil.copytree(src_memory, dst_memory)
    (dst_memory / HOME_MARKER).write_text(str(dst.resolve()))
    yield dst
    shutil.rmtree(dst_memory, ignore_errors=True)


def partitions_by_tier(home: Path) -> dict[str, set[tuple[str, int]]]:
    out: dict[str, set[tuple[str, int]]] = {}
    for key, idx, tier in rows(home / "cache.db", "select key, idx, tier from partitions"):
        out.setdefault(tier, set()).add((key, idx))
    return out


def test_ls_json_agrees_with_the_catalog(replayed_home):
    result = invoke("ls", "--home", replayed_home.home, "--json")
    assert result.exit_code == 0, result.output
    listed = json.loads(result.output)
    catalog = {
        key: (n, BitMap.deserialize(bitmap))
        for key, n, bitmap in rows(
            replayed_home.home / "cache.db", "select key, num_partitions, bitmap from entries"
        )
    }
    sizes = dict(
        rows(replayed_home.home / "cache.db", "select key, sum(bytes) from partitions group by key")
    )
    assert catalog, "the replay cached nothing"
    assert {e["key"] for e in listed} == set(catalog)
    for entry in listed:
        num_partitions, bitmap = catalog[entry["key"]]
        assert entry["num_partitions"] == num_partitions == len(entry["strip"])
        assert entry["reusable"] == len(bitmap)
        assert entry["bytes"] == (sizes.get(entry["key"]) or 0)
    benefits = [e["benefit"] for e in listed]
    assert benefits == sorted(benefits, reverse=True)

    table = invoke("ls", "--home", replayed_home.home)
    assert table.exit_code == 0, table.output
    assert listed[0]["key"][:12] in table.output and "M memory" in table.output


def test_stats_json_agrees_with_the_catalog_and_the_replay(replayed_home):
    result = invoke("stats", "--home", replayed_home.home, "--json")
    assert result.exit_code == 0, result.output
    stats = json.loads(result.output)
    cache, catalog = replayed_home.home / "cache.db", replayed_home.home / "catalog.db"
    assert stats["entries"] == rows(cache, "select count(*) from entries")[0][0]
    bitmaps = rows(cache, "select bitmap from entries")
    assert stats["reusable_partitions"] == sum(len(BitMap.deserialize(b)) for (b,) in bitmaps)
    used = dict(
        rows(cache, "select tier, sum(bytes) from partitions where tier != '' group by tier")
    )
    assert {t["name"]: t["used_bytes"] for t in stats["tiers"] if t["used_bytes"]} == used
    assert stats["qtree"]["operators"] == rows(catalog, "select count(*) from nodes")[0][0]
    assert stats["queries"]["seen"] == rows(catalog, "select count(*) from queries")[0][0] > 0

    replayed = [q["criss"] for q in replayed_home.result["modes"]["criss"]["queries"]]
    counters = stats["queries"]["counters"]
    for name in ("operators_reused", "operators_cached", "partitions_reused"):
        assert counters[name] == sum(q.get(name, 0) for q in replayed), name
    assert counters["operators_reused"] >= 1, "the replay reused nothing"
    assert stats["time"]["texec_saved_seconds"] > 0
    storing = sum(q["materialize_seconds"] for q in replayed)
    assert stats["time"]["storing_seconds"] == pytest.approx(storing, abs=0.01)

    table = invoke("stats", "--home", replayed_home.home)
    assert table.exit_code == 0, table.output
    assert "partition hit ratio" in table.output and "memory" in table.output


def test_stats_read_the_logged_decisions_not_the_explain_text(replayed_home, home_copy):
    """Time saved counts every reuse the queries' stored decisions name; the explain text
    is for people: blanking it changes no number."""
    before = json.loads(invoke("stats", "--home", home_copy, "--json").output)["time"]
    reuses = before["reuses_counted"] + before["reuses_without_texec"]
    counters = json.loads(invoke("stats", "--home", home_copy, "--json").output)["queries"]
    assert reuses == counters["counters"]["operators_reused"] >= 1
    with closing(sqlite3.connect(home_copy / "catalog.db")) as conn, conn:
        conn.execute("update queries set explain = ''")
    after = json.loads(invoke("stats", "--home", home_copy, "--json").output)["time"]
    assert after == before


def test_clear_one_tier_keeps_the_others_then_clear_everything(home_copy):
    before = partitions_by_tier(home_copy)
    nodes = rows(home_copy / "catalog.db", "select count(*) from nodes")[0][0]
    assert before.get("memory"), "the replay put nothing in memory"
    assert before.get("disk"), "the replay put nothing on disk"

    result = invoke("clear", "--home", home_copy, "--tier", "memory", "--yes")
    assert result.exit_code == 0, result.output
    after = partitions_by_tier(home_copy)
    assert "memory" not in after
    assert after["disk"] == before["disk"]
    assert rows(home_copy / "catalog.db", "select count(*) from nodes")[0][0] == nodes
    assert not list(memory_dir(home_copy).rglob("*.parquet"))
    assert list((home_copy / "disk").rglob("*.parquet"))

    result = invoke("clear", "--home", home_copy, "--yes")
    assert result.exit_code == 0, result.output
    assert rows(home_copy / "cache.db", "select count(*) from entries")[0][0] == 0
    assert rows(home_copy / "catalog.db", "select count(*) from nodes")[0][0] == 0
    assert not list((home_copy / "disk").rglob("*.parquet"))


def test_clear_asks_first(home_copy):
    before = partitions_by_tier(home_copy)
    result = invoke("clear", "--home", home_copy, input="n\n")
    assert result.exit_code == 1 and "Aborted" in result.output
    assert partitions_by_tier(home_copy) == before


def test_missing_home_and_unknown_tier_are_clean_errors(tmp_path, home_copy):
    for args in (["ls"], ["stats", "--json"], ["clear", "--yes"]):
        result = invoke(*args, "--home", tmp_path / "nowhere")
        assert result.exit_code == 1, result.output
        assert "no Criss home" in result.output and "Traceback" not in result.output
    result = invoke("clear", "--home", home_copy, "--tier", "alluxio", "--yes")
    assert result.exit_code == 1 and "needs --alluxio-url" in result.output


@pytest.fixture
def spark_conf_restored(tpch):
    """``criss explain`` gets the test session through getOrCreate, which applies the CLI's
    Spark defaults to it: put the test settings back afterwards."""
    keys = [k for k in LOCAL_DEFAULTS if k.startswith("spark.sql.")]
    saved = {k: tpch.conf.get(k, None) for k in keys}
    yield tpch
    for key, value in saved.items():
        if value is None:
            tpch.conf.unset(key)
        else:
            tpch.conf.set(key, value)


def test_explain_plans_without_caching_anything_new(
    home_copy, replayed_home, tpch_dir, spark_conf_restored
):
    config = replayed_home.config
    stream = make_stream(config.stream, config.queries, config.seed, config.sf)
    state = {
        "entries": (home_copy / "cache.db", "select key, bitmap from entries order by key"),
        "refs": (home_copy / "catalog.db", "select fingerprint, ref from nodes order by 1"),
        "log": (home_copy / "catalog.db", "select count(*) from queries"),
    }
    before = {name: rows(db, query) for name, (db, query) in state.items()}
    sql = stream[0].sql
    result = invoke(
        "explain", sql, "--home", home_copy, "--tpch-sf", "0.01", "--data-dir", tpch_dir
    )
    assert result.exit_code == 0, result.output
    assert result.output.startswith("Criss plan (") and "dry run" in result.output
    assert "WOULD REUSE entry" in result.output  # the replay cached this query's result
    assert {name: rows(db, query) for name, (db, query) in state.items()} == before

    bad = invoke("explain", "select * from no_such_table", "--home", home_copy)
    assert bad.exit_code == 1
    assert "Register its tables with --tpch-sf" in bad.output


def test_benefit_is_computed_per_tier_with_its_effective_bandwidth():
    from criss.inspect import _bandwidths, entry_benefit
    from criss.policies import get_policy

    meta = {"bandwidth:disk:/h/disk": 2e8, "bandwidth:memory:/dev/shm/x": 1e9, "codec_rate": 1e9}
    bandwidths = _bandwidths(meta, Path("/h"))
    assert bandwidths["memory"] == pytest.approx(5e8)
    assert bandwidths["disk"] == pytest.approx(1 / (1 / 2e8 + 1 / 1e9))
    on_disk = entry_benefit(
        ref=3, recency=10.0, texec=2.0, tier_bytes={"disk": 10**8}, bandwidths=bandwidths
    )
    assert on_disk == pytest.approx(
        get_policy("criss").benefit(
            ref=3, texec=2.0, size_bytes=1e8, bandwidth=bandwidths["disk"], recency=10.0
        )
    )
    half_in_memory = entry_benefit(
        ref=3,
        recency=10.0,
        texec=2.0,
        tier_bytes={"disk": 5 * 10**7, "memory": 5 * 10**7},
        bandwidths=bandwidths,
    )
    assert half_in_memory > on_disk  # the half in memory loads faster
