"""Ageing: operators neither used nor cached for ``forget_after`` are forgotten with what
names them; cached results and everything under them stay; a forgotten operator that
comes back is a new one, and every row stays equal to plain Spark's."""

from __future__ import annotations

import hashlib
import time
from contextlib import closing

import pytest

import criss
from criss.ageing import forget_unused
from criss.config import CrissOptions, parse_seconds
from criss.errors import ConfigError
from criss.qtree.plan import PlanNode
from criss.qtree.tree import QTree
from tests.rowcompare import assert_same_rows


def node(op: str, *children: PlanNode) -> PlanNode:
    fingerprint = hashlib.sha256(
        (op + "".join(c.fingerprint for c in children)).encode()
    ).hexdigest()[:32]
    return PlanNode(op, {}, children, fingerprint=fingerprint, extra={"label": op})


def fingerprints(root: PlanNode) -> set[str]:
    return {n.fingerprint for n in root.walk()}


@pytest.fixture
def two_queries(tmp_path):
    """A QTree that saw an old query (t=1000) and a recent one (t=5000) sharing a scan,
    with meta entries naming operators of each and one naming none."""
    shared = node("Relation")
    old_filter = node("Filter", shared)
    old = node("Aggregate", old_filter)
    recent = node("Sort", node("Aggregate", shared))
    qtree = QTree(tmp_path / "catalog.db")
    qtree.observe(old, now=1000.0)
    qtree.observe(recent, now=5000.0)
    qtree.set_meta(f"joins.keys:{old_filter.fingerprint}", {"rows": 3, "ndv": {}})
    qtree.set_meta(f"range_join:stats:{old.fingerprint}:0123abcd", {"rows": 1})
    qtree.set_meta(f"joins.keys:{shared.fingerprint}", {"rows": 9, "ndv": {}})
    qtree.set_meta("codec_rate", 5e7)
    with closing(qtree):
        yield qtree, old, recent, shared


def test_operators_unused_since_the_cutoff_go_with_their_edges_and_meta(two_queries):
    qtree, old, recent, shared = two_queries
    gone = qtree.forget(before=3000.0)
    assert gone == fingerprints(old) - {shared.fingerprint}
    assert {n.stats.fingerprint for n in qtree.nodes()} == fingerprints(recent)
    assert all(e["parent"] not in gone and e["child"] not in gone for e in qtree.edges()), (
        "an edge of a forgotten operator stayed"
    )
    meta = qtree.meta_items()
    assert not [key for key in meta if any(fp in key for fp in gone)]
    assert meta["codec_rate"] == 5e7
    assert meta[f"joins.keys:{shared.fingerprint}"]["rows"] == 9
    # nothing else is old now: a second round forgets nothing
    assert qtree.forget(before=3000.0) == set()


def test_meta_naming_a_subsumption_key_goes_with_its_last_operator(two_queries):
    """A lift refusal names an aggregate by its subsumption key, not a fingerprint: it is
    forgotten when no operator has that key any more, and kept while one does."""
    qtree, old, recent, _ = two_queries
    recent_aggregate = recent.children[0]
    keys = {old.fingerprint: "aggregate:gone", recent_aggregate.fingerprint: "aggregate:kept"}
    for fingerprint, key in keys.items():
        qtree.db.execute(
            "update nodes set subsume_key = ? where fingerprint = ?", [key, fingerprint]
        )
    qtree.set_meta("lift.refused:aggregate:gone:0123456789abcdef", "too large")
    qtree.set_meta("lift.refused:aggregate:kept:0123456789abcdef", "too large")
    qtree.forget(before=3000.0)
    meta = qtree.meta_items()
    assert "lift.refused:aggregate:gone:0123456789abcdef" not in meta
    assert meta["lift.refused:aggregate:kept:0123456789abcdef"] == "too large"


def test_a_kept_operator_keeps_everything_under_it(two_queries):
    qtree, old, recent, shared = two_queries
    assert qtree.forget(before=3000.0, keep={old.fingerprint}) == set()
    old_filter = old.children[0]
    gone = qtree.forget(before=3000.0, keep={old_filter.fingerprint})
    assert gone == {old.fingerprint}
    assert qtree.children(old_filter.fingerprint) == [shared.fingerprint]
    assert qtree.parents(old_filter.fingerprint) == []


def test_a_forgotten_operator_comes_back_as_a_new_one(two_queries):
    qtree, old, _, shared = two_queries
    qtree.forget(before=3000.0)
    seen = qtree.observe(old, now=6000.0)
    assert not seen[old.fingerprint].matched and seen[old.fingerprint].stats.ref == 1
    assert seen[shared.fingerprint].matched and seen[shared.fingerprint].stats.ref == 3
    assert qtree.children(old.fingerprint) == [old.children[0].fingerprint]


def test_forget_after_parses_durations_and_names_a_bad_value():
    assert parse_seconds("30d") == 30 * 86400
    assert parse_seconds("12h") == 12 * 3600
    assert parse_seconds("90m") == 5400
    assert parse_seconds(45) == 45.0
    assert CrissOptions.resolve(None, forget_after="0").forget_after == 0.0
    assert CrissOptions.resolve({"spark.criss.forget.after": "2h"}).forget_after == 7200.0
    with pytest.raises(ConfigError, match="forget_after='a week'.*30d"):
        CrissOptions.resolve(None, forget_after="a week")
    with pytest.raises(ConfigError, match="negative"):
        CrissOptions.resolve(None, forget_after=-1)


KEPT = (
    "select l_returnflag, count(*) n, sum(l_quantity) q from lineitem "
    "where l_shipdate < date '1995-06-01' group by l_returnflag"
)
EVICTED = (
    "select o_orderstatus, sum(o_totalprice) s from orders "
    "where o_orderdate >= date '1996-01-01' group by o_orderstatus"
)


@pytest.mark.spark
def test_a_new_session_forgets_what_is_neither_used_nor_cached(tpch, tmp_path):
    """An application caches two results; one is evicted (its entry keeps no partition).
    After ``forget_after`` the next application forgets the evicted result's operators
    and entry at start, keeps the cached one's, and both queries still return plain
    Spark's rows: the kept one served from the cache, the forgotten one computed anew."""
    home = tmp_path / "home"
    with criss.session(tpch, home=str(home), forget_after=0) as cs:
        cs.sql(KEPT).collect()
        cs.settle_harvests()
        kept = {e.key for e in cs.cache.catalog.entries()}
        cs.sql(EVICTED).collect()
        cs.settle_harvests()
        evicted = {e.key for e in cs.cache.catalog.entries()} - kept
        assert kept and evicted, "each result was cached"
        for key in evicted:  # what eviction does: partitions and files go, the entry stays
            for index in list(cs.cache.catalog.entry(key).bitmap):
                record = cs.cache.catalog.drop_partition(key, index)
                if not record.empty:
                    cs.cache.tiers[record.tier].delete(record.name)
        seen = len(cs.qtree)
    time.sleep(1.2)
    with criss.session(tpch, home=str(home), forget_after=1) as cs:
        assert cs.counters["entries_forgotten"] == len(evicted)
        assert 0 < cs.counters["operators_forgotten"] < seen
        assert len(cs.qtree) == seen - cs.counters["operators_forgotten"]
        (opening,) = cs.forget_rounds  # the round at start, with how long it held the locks
        assert opening.operators == cs.counters["operators_forgotten"]
        assert opening.seconds >= opening.catalog_seconds > 0
        assert all(cs.qtree.get(key) is not None for key in kept)
        assert all(cs.qtree.get(key) is None for key in evicted)
        assert {e.key for e in cs.cache.catalog.entries()} == kept
        assert_same_rows(cs.sql(KEPT).collect(), tpch.sql(KEPT).collect())
        assert cs.last_query_summary().get("operators_reused", 0) >= 1
        assert_same_rows(cs.sql(EVICTED).collect(), tpch.sql(EVICTED).collect())
        assert cs.last_query_summary().get("operators_reused", 0) == 0


@pytest.mark.spark
def test_a_result_still_to_be_written_is_not_forgotten(tpch, tmp_path):
    """Two hours on, a result handed out but not yet computed by its action stays, with
    every operator under it, though none was used since."""
    with criss.session(tpch, home=str(tmp_path / "home"), forget_after=0) as cs:
        df = cs.sql(KEPT)  # handed out: its result is pending until its action runs
        pending = cs._pending_keys()
        later = time.time() + 7200
        assert pending and cs.qtree._forgettable(later - 3600, keep=())
        forgotten = forget_unused(cs.qtree, cs.cache, 3600, pending=pending, now=later)
        assert forgotten.operators == 0 and forgotten.entries == 0
        assert_same_rows(df.collect(), tpch.sql(KEPT).collect())


@pytest.mark.spark
def test_the_pin_map_holds_only_what_is_pinned(tpch, tmp_path):
    """A long-lived application's pin map does not keep every key it ever read."""
    with criss.session(tpch, home=str(tmp_path / "home")) as cs:
        cache = cs.cache
        keys = [f"k{i}" for i in range(3000)]
        cache.pin(keys[:1])
        for key in keys[1:]:  # one query's lease after another: pinned, then released
            cache.pin([key])
            cache.unpin([key])
        assert cache.pinned() >= {keys[0]} and len(cache._pins) == 1
        cache.unpin(keys[:1])
        assert keys[0] not in cache.pinned() and not cache._pins


@pytest.mark.spark
def test_the_memory_of_verified_files_starts_over_at_its_limit(
    tpch, tmp_path, monkeypatch, no_coalescing
):
    import criss.storage.cache as cache_module

    monkeypatch.setattr(cache_module, "VERIFIED_LIMIT", 1)
    sql = "select l_orderkey, sum(l_quantity) q from lineitem group by l_orderkey"
    with criss.session(tpch, home=str(tmp_path / "home")) as cs:
        for _ in range(3):
            assert_same_rows(cs.sql(sql).collect(), tpch.sql(sql).collect())
        assert cs.last_query_summary().get("operators_reused", 0) >= 1
        files = [
            p for e in cs.cache.catalog.entries() for p in e.partitions.values() if not p.empty
        ]
        assert len(files) >= 2, "the result spans several partition files"
        assert len(cs.cache._verified) == 1
