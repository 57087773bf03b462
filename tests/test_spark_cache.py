"""Caching in the user's action (the default): a first-seen result is computed by the user's
own action, every stage of it, into Spark's cache, and Criss writes the partitions it holds
afterwards. A ``show()`` leaves the partitions it computed; the next query completes the rest."""

from __future__ import annotations

import gc

import pytest
from firstsight import (
    GROUPED,
    PER_CUSTOMER,
    assert_files_changed_before_the_action_are_never_served,
    assert_show_leaves_a_partial_bitmap_the_next_query_completes,
    result_key,
)
from rowcompare import assert_same_rows
from sparkjobs import jobs_in

import criss
from criss.bridge import jvm_objects_held_by_python
from criss.bridge.spark_cache import CachedResult


def _persisted_rdds(spark) -> int:
    return int(spark.sparkContext._jsc.getPersistentRDDs().size())


@pytest.fixture
def persisted(tpch):
    """How many more RDDs Spark's cache holds than when the test began (earlier tests may
    leave sessions that still hold some)."""
    before = _persisted_rdds(tpch)
    return lambda: _persisted_rdds(tpch) - before


def test_a_first_seen_result_is_computed_by_the_users_action_and_cached_after_it(
    tpch, tmp_path, persisted
):
    cs = criss.session(tpch, home=str(tmp_path / "h"))
    try:
        key = result_key(cs, tpch, GROUPED)
        got = {}
        planning = jobs_in(tpch, "sc-plan", lambda: got.update(df=cs.sql(GROUPED)))
        assert "by its action (Spark's cache)" in cs.explain(got["df"])
        assert cs.cache.lookup(key) is None  # nothing is written before the action runs

        plain = jobs_in(tpch, "sc-plain", lambda: got.update(plain=tpch.sql(GROUPED).collect()))
        action = jobs_in(tpch, "sc-action", lambda: got.update(rows=got["df"].collect()))
        # nothing ran in cs.sql, and the action ran the jobs plain Spark runs (the cached
        # blocks are read back afterwards, apart)
        assert (planning, action) == (0, plain), (planning, action, plain)
        assert_same_rows(got["rows"], got["plain"])

        report = cs.report()  # Spark reported the action: its partitions are committed
        entry = cs.cache.lookup(key)
        assert entry is not None and entry.complete
        assert report["counters"]["partitions_cached_in_action"] == entry.num_partitions
        assert report["counters"]["operators_cached"] == 1
        assert cs.qtree.get(key).texec > 0 and cs.qtree.get(key).rows == len(got["rows"])
        assert persisted() <= 0  # written: Spark's copy is freed

        again = cs.sql(GROUPED)
        assert cs.last_query_summary()["operators_reused"] == 1
        assert_same_rows(again.collect(), got["plain"])
        assert_same_rows(got["df"].collect(), got["plain"])  # the first DataFrame still runs
    finally:
        cs.close()


def test_an_ordered_first_seen_result_is_cached_by_plain_sparks_own_plan(tpch, tmp_path):
    """Under a final ORDER BY, the whole statement fills the cache: the action runs plain
    Spark's plan and jobs, with nothing of the user's above the cached rows, and the rows
    come back in order; the result under the sort is what is cached."""
    ordered = GROUPED + " order by o_orderpriority desc"
    cs = criss.session(tpch, home=str(tmp_path / "h"))
    try:
        key = result_key(cs, tpch, GROUPED)
        got = {}
        planning = jobs_in(tpch, "so-plan", lambda: got.update(df=cs.sql(ordered)))
        plain = jobs_in(tpch, "so-plain", lambda: got.update(plain=tpch.sql(ordered).collect()))
        action = jobs_in(tpch, "so-action", lambda: got.update(rows=got["df"].collect()))
        assert (planning, action) == (0, plain), (planning, action, plain)
        assert [tuple(r) for r in got["rows"]] == [tuple(r) for r in got["plain"]]
        executed = got["df"]._jdf.queryExecution().executedPlan()
        assert executed.getClass().getSimpleName() == "InMemoryTableScanExec", executed

        cs.report()
        assert cs.cache.lookup(key).complete
        again = cs.sql(GROUPED)
        assert cs.last_query_summary()["operators_reused"] == 1
        assert_same_rows(again.collect(), tpch.sql(GROUPED).collect())
    finally:
        cs.close()


def test_the_cache_relation_stands_in_for_its_operator_with_the_operators_own_columns(
    tpch, tmp_path
):
    """The relation of Spark's cache is built over the operator's own plan and outputs its
    attributes: the plan handed out reads it in the operator's place, with no Project of
    aliases restoring names and exprIds (one JVM call instead of several per column). An
    operator with other attributes (the same statement analysed again) gets them restored."""
    cs = criss.session(tpch, home=str(tmp_path / "h"))
    try:
        df = cs.sql(GROUPED)
        assert "by its action (Spark's cache)" in cs.explain(df)
        handed_out = df._jdf.queryExecution().logical()
        assert handed_out.getClass().getSimpleName() == "InMemoryRelation", handed_out
        plain = tpch.sql(GROUPED)
        assert df.columns == plain.columns
        assert_same_rows(df.collect(), plain.collect())

        cached = CachedResult(cs.bridge, tpch.sql(GROUPED), "criss-test-other-attributes")
        try:
            other = tpch.sql(GROUPED)._jdf.queryExecution().optimizedPlan()
            renamed = cached.plan_for(other)
            assert renamed.getClass().getSimpleName() == "Project"
            assert [str(a) for a in _attributes(renamed)] == [str(a) for a in _attributes(other)]
            assert_same_rows(cs.bridge.dataframe_of(renamed).collect(), plain.collect())
        finally:
            cached.unpersist()
    finally:
        cs.close()


def _attributes(plan):
    output = plan.output()
    return [output.apply(i) for i in range(output.size())]


def test_show_leaves_a_partial_bitmap_that_the_next_query_completes(tpch, tmp_path, no_coalescing):
    cs = criss.session(tpch, home=str(tmp_path / "h"))
    try:
        assert_show_leaves_a_partial_bitmap_the_next_query_completes(cs, tpch)
    finally:
        cs.close()


def test_a_later_action_on_the_same_dataframe_adds_the_partitions_it_computed(
    tpch, tmp_path, no_coalescing, persisted
):
    cs = criss.session(tpch, home=str(tmp_path / "h"))
    try:
        key = result_key(cs, tpch, PER_CUSTOMER)
        df = cs.sql(PER_CUSTOMER)
        df.show(5)
        cs.report()
        assert list(cs.cache.lookup(key).bitmap) == [0]
        assert_same_rows(df.collect(), tpch.sql(PER_CUSTOMER).collect())
        cs.report()
        assert cs.cache.lookup(key).complete
        assert cs.report()["counters"]["partitions_cached_in_action"] == 4
        assert persisted() <= 0
    finally:
        cs.close()


def test_a_dataframe_never_acted_on_caches_nothing_and_frees_sparks_cache(
    tpch, tmp_path, persisted
):
    cs = criss.session(tpch, home=str(tmp_path / "h"))
    try:
        key = result_key(cs, tpch, GROUPED)
        df = cs.sql(GROUPED)
        assert persisted() == 0  # Spark's cache holds nothing before an action
        del df
        gc.collect()
        cs.report()
        assert cs.cache.lookup(key) is None
        assert persisted() <= 0
        assert not list(cs.cache.staging_dir(key).parent.glob(f"stage.{key}.*"))
    finally:
        cs.close()


def test_a_failed_write_from_the_cache_costs_only_the_caching(
    tpch, tmp_path, monkeypatch, persisted
):
    def broken(self, staged, indices):
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(CachedResult, "write", broken)
    cs = criss.session(tpch, home=str(tmp_path / "h"))
    try:
        key = result_key(cs, tpch, GROUPED)
        rows = cs.sql(GROUPED).collect()
        assert_same_rows(rows, tpch.sql(GROUPED).collect())
        report = cs.report()
        assert cs.cache.lookup(key) is None
        assert report["counters"]["fallbacks"] == 0
        assert_same_rows(cs.sql(GROUPED).collect(), rows)  # planned again, still right
    finally:
        cs.close()
    assert persisted() <= 0


def test_input_files_changed_before_the_action_are_never_served(tpch, tmp_path):
    cs = criss.session(tpch, home=str(tmp_path / "h"))
    try:
        assert_files_changed_before_the_action_are_never_served(
            cs,
            tpch,
            tmp_path,
            explain_says="by its action (Spark's cache)",
            counter="operators_cached",
        )
    finally:
        cs.close()


@pytest.mark.parametrize("option", ["cache_in_action", "listener"])
def test_without_caching_in_the_action_a_job_writes_and_explain_says_why(
    tpch, tmp_path, option, monkeypatch
):
    options = {"cache_in_action": False} if option == "cache_in_action" else {}
    if option == "listener":
        monkeypatch.setattr(criss.engine.CrissSession, "_listen", lambda self: None)
    cs = criss.session(tpch, home=str(tmp_path / "h"), **options)
    try:
        df = cs.sql(GROUPED)
        assert cs.last_query_summary()["operators_cached"] == 1  # by the job, in cs.sql
        reason = "caching in the action is off" if option == "cache_in_action" else "listener"
        assert reason in cs.explain(df)
        assert_same_rows(df.collect(), tpch.sql(GROUPED).collect())
    finally:
        cs.close()


def test_a_planning_failure_after_the_cache_was_prepared_frees_it(
    tpch, tmp_path, monkeypatch, persisted
):
    import criss.planner as planner

    def broken(*args, **kwargs):
        raise RuntimeError("records on fire")

    monkeypatch.setattr(planner, "operator_records", broken)
    cs = criss.session(tpch, home=str(tmp_path / "h"))
    try:
        with pytest.warns(RuntimeWarning, match="records on fire"):
            df = cs.sql(GROUPED)
        assert cs.last_query_summary()["fallback"]
        assert persisted() <= 0  # prepared, then handed out to no one
        assert_same_rows(df.collect(), tpch.sql(GROUPED).collect())
    finally:
        cs.close()


def _relations_of_sparks_cache_held() -> int:
    """How many JVM relations of Spark's columnar cache Python objects hold."""
    return jvm_objects_held_by_python()["InMemoryRelation"]


def test_no_relation_of_sparks_cache_is_kept_once_its_result_is_written(tpch, tmp_path):
    """A relation of Spark's cache holds the physical plan that filled it, with its broadcast
    relations and shuffles: once the result is written, Criss keeps none (the plans it read
    statistics from once stayed in memory: 467 MB of the driver's heap after 22 TPC-H
    first sights at SF 1)."""
    from criss.workload.tpch.queries import statement

    before = _relations_of_sparks_cache_held()
    cs = criss.session(tpch, home=str(tmp_path / "h"))
    try:
        for qid in (1, 3, 10, 18):
            sql = statement(qid, seed=7, sf=0.01).sql
            assert_same_rows(cs.sql(sql).collect(), tpch.sql(sql).collect())
            cs.settle_harvests()
        report = cs.report()
        assert report["counters"]["operators_cached_in_action"] >= 4
        assert report["executions_read"] >= 4  # their executed plans were read back
        assert _relations_of_sparks_cache_held() <= before
    finally:
        cs.close()


def test_an_action_over_a_result_in_sparks_cache_teaches_no_seconds_per_stage(tpch, tmp_path):
    """The action that computes a first-seen result into Spark's cache runs a plan that
    only reads the cache: the stages that filled it and their task time are not in its
    metrics. Learning from it made the whole action Spark's fixed cost of one stage (1-3 s
    at SF 1 against 0.03-0.15 s measured), and every estimate built on that rate (an
    unmeasured Texec, a roll-up's read, the largest entry read on the driver) with it. A
    run of the same statement that Criss does not cache teaches it."""
    cached = criss.session(tpch, home=str(tmp_path / "cached"))
    try:
        df = cached.sql(GROUPED)
        assert "by its action (Spark's cache)" in cached.explain(df)
        df.collect()
        cached.report()  # the action's executed plan was read
        assert cached.learning.executions_read >= 1
        assert cached.qtree.meta("stage_seconds") is None
    finally:
        cached.close()
    plain = criss.session(tpch, home=str(tmp_path / "plain"), eager_results=False)
    try:
        df = plain.sql(GROUPED)
        assert "by its action" not in plain.explain(df)
        df.collect()
        plain.report()
        assert plain.qtree.meta("stage_seconds") is not None
    finally:
        plain.close()
