"""The reuse engine on real Spark: results equal plain Spark's, and reuse really happens."""

from __future__ import annotations

import warnings

import pyarrow.parquet as pq
import pytest
from rowcompare import assert_same_rows
from sparkjobs import jobs_in

import criss
from criss.storage.tiers import local_file
from criss.workload.tpch import queries

pytestmark = pytest.mark.spark


@pytest.fixture
def cs(tpch, tmp_path):
    session = criss.session(tpch, home=str(tmp_path / "home"))
    yield session
    session.close()


@pytest.mark.cluster
@pytest.mark.parametrize("qid", queries.QUERY_IDS)
def test_tpch_query_through_criss_equals_plain_spark(tpch, cs, qid):
    sql = queries.statement(qid, sf=0.01).sql
    expected = tpch_plain(tpch, sql)

    first = cs.sql(sql)
    assert_same_rows(first.collect(), expected)
    summary = cs.last_query_summary()
    assert summary.get("fallback") is None, cs.explain(first)
    assert summary.get("operators_cached", 0) >= 1, cs.explain(first)
    assert summary["operators_seen"] > summary.get("operators_matched", 0)  # new: inserted

    for _ in range(2):  # second and third occurrence are served from the cache
        again = cs.sql(sql)
        assert_same_rows(again.collect(), expected)
        summary = cs.last_query_summary()
        assert summary.get("operators_reused", 0) >= 1, cs.explain(again)
        # everything outside the reused subtrees had been seen before, but operators the
        # QTree never holds (above the final ORDER BY)
        assert summary["operators_matched"] >= 1
        assert " new; " not in cs.explain(again)


def tpch_plain(spark, sql):
    return spark.sql(sql).collect()


@pytest.mark.parametrize("qid", [10, 18])
def test_overlapping_variants_reuse_shared_subtrees(tpch, cs, qid):
    """orig then v60 make the shared subtrees recur (and get cached); v30 then reuses them.

    Q18 also holds one subtree twice in one plan: it must be written once and read twice.
    """
    for variant in ("orig", "v60", "v30", "v60"):
        sql = queries.statement(qid, variant, sf=0.01).sql
        df = cs.sql(sql)
        assert_same_rows(df.collect(), tpch_plain(tpch, sql))
        assert cs.last_query_summary().get("fallback") is None, cs.explain(df)
        if variant == "v30":
            assert cs.last_query_summary().get("operators_reused", 0) >= 1, cs.explain(df)


@pytest.mark.parametrize(
    ("base_share", "bases_read_before"),
    [(0.0, None), (0.5, None), (0.5, False)],
    ids=["one-per-branch", "with-bases", "bases-rarely-read-here"],
)
def test_a_shared_base_serves_the_variant_that_changes_the_query_above_it(
    tpch, tmp_path, base_share, bases_read_before
):
    """Q21's v30 filters the supplier scan, so the operator v60 cached for the largest
    benefit on its branch (over the supplier join) does not recur; with ``base_share``
    v60 also cached the late-lineitem semi/anti joins under that join, and v30 reads
    them (a base read, counted). In a home whose bases were never read, the reads expected
    of one do not pay for it: v60 declines it and says why. Rows equal plain Spark's."""
    cs = criss.session(tpch, home=str(tmp_path / "home"), min_texec=0, base_share=base_share)
    if bases_read_before is False:
        for n in range(30):  # as a stream whose queries never changed what was above a base
            cs.learning.learn_base_reads([f"never-read-{n}"], [])
            cs.learning.learn_base_reads([], [])
    based = base_share and bases_read_before is None
    reused = {}
    for variant in ("orig", "v60", "v30"):
        sql = queries.statement(21, variant, sf=0.01).sql
        df = cs.sql(sql)
        assert_same_rows(df.collect(), tpch_plain(tpch, sql))
        summary = cs.last_query_summary()
        assert summary.get("fallback") is None, cs.explain(df)
        reused[variant] = [
            o.op for o in cs.record(df).operators if o.decision.reason == "cached_entry"
        ]
        if variant == "v60":
            bases = [o for o in cs.record(df).operators if o.decision.reason == "shared_base"]
            assert len(bases) == (1 if based else 0), cs.explain(df)
            assert summary.get("shared_bases_cached", 0) == len(bases)
            declined = summary.get("shared_bases_declined", 0)
            # each operator weighed as a base is declined (the semi/anti joins among them)
            assert bool(declined) == (bases_read_before is False), cs.explain(df)
            if declined:
                assert "reads expected would not pay" in cs.explain(df)
        cs.settle_harvests()
    assert reused["v30"] == (["Join"] if based else []), reused
    if based:
        assert cs.learning.base_read_share > 0.5  # v30's read counted
    cs.close()


def test_the_record_says_where_planning_time_went_phase_by_phase(tpch, cs):
    sql = queries.statement(3, sf=0.01).sql
    first = cs.sql(sql)
    phases = cs.record(first).phase_seconds
    # a first-seen result: captured, its cache prepared; the action computes all of it
    assert {"capture", "match", "prepare"} <= set(phases), phases
    assert "write" not in phases and "read" not in phases
    assert all(seconds >= 0 for seconds in phases.values())
    assert cs.record(first).materialize_seconds == 0  # nothing of it ran in cs.sql()
    assert "time by phase (ms): capture" in cs.explain(first)
    first.collect()
    again = cs.sql(sql)
    assert "prepare" not in cs.record(again).phase_seconds  # served: nothing computed
    assert cs.last_query_summary()["phase_seconds"]["read"] >= 0


def test_planning_pauses_the_cyclic_gc_and_leaves_it_as_it_was(tpch, cs, monkeypatch):
    import gc

    import criss.engine as engine

    seen = []

    def watched(*args, **kwargs):
        seen.append(gc.isenabled())
        return plan_query(*args, **kwargs)

    def failing(*args, **kwargs):
        seen.append(gc.isenabled())
        raise RuntimeError("Criss's own machinery broke")

    plan_query = engine.plan_query
    sql = queries.statement(6, sf=0.01).sql
    expected = tpch_plain(tpch, sql)
    monkeypatch.setattr(engine, "plan_query", watched)
    assert_same_rows(cs.sql(sql).collect(), expected)
    assert seen == [False] and gc.isenabled()
    gc.disable()  # the user's choice is kept
    try:
        assert_same_rows(cs.sql(sql).collect(), expected)
        assert seen == [False, False] and not gc.isenabled()
    finally:
        gc.enable()
    monkeypatch.setattr(engine, "plan_query", failing)
    assert_same_rows(cs.sql(sql).collect(), expected)  # plain Spark runs it
    assert seen == [False, False, False] and gc.isenabled()
    assert cs.last_query_summary()["fallback"]


def test_reading_from_the_cache_does_not_inflate_the_learned_scan_rate(tpch, cs):
    """A result computed over a cached subtree reads no table file: its fast job must not
    count as a fast scan of the whole table (an inflated rate makes every later estimate
    fall below min_texec, and first-seen results stop being cached)."""
    inner = "select l_orderkey, sum(l_quantity) q from lineitem group by l_orderkey"
    cs.sql(inner).collect()
    assert cs.last_query_summary().get("operators_cached") == 1
    learned = cs.scan_rate
    outer = f"select * from ({inner}) where q > 100"
    df = cs.sql(outer)
    df.collect()
    summary = cs.last_query_summary()
    assert summary.get("operators_reused") == 1 and summary.get("operators_cached") == 1
    assert cs.scan_rate == learned, cs.explain(df)


def _leaf_scans(df) -> str:
    return df._jdf.queryExecution().executedPlan().toString()


def test_small_results_are_read_on_the_driver_with_exact_values(spark, tmp_path):
    """A small cached result comes back as a local relation (no read job), value for value;
    timestamps, which Parquet's INT96 would shift, still go through Spark's reader."""
    _typed_table(spark, tmp_path)
    untimed = "select * except (ts) from typed_t where id > 0"
    timed = "select id, ts from typed_t where id > 0"
    local = criss.session(spark, home=str(tmp_path / "local"))
    via_spark = criss.session(spark, home=str(tmp_path / "spark"), local_read_bytes=0)
    for sql, cs, leaf in (
        (untimed, local, "LocalTableScan"),
        (timed, local, "FileScan parquet"),
        (untimed, via_spark, "FileScan parquet"),
    ):
        expected = spark.sql(sql).collect()
        for occurrence in range(2):
            df = cs.sql(sql)
            assert df.schema.fieldNames() == spark.sql(sql).schema.fieldNames()
            rows = df.collect()
            assert_same_rows(rows, expected)
            assert sorted(map(repr, rows)) == sorted(map(repr, expected))  # types and -0.0 too
            summary = cs.last_query_summary()
            assert summary.get("operators_reused" if occurrence else "operators_cached", 0) >= 1
            if occurrence:  # the first runs the query itself, writing its result through
                assert leaf in _leaf_scans(df)
    local.close()
    via_spark.close()


def test_an_entry_too_large_to_hand_over_in_a_stages_time_is_read_by_spark(spark, tmp_path):
    """Reading an entry on the driver is bounded by what it was measured to take: at most as
    many values (rows × columns) as a local relation is built with in the time a stage of a
    read job costs. A bigger entry, under ``local_read_bytes`` still, is read by Spark."""
    path = str(tmp_path / "wide")
    spark.range(0, 60_000).selectExpr("id", "id * 2 as twice").write.parquet(path)
    spark.read.parquet(path).createOrReplaceTempView("sixty_thousand_t")
    sql = "select id, twice from sixty_thousand_t where id % 2 = 0 or id < 40000"
    expected = spark.sql(sql).collect()
    cs = criss.session(spark, home=str(tmp_path / "home"))
    assert_same_rows(cs.sql(sql).collect(), expected)  # cached as it runs
    prior = cs.learning.local_read_values
    assert prior >= 50_000 * 2  # the prior bound: this entry is read on the driver
    df = cs.sql(sql)
    assert "LocalTableScan" in _leaf_scans(df)
    assert_same_rows(df.collect(), expected)
    assert cs.last_query_summary()["operators_reused"] == 1
    assert cs.learning.local_read_values != prior  # the read was measured and learned
    for _ in range(30):  # as if such reads had been measured to take a second each
        cs.learning.learn_local_read(100_000, 1.0)
    assert cs.learning.local_read_values < 50_000 * 2
    cs.bridge.forget_reads()  # the local plan kept for reuse would stand in otherwise
    df = cs.sql(sql)
    assert "FileScan parquet" in _leaf_scans(df) and "LocalTableScan" not in _leaf_scans(df)
    assert_same_rows(df.collect(), expected)
    assert cs.last_query_summary()["operators_reused"] == 1
    cs.close()


def _typed_table(spark, tmp_path):
    """View ``typed_t``: every column type, with NaN, -0.0 and a row of NULLs."""
    path = str(tmp_path / "typed")
    spark.sql(
        """
        select id, id % 3 = 0 b, cast(id as tinyint) t, cast(id as smallint) s, cast(id as int) i,
               cast(id / 7 as float) f,
               case when id = 1 then double('NaN') when id = 2 then -0.0 else id / 3 end d,
               cast(id * 1.25 as decimal(12, 2)) m, cast(id as decimal(30, 10)) wide,
               concat('k', id, '\u00e9') str, date_add(date'1995-01-01', cast(id as int)) dt,
               cast(concat('b', id) as binary) bin,
               timestamp'2024-03-10 01:30:00' + make_interval(0, 0, 0, 0, cast(id as int)) ts
        from range(0, 40)
        """
    ).union(
        spark.sql(
            "select 99, null, null, null, null, null, null, null, null, null, null, null, null"
        )
    ).write.parquet(path)
    spark.read.parquet(path).createOrReplaceTempView("typed_t")


def test_small_results_are_written_on_the_driver_and_read_back_exactly(spark, tmp_path):
    """A result whose last stage only reorganizes a few shuffled rows is collected and
    written with pyarrow, not by a Spark write job; both the driver's reader and Spark's
    (another application, local reads off) give it back value for value. A result whose
    last stage scans files has no row bound and is written by Spark."""
    _typed_table(spark, tmp_path)
    shuffled = "select * except (ts) from typed_t where id > 0 distribute by id"
    scanned = "select * except (ts) from typed_t where id > 1"
    expected = {sql: spark.sql(sql).collect() for sql in (shuffled, scanned)}
    home = str(tmp_path / "home")
    writer = criss.session(spark, home=home, cache_in_action=False)  # a materialization job
    for sql, on_driver in ((shuffled, 1), (scanned, 0)):
        rows = writer.sql(sql).collect()
        assert sorted(map(repr, rows)) == sorted(map(repr, expected[sql]))
        summary = writer.last_query_summary()
        assert summary.get("operators_cached") == 1
        assert summary.get("entries_written_on_driver", 0) == on_driver
    # either way, files hold positional columns (names are the query's business)
    width = len(spark.sql(shuffled).columns)
    entries = [writer.cache.lookup(e["key"]) for e in writer.report()["entries"]]
    assert len(entries) == 2
    for entry in entries:
        for uri in writer.cache.uris(entry):
            assert pq.read_schema(local_file(uri)).names == [f"c{i}" for i in range(width)]
    writer.close()
    reader = criss.session(spark, home=home, local_read_bytes=0)
    df = reader.sql(shuffled)
    assert sorted(map(repr, df.collect())) == sorted(map(repr, expected[shuffled]))
    assert reader.last_query_summary().get("operators_reused") == 1
    assert "FileScan parquet" in _leaf_scans(df)
    reader.close()


def test_rows_written_on_the_driver_are_read_in_place_without_reading_the_files_back(
    spark, tmp_path, monkeypatch
):
    """A first-seen result written on the driver stands in for the query from the rows
    just written (as they are, or in ORDER BY order); its files are read only by a later
    query that reuses them, and every answer equals Spark's."""
    import criss.bridge.rewrite as rewrite

    _typed_table(spark, tmp_path)
    shuffled = "select * except (ts) from typed_t where id > 0 distribute by id"
    ordered = (
        "select t % 4 k, count(*) n, sum(m) total from typed_t where id > 2 group by 1 "
        "order by total desc nulls first, k"
    )
    expected = {sql: spark.sql(sql).collect() for sql in (shuffled, ordered)}
    reads: list[list[str]] = []
    read_files = rewrite.read_arrow
    monkeypatch.setattr(
        rewrite, "read_arrow", lambda files: reads.append(files) or read_files(files)
    )
    cs = criss.session(spark, home=str(tmp_path / "home"), cache_in_action=False)  # a job
    rows = cs.sql(shuffled).collect()
    assert sorted(map(repr, rows)) == sorted(map(repr, expected[shuffled]))
    assert cs.last_query_summary().get("entries_written_on_driver") == 1
    assert cs.last_query_summary().get("operators_cached") == 1
    assert cs.sql(ordered).collect() == expected[ordered]
    summary = cs.last_query_summary()
    assert summary.get("entries_written_on_driver") == 1
    assert summary.get("results_ordered_on_driver") == 1, summary
    assert reads == []
    cs.close()
    later = criss.session(spark, home=str(tmp_path / "home"))  # reads the files themselves
    for sql in (shuffled, ordered):
        again = later.sql(sql).collect()
        assert later.last_query_summary().get("operators_reused") == 1
        assert sorted(map(repr, again)) == sorted(map(repr, expected[sql]))
    assert len(reads) == 2
    later.close()


def test_an_empty_result_under_order_by_is_served_from_the_cache(tpch, tmp_path):
    """An empty cached result is put in ORDER BY order on the driver like any other (an
    untyped empty index array once made pyarrow's take fail: TPC-DS q39b, q65, q84)."""
    sql = (
        "select o_orderpriority, o_orderkey, o_totalprice from orders "
        "where o_totalprice < 0 order by o_totalprice desc, o_orderkey"
    )
    cs = criss.session(tpch, home=str(tmp_path / "home"))
    for occurrence in range(2):
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # a fallback warns: none may happen
            df = cs.sql(sql)
        assert df.collect() == []
        summary = cs.last_query_summary()
        assert summary.get("fallback") is None, summary
        assert summary.get("operators_reused" if occurrence else "operators_cached") == 1
    assert summary.get("results_ordered_on_driver") == 1
    cs.close()


@pytest.mark.parametrize("order_by", ["", " order by n desc, o_orderkey"])
def test_an_empty_cached_result_is_served_without_a_spark_job(tpch, tmp_path, order_by):
    """Serving a cached result of no rows reads a local relation: no job, no Python worker
    (a Python RDD of no rows once took 1.8 s where plain Spark took 0.73 s: TPC-H Q18 under
    a drift-hot stream at SF 0.05)."""
    sql = (
        "select o_orderkey, count(*) as n from orders where o_totalprice < 0 "
        f"group by o_orderkey{order_by}"
    )
    cs = criss.session(tpch, home=str(tmp_path / "home"))
    assert cs.sql(sql).collect() == []
    assert cs.last_query_summary().get("operators_cached") == 1
    served = cs.sql(sql)
    assert jobs_in(tpch, f"empty-result{len(order_by)}", served.collect) == 0
    summary = cs.last_query_summary()
    assert summary.get("operators_reused") == 1 and summary.get("fallback") is None, summary
    assert served.collect() == [] and served.columns == ["o_orderkey", "n"]
    cs.close()


def test_ordering_an_empty_table_on_the_driver_keeps_its_schema():
    import pyarrow as pa

    from criss.localio import spark_order
    from criss.qtree.rewrite import SortKey

    empty = pa.table({"k": pa.array([], pa.float64()), "s": pa.array([], pa.string())})
    ordered = spark_order(empty, (SortKey(0, True, False), SortKey(1, False, True)))
    assert ordered.num_rows == 0 and ordered.schema == empty.schema


@pytest.mark.parametrize(
    "order_by",
    [
        "d, id",
        "d desc, id",
        "d asc nulls last, id desc",
        "d desc nulls first, id",
        "s, m desc, id",
        "s desc nulls first, dt, id",
        "dt desc, b, id",
        "bin, f desc nulls last, id",
    ],
)
def test_cached_results_are_put_in_order_by_order_on_the_driver(spark, tmp_path, order_by):
    """Served without a Spark job, a cached result under ORDER BY comes in Spark's order:
    NaN above all numbers, -0.0 equal to 0.0, nulls where the clause puts them, strings by
    code point, ties in any order."""
    path = str(tmp_path / "ordered")
    spark.sql(
        """
        select id,
               case id % 9 when 0 then double('NaN') when 1 then null when 2 then -0.0
                           when 3 then 0.0 when 4 then double('-Infinity')
                           else (id % 5) - 2.5 end d,
               cast(id % 4 - 1.5 as float) f,
               case id % 6 when 0 then null when 1 then '\u00e9t\u00e9' when 2 then 'zeta'
                           when 3 then 'Zeta' when 4 then '\U0001f600' else '' end s,
               cast((id % 7) * 1.5 as decimal(10, 2)) m, id % 2 = 0 b,
               case when id % 8 = 0 then null
                    else date_add(date'2000-02-28', cast(id % 5 as int)) end dt,
               cast(concat(char(200 + id % 3), 'x') as binary) bin
        from range(0, 300)
        """
    ).write.parquet(path)
    spark.read.parquet(path).createOrReplaceTempView("ordered_t")
    sql = f"select * from ordered_t where id % 10 <> 7 order by {order_by}"
    keys = [k.split()[0] for k in order_by.split(",")]
    expected = [repr(tuple(r[k] for k in keys)) for r in spark.sql(sql).collect()]
    cs = criss.session(spark, home=str(tmp_path / "home"))
    for occurrence in range(2):
        df = cs.sql(sql)
        rows = df.collect()
        assert [repr(tuple(r[k] for k in keys)) for r in rows] == expected
        assert_same_rows(rows, spark.sql(sql).collect())
        summary = cs.last_query_summary()
        assert summary.get("operators_reused" if occurrence else "operators_cached") == 1
        if occurrence:  # the first runs the query, writing its result through
            assert summary.get("results_ordered_on_driver") == 1
            assert "put in ORDER BY order" in cs.explain(df)
            assert "Sort" not in _leaf_scans(df)
    cs.close()


@pytest.mark.parametrize(
    ("sql", "keys", "on_driver"),
    [
        (  # plain columns: the driver orders the cached rows
            "select o_custkey, sum(o_totalprice) spent from orders group by o_custkey "
            "order by spent desc, o_custkey limit 12",
            ("spent", "o_custkey"),
            True,
        ),
        (  # an expression: Spark's Sort, over the cached rows only
            "select o_custkey, sum(o_totalprice) spent from orders group by o_custkey "
            "order by -spent, o_custkey limit 12",
            ("spent", "o_custkey"),
            False,
        ),
        (  # ties at the limit: which tied rows is Spark's choice, their keys are not
            "select o_orderpriority, o_orderkey from orders order by o_orderpriority limit 12",
            ("o_orderpriority",),
            True,
        ),
    ],
)
@pytest.mark.parametrize("in_action", [True, False], ids=["in-action", "by-a-job"])
def test_an_order_by_limit_query_keeps_its_top_rows_not_every_row_it_ranked(
    tpch, tmp_path, sql, keys, on_driver, in_action
):
    """The result of ``ORDER BY … LIMIT n`` is its top rows: a first sight stores those n,
    not every row the Sort ranked, and a repeat serves them in the Sort's input, where they
    are put in the query's order again (by the driver, or by Spark's Sort of n rows)."""
    expected = tpch.sql(sql).collect()
    cs = criss.session(tpch, home=str(tmp_path / "home"), cache_in_action=in_action)
    for occurrence in range(3):
        df = cs.sql(sql)
        rows = df.collect()
        assert [tuple(r[k] for k in keys) for r in rows] == [
            tuple(r[k] for k in keys) for r in expected
        ]
        if len(keys) > 1:
            assert rows == expected
        summary = cs.last_query_summary()
        assert summary.get("fallback") is None, summary
        if occurrence == 0:
            cached = "operators_cached_in_action" if in_action else "operators_cached"
            assert summary.get(cached) == 1, cs.explain(df)
            continue
        assert summary.get("operators_reused") == 1, cs.explain(df)
        assert summary.get("results_ordered_on_driver", 0) == int(on_driver)
        (served,) = [line for line in cs.explain(df).splitlines() if "REUSED" in line]
        assert served.lstrip().startswith("GlobalLimit 12") and "rows=12)" in served, served
    cs.close()


def test_a_closed_session_closes_once_and_its_queries_run_as_plain_spark(tpch, tmp_path, caplog):
    """Closing twice (a ``with`` block and an explicit ``close()``) does nothing the second
    time; a query through a closed session is Spark's own DataFrame with plain Spark's rows,
    and what needs the closed cache says so by name. The next session on the home serves
    what the first one cached before it closed."""
    sql = "select o_orderpriority, count(*) as n from orders group by o_orderpriority"
    expected = tpch.sql(sql).collect()
    home = str(tmp_path / "home")
    with criss.session(tpch, home=home) as cs:
        assert_same_rows(cs.sql(sql).collect(), expected)
        assert cs.last_query_summary().get("operators_cached") == 1
    assert cs.closed
    cs.close()  # the second time: nothing to do, nothing raised
    with caplog.at_level("WARNING", logger="criss"):
        after = cs.sql(sql)
        assert_same_rows(after.collect(), expected)
        cs.sql(sql).collect()
    assert cs.explain(after) == "this DataFrame was not planned by this Criss session"
    assert [r.message for r in caplog.records].count(
        "this Criss session is closed: its queries run as plain Spark"
    ) == 1
    assert cs.counters["queries_after_close"] == 2
    for call in (cs.report, cs.clear):
        with pytest.raises(criss.SessionClosed, match=r"closed Criss session .*criss\.session"):
            call()
    with criss.session(tpch, home=home) as again:
        assert_same_rows(again.sql(sql).collect(), expected)
        assert again.last_query_summary().get("operators_reused") == 1
