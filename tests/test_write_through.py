"""Write-through: what Criss chooses to cache is written by the tasks of the user's own
action, with no job of Criss's own; a ``show()`` leaves the partitions it finished, and
the next query completes the rest."""

from __future__ import annotations

import gc

import pytest
from firstsight import (
    GROUPED,
    assert_files_changed_before_the_action_are_never_served,
    assert_show_leaves_a_partial_bitmap_the_next_query_completes,
    result_key,
)
from rowcompare import assert_same_rows
from sparkjobs import jobs_in

import criss

#: Also run on the loopback standalone cluster (tests/conftest.py).
pytestmark = pytest.mark.cluster


def test_a_first_seen_result_is_cached_by_the_users_action_alone(tpch, tmp_path):
    cs = criss.session(tpch, home=str(tmp_path / "h"), write_through=True)
    try:
        key = result_key(cs, tpch, GROUPED)
        got = {}
        assert jobs_in(tpch, "wt-plan", lambda: got.update(df=cs.sql(GROUPED))) == 0
        assert "by its action (write-through)" in cs.explain(got["df"])
        assert cs.cache.lookup(key) is None  # nothing is written before the action runs

        plain_jobs = jobs_in(
            tpch, "wt-plain", lambda: got.update(plain=tpch.sql(GROUPED).collect())
        )
        jobs = jobs_in(tpch, "wt-action", lambda: got.update(rows=got["df"].collect()))
        assert jobs == plain_jobs  # the user's action, and nothing besides
        assert_same_rows(got["rows"], got["plain"])

        report = cs.report()  # Spark reported the action: its partitions are committed
        entry = cs.cache.lookup(key)
        assert entry is not None and entry.complete
        assert report["counters"]["partitions_written_through"] == entry.num_partitions
        assert report["counters"]["operators_cached"] == 1
        assert cs.qtree.get(key).texec > 0 and cs.qtree.get(key).rows == len(got["rows"])

        again = cs.sql(GROUPED)
        assert cs.last_query_summary()["operators_reused"] == 1
        assert_same_rows(again.collect(), got["plain"])

        staging = cs.cache.staging_dir(key).parent
        assert list(staging.glob(f"stage.{key}.*"))  # kept while the DataFrame may run again
        got.clear()
        gc.collect()
        cs.report()
        assert not list(staging.glob(f"stage.{key}.*"))
    finally:
        cs.close()


def test_show_leaves_a_partial_bitmap_that_the_next_query_completes(tpch, tmp_path, no_coalescing):
    cs = criss.session(tpch, home=str(tmp_path / "h"), write_through=True)
    try:
        assert_show_leaves_a_partial_bitmap_the_next_query_completes(cs, tpch)
    finally:
        cs.close()


def test_partitions_renumbered_above_the_step_are_never_cached(tpch, tmp_path):
    cs = criss.session(tpch, home=str(tmp_path / "h"), write_through=True)
    try:
        key = result_key(cs, tpch, GROUPED)
        df = cs.sql(GROUPED)
        # a union's tasks number partitions past the step's own: what they wrote is dropped,
        # and the step is not trusted again
        plain = tpch.sql(GROUPED)
        assert_same_rows(df.union(df).collect(), plain.union(plain).collect())
        cs.report()
        assert cs.cache.lookup(key) is None
        assert_same_rows(df.collect(), plain.collect())
        cs.report()
        assert cs.cache.lookup(key) is None

        again = cs.sql(GROUPED)  # a new plan, a new step: its action caches the result
        assert_same_rows(again.collect(), plain.collect())
        cs.report()
        assert cs.cache.lookup(key).complete
    finally:
        cs.close()


def test_a_type_arrow_may_change_is_written_by_a_job(tpch, tmp_path):
    sql = "select cast(o_orderdate as timestamp) as t, count(*) as n from orders group by 1"
    cs = criss.session(tpch, home=str(tmp_path / "h"), write_through=True)
    try:
        df = cs.sql(sql)
        assert cs.last_query_summary()["operators_cached"] == 1
        assert "may not survive Arrow" in cs.explain(df)
        assert_same_rows(df.collect(), tpch.sql(sql).collect())
    finally:
        cs.close()


def test_input_files_changed_before_the_action_are_never_served(tpch, tmp_path):
    cs = criss.session(tpch, home=str(tmp_path / "h"), write_through=True)
    try:
        assert_files_changed_before_the_action_are_never_served(
            cs,
            tpch,
            tmp_path,
            explain_says="by its action (write-through)",
            counter="operators_written_through",
        )
    finally:
        cs.close()
