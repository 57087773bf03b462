"""Filter-based join optimizations: semi-join prefilter, runtime (LIP) filters, Bloom join.

Differential on real Spark (TPC-H SF 0.01 and small generated Parquet tables with NULL and
duplicate keys, empty inputs): Criss's result equals plain Spark's, explain shows the
decision with its numbers, each option off leaves the plan alone, and at high selectivity
nothing is applied. Broadcast joins are switched off so the joins shuffle (as at SF1), and
the cost model's fixed costs are zeroed where a test needs a decision at this tiny scale.
"""

from __future__ import annotations

import gc

import pytest

import criss
from criss.joins import JoinContext
from criss.joins.prefilter import broadcast_threshold
from criss.policies import filters as policy
from criss.qtree.star import key_source, whole_table
from tests.rowcompare import assert_same_rows

#: Also run on the loopback standalone cluster (tests/conftest.py).
pytestmark = pytest.mark.cluster

FAST = {"codec_rate": "20m", "disk_bandwidth": "100m", "memory_bandwidth": "1g"}
ALL_OFF = {"range_join": False, "semi_prefilter": False, "bloom_join": False}
ALL_OFF |= {"runtime_filters": False}

ORDERS_1PCT = """
select o_orderkey, o_orderdate, l_linenumber, l_extendedprice
from orders join lineitem on o_orderkey = l_orderkey
where o_orderdate < date'1992-01-25'
"""
STAR = """
select l_orderkey, l_linenumber, l_extendedprice, p_type, s_name
from lineitem, orders, part, supplier
where l_orderkey = o_orderkey and l_partkey = p_partkey and l_suppkey = s_suppkey
  and o_orderdate < date'1993-01-01' and p_type like '%BRASS' and s_nationkey in (1, 2, 3, 4, 5)
"""


@pytest.fixture
def shuffle_joins(tpch):
    """No broadcast joins: at SF 0.01 every input is under Spark's broadcast threshold."""
    key = "spark.sql.autoBroadcastJoinThreshold"
    before = tpch.conf.get(key)
    tpch.conf.set(key, "-1")
    yield tpch
    tpch.conf.set(key, before)


@pytest.fixture
def forced(monkeypatch):
    """Costs scaled to SF 0.01: no fixed cost, a slow shuffle (so any filtering pays)."""
    monkeypatch.setattr(policy, "FIXED_COST_S", 0.0)
    monkeypatch.setattr(policy, "SHUFFLE_RATE", 1e3)


def session(spark, tmp_path, **options):
    # min_ref=1: measure join inputs the first time they are seen (default: when they recur),
    # while planning (default: after the action, for the next query)
    options = {"min_ref": 1, "join_measurements": "planning", **options}
    return criss.session(spark, home=tmp_path / "home", eager_results=False, **FAST, **options)


def joins_lines(cs, df) -> list[str]:
    return [ln.strip() for ln in cs.explain(df).splitlines() if ln.strip().startswith("join:")]


def test_prefilter_applied_and_equal(shuffle_joins, forced, tmp_path):
    spark = shuffle_joins
    cs = session(spark, tmp_path, runtime_filters=False, bloom_join=False)
    df = cs.sql(ORDERS_1PCT)
    assert_same_rows(df.collect(), spark.sql(ORDERS_1PCT).collect())
    lines = joins_lines(cs, df)
    assert any("semi_prefilter APPLIED" in ln and "big rows survive" in ln for ln in lines), lines
    assert cs.report()["counters"]["joins_semi_prefilter"] == 1
    choice = next(c for c in cs._records[df].joins if c.chosen)
    assert choice.details["survival"] < 0.05 and choice.details["filtered"] == "right"
    cores = spark.sparkContext.defaultParallelism
    w = policy.PARALLELISM_W
    assert choice.details["shuffle_partitions"] == (w * cores if w else None)


def test_prefilter_measurements_and_key_set_reused(shuffle_joins, forced, tmp_path):
    spark = shuffle_joins
    # nothing cached (min_texec): the repeat must plan the key set again, not read a result
    cs = session(spark, tmp_path, runtime_filters=False, bloom_join=False, min_texec=1e9)
    cs.sql(ORDERS_1PCT).collect()
    counters = cs.report()["counters"]
    assert counters["join_key_measurements"] == 2  # one aggregate per input
    df = cs.sql(ORDERS_1PCT)
    df.collect()
    counters = cs.report()["counters"]
    assert counters["join_key_measurements"] == 2
    assert counters["join_key_measurements_reused"] >= 2
    # The distinct-key set is an ordinary operator: the QTree matched it on the repeat.
    key_set = [ln for ln in cs.explain(df).splitlines() if "Aggregate [__criss_key0" in ln]
    assert key_set and "matched" in key_set[0], cs.explain(df)


def test_prefilter_not_applied_at_high_selectivity(shuffle_joins, forced, tmp_path):
    spark = shuffle_joins
    cs = session(spark, tmp_path, runtime_filters=False, bloom_join=False)
    sql = ORDERS_1PCT.replace("1992-01-25", "1999-01-01")
    df = cs.sql(sql)
    assert_same_rows(df.collect(), spark.sql(sql).collect())
    lines = joins_lines(cs, df)
    assert any("semi_prefilter not applied" in ln and "100% of big rows" in ln for ln in lines)
    assert not cs.report()["counters"].get("joins_semi_prefilter")


def test_prefilter_not_applied_when_spark_broadcasts(tpch, forced, tmp_path):
    cs = session(tpch, tmp_path, runtime_filters=False, bloom_join=False)
    df = cs.sql(ORDERS_1PCT)
    assert_same_rows(df.collect(), tpch.sql(ORDERS_1PCT).collect())
    assert any("Spark broadcasts" in ln for ln in joins_lines(cs, df))


@pytest.mark.parametrize(("setting", "expected"), [("1KB", 1024), ("20MB", 20 << 20), ("-1", -1)])
def test_the_broadcast_threshold_is_read_as_spark_reads_it(tpch, tmp_path, setting, expected):
    """A threshold with a unit (``20MB``) is what Spark reads it as, not the 10 MB default
    a parse of the conf string fell back to."""
    key = "spark.sql.autoBroadcastJoinThreshold"
    before = tpch.conf.get(key)
    tpch.conf.set(key, setting)
    try:
        with session(tpch, tmp_path) as cs:
            assert broadcast_threshold(JoinContext(cs, None)) == expected
    finally:
        tpch.conf.set(key, before)


ORDERS_1PCT_JOINED_BIG_SIDE = """
select o_orderkey, o_orderdate, l_linenumber, l_extendedprice
from orders join (
  select l_orderkey, l_linenumber, l_extendedprice
  from lineitem join part on l_partkey = p_partkey where p_size < 40
) x on o_orderkey = l_orderkey
where o_orderdate < date'1992-01-25'
"""


def test_adaptive_broadcast_at_the_measured_size_counts_only_before_the_big_shuffle(
    tpch, forced, tmp_path
):
    """Spark estimates a date-filtered orders at the whole table's size and plans a shuffle;
    adaptive execution broadcasts the 1 % it really is. Over a join, the big input's shuffle
    is planned after that (nothing to save: no key set built); over a scan, it was already
    shuffled beside orders, so the prefilter still pays."""
    key = "spark.sql.autoBroadcastJoinThreshold"
    before = tpch.conf.get(key)
    tpch.conf.set(key, "20000")  # SF 0.01: over 1 % of orders, under every estimate
    try:
        cs = session(tpch, tmp_path, runtime_filters=False, bloom_join=False)
        df = cs.sql(ORDERS_1PCT_JOINED_BIG_SIDE)
        assert_same_rows(df.collect(), tpch.sql(ORDERS_1PCT_JOINED_BIG_SIDE).collect())
        orders_join = [ln for ln in joins_lines(cs, df) if "o_orderkey" in ln]
        assert orders_join and all(
            "semi_prefilter not applied" in ln
            and "adaptive execution broadcasts the left input at its measured size" in ln
            for ln in orders_join
        ), orders_join
        df = cs.sql(ORDERS_1PCT)
        assert_same_rows(df.collect(), tpch.sql(ORDERS_1PCT).collect())
        lines = joins_lines(cs, df)
        assert any("semi_prefilter APPLIED" in ln for ln in lines), lines
    finally:
        tpch.conf.set(key, before)


def test_options_off_leave_plan_alone(shuffle_joins, forced, tmp_path):
    spark = shuffle_joins
    cs = session(spark, tmp_path, **ALL_OFF)
    for sql in (ORDERS_1PCT, STAR):
        df = cs.sql(sql)
        assert joins_lines(cs, df) == []
        assert "LeftSemi" not in cs.explain(df)
    counters = cs.report()["counters"]
    assert not counters.get("joins_semi_prefilter") and not counters.get("join_key_measurements")


@pytest.fixture(scope="module")
def keyed_tables(spark, tmp_path_factory):
    """Small Parquet tables: NULL keys on both sides, duplicate keys, an empty table."""
    root = tmp_path_factory.mktemp("keyed")
    big = [(k % 50 if k % 7 else None, k, f"b{k}") for k in range(2000)]
    small = [(k, (k or 0) * 10) for k in (1, 2, 2, 3, None, None, 49, 77)]
    schema_big, schema_small = "k long, v long, s string", "k long, w long"
    spark.createDataFrame(big, schema_big).write.parquet(str(root / "big"))
    spark.createDataFrame(small, schema_small).write.parquet(str(root / "small"))
    spark.createDataFrame([], schema_small).write.parquet(str(root / "empty"))
    for name in ("big", "small", "empty"):
        spark.read.parquet(str(root / name)).createOrReplaceTempView(f"jf_{name}")
    return root


#: Joins of the keyed tables: NULL and duplicate keys, every preserved side, a residual
#: condition, an empty input, and the big input preserved (nothing may be filtered).
KEYED_JOINS = [
    "select * from jf_big b join jf_small s on b.k = s.k",
    "select * from jf_small s left join jf_big b on b.k = s.k",
    "select * from jf_big b right join jf_small s on b.k = s.k",
    "select * from jf_big b join jf_small s on b.k = s.k and b.v > s.w",
    "select * from jf_big b join jf_empty s on b.k = s.k",
    "select * from jf_big b left join jf_small s on b.k = s.k",
]


@pytest.mark.parametrize("sql", KEYED_JOINS)
def test_prefilter_null_duplicate_and_empty_keys(
    shuffle_joins, forced, keyed_tables, sql, tmp_path
):
    cs = session(shuffle_joins, tmp_path, runtime_filters=False, bloom_join=False)
    _check_keyed_join(shuffle_joins, cs, sql, "semi_prefilter")


def _check_keyed_join(spark, cs, sql: str, optimization: str):
    """Same rows as plain Spark; ``optimization`` applied unless the big input is preserved."""
    df = cs.sql(sql)
    assert_same_rows(df.collect(), spark.sql(sql).collect())
    lines = joins_lines(cs, df)
    if sql.startswith("select * from jf_big b left join"):
        # the big input is preserved: only the small one may be filtered, which never pays
        assert not any("APPLIED" in ln for ln in lines), lines
    else:
        assert any(f"{optimization} APPLIED" in ln for ln in lines), lines
    return df


def test_join_rewritten_result_is_not_served_after_its_input_changed(
    shuffle_joins, forced, tmp_path
):
    spark = shuffle_joins
    root = tmp_path / "tables"
    big = [(k % 50, k, f"b{k}") for k in range(2000)]
    spark.createDataFrame(big, "k long, v long, s string").write.parquet(str(root / "big"))
    spark.createDataFrame([(1, 10), (2, 20)], "k long, w long").write.parquet(str(root / "small"))
    for name in ("big", "small"):
        spark.read.parquet(str(root / name)).createOrReplaceTempView(f"jr_{name}")
    sql = "select b.k, b.v, s.w from jr_big b join jr_small s on b.k = s.k"
    cs = session(spark, tmp_path, runtime_filters=False, bloom_join=False)
    first = cs.sql(sql)
    assert_same_rows(first.collect(), spark.sql(sql).collect())
    assert cs.report()["counters"]["joins_semi_prefilter"] == 1
    repeat = cs.sql(sql)
    assert_same_rows(repeat.collect(), spark.sql(sql).collect())
    assert "via join-rewrite" in cs.explain(repeat)
    # new rows for key 2 land in the big table: the rewritten result is stale now
    more = [(2, 10_000 + k, "new") for k in range(30)]
    spark.createDataFrame(more, "k long, v long, s string").write.mode("append").parquet(
        str(root / "big")
    )
    changed = cs.sql(sql)
    rows = changed.collect()
    assert_same_rows(rows, spark.sql(sql).collect())
    assert sum(1 for r in rows if r["v"] >= 10_000) == 30
    assert "via join-rewrite" not in cs.explain(changed)
    assert cs.report()["counters"]["rewrites_join_rewrite"] == 1


def test_runtime_filters_star_join(shuffle_joins, forced, tmp_path):
    spark = shuffle_joins
    cs = session(spark, tmp_path, bloom_join=False)
    df = cs.sql(STAR)
    assert_same_rows(df.collect(), spark.sql(STAR).collect())
    lines = joins_lines(cs, df)
    applied = [ln for ln in lines if "runtime_filters APPLIED" in ln]
    assert applied and "3 dimension filters" in applied[0], lines
    choice = next(c for c in cs._records[df].joins if c.optimization == "runtime_filters")
    assert sorted(d.split(" in ")[0] for d in choice.details["dimensions"]) == [
        "l_orderkey",
        "l_partkey",
        "l_suppkey",
    ]
    assert cs.report()["counters"]["joins_runtime_filters"] == 1


def test_runtime_filters_drop_unselective_dimension(shuffle_joins, forced, tmp_path):
    spark = shuffle_joins
    sql = STAR.replace("s_nationkey in (1, 2, 3, 4, 5)", "s_nationkey >= 0")
    cs = session(spark, tmp_path, bloom_join=False, semi_prefilter=False)
    df = cs.sql(sql)
    assert_same_rows(df.collect(), spark.sql(sql).collect())
    choice = next(c for c in cs._records[df].joins if c.optimization == "runtime_filters")
    assert choice.chosen, choice
    assert len(choice.details["keep"]) == 2 and max(choice.details["survivals"]) == 1.0


def test_runtime_filters_measure_only_filtered_dimensions(shuffle_joins, forced, tmp_path):
    spark = shuffle_joins
    options = {"bloom_join": False, "semi_prefilter": False}
    # every dimension a whole table: declined without running a single measurement job
    whole = STAR.replace(
        "and o_orderdate < date'1993-01-01' and p_type like '%BRASS' and "
        "s_nationkey in (1, 2, 3, 4, 5)",
        "",
    )
    cs = session(spark, tmp_path / "a", **options)
    df = cs.sql(whole)
    assert_same_rows(df.collect(), spark.sql(whole).collect())
    choice = next(c for c in cs._records[df].joins if c.optimization == "runtime_filters")
    assert not choice.chosen and "no dimension is a filtered scan" in choice.reason, choice
    assert cs.report()["counters"].get("join_key_measurements", 0) == 0
    # one filtered dimension: it and the fact input are measured, the whole tables are not
    one = STAR.replace("and p_type like '%BRASS' and s_nationkey in (1, 2, 3, 4, 5)", "")
    cs = session(spark, tmp_path / "b", **options)
    df = cs.sql(one)
    assert_same_rows(df.collect(), spark.sql(one).collect())
    assert cs.report()["counters"]["join_key_measurements"] == 2
    choice = next(c for c in cs._records[df].joins if c.optimization == "runtime_filters")
    assert choice.chosen, choice
    assert [d.split(" (join")[0] for d in choice.details["dimensions"]] == [
        "l_orderkey in o_orderkey"
    ]


#: Lineitem joined with part, then with a month of orders. At SF 0.01 Spark estimates the
#: part input at ~20 KB and the orders input at ~80 KB (the whole table's share of its
#: columns); the month holds ~400 orders (~3 KB of keys).
PART_THEN_ORDERS = """
select l_orderkey, l_linenumber, l_extendedprice, p_type
from lineitem, part, orders
where l_partkey = p_partkey and l_orderkey = o_orderkey
  and p_type like '%BRASS' and o_orderdate < date'{until}'
"""


@pytest.fixture
def broadcast_40k(tpch):
    """A 40 KB broadcast threshold: Spark plans to broadcast the part input, not the orders
    one, which adaptive execution broadcasts once its ~3 KB are known."""
    key = "spark.sql.autoBroadcastJoinThreshold"
    before = tpch.conf.get(key)
    tpch.conf.set(key, str(40 * 1024))
    yield tpch
    tpch.conf.set(key, before)


def test_runtime_filters_leave_the_fact_input_unmeasured_where_every_dimension_is_broadcast(
    broadcast_40k, forced, tmp_path
):
    """Part is broadcast as planned, orders at its measured size: no lineitem row is ever
    shuffled, so no filter can pay, and lineitem's keys (the one large measurement job)
    are not measured; the two dimensions' are."""
    spark = broadcast_40k
    sql = PART_THEN_ORDERS.format(until="1992-03-01")
    cs = session(spark, tmp_path, semi_prefilter=False, bloom_join=False, min_texec=1e9)
    df = cs.sql(sql)
    assert_same_rows(df.collect(), spark.sql(sql).collect())
    choice = next(c for c in cs._records[df].joins if c.optimization == "runtime_filters")
    assert not choice.chosen and "broadcast at its measured size" in choice.reason, choice
    assert cs.report()["counters"]["join_key_measurements"] == 2


#: The lineitem input of PART_THEN_ORDERS's orders join, as a query of its own.
LINEITEM_AND_PART = """
select l_orderkey, l_linenumber, l_extendedprice, p_type
from lineitem, part
where l_partkey = p_partkey and p_type like '%BRASS' and l_orderkey is not null
"""


def test_the_input_spark_may_broadcast_is_measured_first(broadcast_40k, forced, tmp_path):
    """The semi prefilter at the orders join: lineitem ⋈ part (its rows known from the
    first query's run) and a month of orders. Orders, the input Spark may broadcast, is
    measured first, and its ~400 rows show adaptive execution broadcasting it: the
    lineitem side, a job that computes its join again, is never measured. Measured after
    the action (the default), the orders input goes alone, and the next query decides."""
    spark = broadcast_40k
    first, later = LINEITEM_AND_PART, PART_THEN_ORDERS.format(until="1992-03-01")
    for measured_when in ("planning", "after-action"):
        cs = session(
            spark,
            tmp_path / measured_when,
            runtime_filters=False,
            bloom_join=False,
            min_texec=1e9,
            join_measurements=measured_when,
        )
        cs.sql(first).collect()
        cs.settle_harvests()  # the join's rows, read off the executed plan
        df = cs.sql(later)
        assert_same_rows(df.collect(), spark.sql(later).collect())
        cs.settle_harvests()
        if measured_when == "after-action":
            reason = _prefilter_reason(cs, df, "o_orderkey")
            assert "the other input's only if its measured size" in reason, reason
            df = cs.sql(later)
            df.collect()
        reason = _prefilter_reason(cs, df, "o_orderkey")
        assert "adaptive execution broadcasts the right input at its measured size" in reason
        assert cs.report()["counters"]["join_key_measurements"] == 1, measured_when
        cs.close()


def test_key_filters_are_declined_unmeasured_where_no_filter_can_pay(shuffle_joins, tmp_path):
    """With the cost model's own constants, SF 0.01's lineitem (60 k rows, ~2 MB) crosses a
    shuffle in ~0.02 s, under a key filter's fixed 0.3 s: from the table's rows in its
    Parquet footers, no filter can pay at any survival, so no input's keys are measured
    (each a Spark job) and the joins are declined; the rows are plain Spark's."""
    spark = shuffle_joins
    cs = session(spark, tmp_path / "prefilter", runtime_filters=False)
    df = cs.sql(ORDERS_1PCT)
    assert_same_rows(df.collect(), spark.sql(ORDERS_1PCT).collect())
    reason = _prefilter_reason(cs, df, "o_orderkey")
    assert "holds at most 60175 rows" in reason and "fixed 0.30s" in reason, reason
    bloom = next(c for c in cs._records[df].joins if c.optimization == "bloom_join")
    assert bloom.reason == reason and not bloom.chosen
    assert cs.report()["counters"].get("join_key_measurements", 0) == 0

    cs = session(spark, tmp_path / "star", semi_prefilter=False, bloom_join=False)
    df = cs.sql(STAR)
    assert_same_rows(df.collect(), spark.sql(STAR).collect())
    choice = next(c for c in cs._records[df].joins if c.optimization == "runtime_filters")
    assert not choice.chosen and "the fact input holds at most 60175 rows" in choice.reason
    assert cs.report()["counters"].get("join_key_measurements", 0) == 0


def test_joins_too_small_for_any_filter_are_declined_from_the_tree_without_jvm_reads(
    shuffle_joins, tmp_path
):
    """Where every input's rows bound (Parquet footers) and column widths (the canonical
    tree) leave no shuffle a key filter could pay for, each optimization declines the join
    before asking the JVM for its condition, its inputs' columns or Spark's size estimates;
    the choices still say why, and the rows are plain Spark's. A join over another join's
    output, never measured, is still judged from the JVM's facts."""
    from criss.bridge.roundtrips import RoundTripCounter

    spark = shuffle_joins
    cs = session(spark, tmp_path / "tree")
    counter = RoundTripCounter()
    try:
        counter.active = True
        df = cs.sql(ORDERS_1PCT)
        counter.active = False
    finally:
        counter.close()
    assert_same_rows(df.collect(), spark.sql(ORDERS_1PCT).collect())
    choices = cs._records[df].joins
    assert {c.optimization for c in choices} == {"semi_prefilter", "bloom_join"}
    for choice in choices:
        assert not choice.chosen
        assert "holds at most 60175 rows" in choice.reason, choice.reason
        assert "fixed 0.30s" in choice.reason, choice.reason
    reads = {s: n for s, n in counter.calls.items() if s.startswith("bridge/joins.py:")}
    for fact in ("condition", "columns", "estimated_bytes"):
        assert f"bridge/joins.py:{fact}" not in reads, reads
    assert cs.report()["counters"].get("join_key_measurements", 0) == 0

    df = cs.sql(STAR)
    assert_same_rows(df.collect(), spark.sql(STAR).collect())
    by_path = {(c.optimization, c.path): c.reason for c in cs._records[df].joins}
    lowest = max((p for _, p in by_path), key=len)
    assert "the fact input holds at most 60175 rows" in by_path["runtime_filters", lowest]
    assert "at most 3 shuffle(s)" in by_path["runtime_filters", lowest]
    assert "not measured yet" in by_path["semi_prefilter", (0,)]
    cs.close()


def _prefilter_reason(cs, df, key: str) -> str:
    return next(
        c.reason
        for c in cs._records[df].joins
        if c.optimization == "semi_prefilter" and key in c.join
    )


def test_key_measurements_shared_by_projections_of_one_input(shuffle_joins, forced, tmp_path):
    spark = shuffle_joins
    cs = session(spark, tmp_path, runtime_filters=False, bloom_join=False)
    cs.sql(ORDERS_1PCT).collect()
    assert cs.report()["counters"]["join_key_measurements"] == 2
    # other lineitem and orders columns, same rows: both inputs' keys are known already
    narrower = ORDERS_1PCT.replace("o_orderdate, l_linenumber", "o_totalprice, l_quantity")
    df = cs.sql(narrower)
    assert_same_rows(df.collect(), spark.sql(narrower).collect())
    counters = cs.report()["counters"]
    assert counters["join_key_measurements"] == 2 and counters["joins_semi_prefilter"] == 2
    sides = [
        cs.canonical_tree(cs.bridge.capture(spark.sql(f"select {c} from lineitem")))
        for c in ("l_orderkey, l_quantity", "l_orderkey, l_linenumber")
    ]
    assert key_source(sides[0]).fingerprint == key_source(sides[1]).fingerprint
    assert sides[0].fingerprint != sides[1].fingerprint and whole_table(sides[0])
    late = cs.canonical_tree(
        cs.bridge.capture(
            spark.sql("select l_orderkey from lineitem where l_shipdate > date'1995-01-01'")
        )
    )
    assert not whole_table(late) and key_source(late).op == "Filter"


def test_no_key_filter_pays_where_its_shuffle_costs_less_than_the_fixed_cost():
    """The bound that declines a join before measuring it agrees with every filter's model:
    at the bytes whose shuffle takes the fixed cost, each refuses even a filter that drops
    every row; above them one may pay."""
    at = policy.FIXED_COST_S * policy.SHUFFLE_RATE
    assert not policy.key_filter_can_pay(at) and policy.key_filter_can_pay(at * 1.01)
    width, rows = 40.0, int(at / 40.0)
    assert not policy.semi_prefilter(rows, width, 0.0, 1, 8.0).chosen
    assert not policy.bloom_join(rows, width, 0.0, 1, 8.0).chosen
    star = [policy.StarJoin(0.0, 1, 8.0, shuffled=True, candidate=True)]
    assert not policy.star_filters(rows, width, star).chosen
    assert policy.semi_prefilter(rows * 2, width, 0.0, 1, 8.0).chosen


def test_policy_defaults_follow_the_measured_break_even():
    """SF1 orders ⋈ lineitem (6M rows): gains measured at 1 % and 10 %, none at 50 %."""
    args = {"big_rows": 6_000_000, "big_width": 16, "key_width": 8}
    assert policy.semi_prefilter(survival=0.01, keys=15_000, **args).chosen
    assert policy.semi_prefilter(survival=0.10, keys=150_000, **args).chosen
    assert not policy.semi_prefilter(survival=0.50, keys=750_000, **args).chosen
    assert not policy.semi_prefilter(survival=1.0, keys=1_500_000, **args).chosen
    # too small to pay the extra key job
    assert not policy.semi_prefilter(
        big_rows=60_000, big_width=16, survival=0.01, keys=150, key_width=8
    ).chosen


def test_bloom_error_rate_minimises_the_papers_cost_model():
    """Seed 004: T(p) = b·m(p) + d·p·N_f; the chosen p is the model's minimum."""
    import math

    keys, filterable, width, parts = 1_500_000, 4_500_000, 40, 8

    def cost(p):
        bits = -keys * math.log(p) / math.log(2) ** 2
        build = bits * policy.BLOOM_BIT_COST_S * parts
        return build + p * filterable * width / policy.SHUFFLE_RATE

    p = policy.bloom_error_rate(keys, filterable, width, parts)
    assert 1e-4 < p < 0.5
    assert cost(p) <= min(cost(p * 1.5), cost(p / 1.5))
    # more rows to filter out: a more precise (bigger) filter pays
    assert policy.bloom_error_rate(keys, 10 * filterable, width, parts) < p


# --- Bloom join -------------------------------------------------------------------------------


@pytest.fixture
def bloom_forced(forced, monkeypatch):
    """No exact key set is small enough to broadcast: the prefilter declines, Bloom decides."""
    monkeypatch.setattr(policy, "MAX_EXACT_KEY_BYTES", -1)


def planned(cs, df) -> str:
    """The optimized plan Criss ran for ``df`` (after its join rewrites)."""
    return str(cs._records[df].captured.root.toString())


def bloom_choice(cs, df):
    return next(c for c in cs._records[df].joins if c.optimization == "bloom_join")


def test_bloom_join_applied_and_equal(shuffle_joins, bloom_forced, tmp_path):
    spark = shuffle_joins
    cs = session(spark, tmp_path, runtime_filters=False)
    df = cs.sql(ORDERS_1PCT)
    assert_same_rows(df.collect(), spark.sql(ORDERS_1PCT).collect())
    lines = joins_lines(cs, df)
    assert any("semi_prefilter not applied" in ln and "too many" in ln for ln in lines), lines
    applied = [ln for ln in lines if "bloom_join APPLIED" in ln]
    assert applied and "fpp" in applied[0] and "bits" in applied[0], lines
    choice = bloom_choice(cs, df)
    d = choice.details
    assert d["filtered"] == "right" and d["keys"] == "l_orderkey"
    assert 0 < d["fpp"] < 0.01 and d["bits"] >= 64 and d["filter_bytes"] > 0
    assert d["survival"] < 0.05 < 0.2 and d["expected_surviving_rows"] < 0.05 * d["big_rows"]
    assert d["est_bloom_s"] < d["est_plain_s"]
    assert "might_contain" in planned(cs, df)
    counters = cs.report()["counters"]
    assert counters["joins_bloom_join"] == 1 and counters["bloom_filters_built"] == 1


def test_bloom_join_repeat_reuses_filter_and_plan(shuffle_joins, bloom_forced, tmp_path):
    spark = shuffle_joins
    cs = session(spark, tmp_path, runtime_filters=False)
    first = cs.sql(ORDERS_1PCT)
    first.collect()
    # a repeat reads the rewritten query's cached result: no join is optimized again
    repeat = cs.sql(ORDERS_1PCT)
    assert_same_rows(repeat.collect(), spark.sql(ORDERS_1PCT).collect())
    counters = cs.report()["counters"]
    assert counters["rewrites_join_rewrite"] == 1 and counters["joins_bloom_join"] == 1
    assert "via join-rewrite" in cs.explain(repeat)
    # with the cached results gone the query is optimized again, with the same filter
    first_tree = cs._records[first].captured.tree
    del first, repeat  # their leases pin the cached result
    gc.collect()
    cs.clear()
    again = cs.sql(ORDERS_1PCT)
    assert_same_rows(again.collect(), spark.sql(ORDERS_1PCT).collect())
    counters = cs.report()["counters"]
    assert counters["bloom_filters_built"] == 1 and counters["bloom_filters_reused"] == 1
    # the filter literal is named by content in captured plans: both queries' trees equal
    assert first_tree.fingerprint == cs._records[again].captured.tree.fingerprint
    tree = cs._records[again].captured.tree
    args = " ".join(repr(n.args) for n in tree.walk())
    assert "bloom:" in args and "[B@" not in args, "filter literal not named by its content"


def test_bloom_join_off_and_exact_prefilter_preferred(shuffle_joins, forced, tmp_path):
    spark = shuffle_joins
    # small exact key set: the prefilter wins, Bloom is not even considered
    cs = session(spark, tmp_path / "a", runtime_filters=False)
    df = cs.sql(ORDERS_1PCT)
    lines = joins_lines(cs, df)
    assert any("semi_prefilter APPLIED" in ln for ln in lines), lines
    assert not any("bloom_join" in ln for ln in lines), lines
    # option off: with the exact set too big nothing is applied
    policy_max = policy.MAX_EXACT_KEY_BYTES
    try:
        policy.MAX_EXACT_KEY_BYTES = -1
        cs = session(spark, tmp_path / "b", runtime_filters=False, bloom_join=False)
        df = cs.sql(ORDERS_1PCT)
        assert_same_rows(df.collect(), spark.sql(ORDERS_1PCT).collect())
        lines = joins_lines(cs, df)
        assert not any("APPLIED" in ln or "bloom_join" in ln for ln in lines), lines
        assert "might_contain" not in planned(cs, df)
    finally:
        policy.MAX_EXACT_KEY_BYTES = policy_max


def test_bloom_join_not_applied_at_high_selectivity(shuffle_joins, bloom_forced, tmp_path):
    spark = shuffle_joins
    cs = session(spark, tmp_path, runtime_filters=False)
    sql = ORDERS_1PCT.replace("1992-01-25", "1999-01-01")
    df = cs.sql(sql)
    assert_same_rows(df.collect(), spark.sql(sql).collect())
    lines = joins_lines(cs, df)
    assert any("bloom_join not applied" in ln and "100% of big rows" in ln for ln in lines), lines


@pytest.mark.parametrize(
    "sql",
    [*KEYED_JOINS, "select * from jf_big b join jf_small s on b.k = s.k and b.v % 3 = s.w % 3"],
)
def test_bloom_join_null_duplicate_and_empty_keys(
    shuffle_joins, bloom_forced, keyed_tables, sql, tmp_path
):
    cs = session(shuffle_joins, tmp_path, runtime_filters=False)
    df = _check_keyed_join(shuffle_joins, cs, sql, "bloom_join")
    if "jf_empty" in sql:
        assert bloom_choice(cs, df).details["filter_bytes"] == 0


def test_a_cached_result_is_reused_not_rewritten(shuffle_joins, forced, tmp_path):
    """The first run caches the result before the join inputs were measured (min_ref=2); the
    repeat must read that result, not rewrite the join (which would change its fingerprint)."""
    spark = shuffle_joins
    cs = criss.session(spark, home=tmp_path / "home", min_ref=2, eager_results=True, **FAST)
    first = cs.sql(ORDERS_1PCT)
    assert_same_rows(first.collect(), spark.sql(ORDERS_1PCT).collect())
    assert not any("APPLIED" in ln for ln in joins_lines(cs, first))
    again = cs.sql(ORDERS_1PCT)
    assert_same_rows(again.collect(), spark.sql(ORDERS_1PCT).collect())
    assert cs.last_query_summary().get("operators_reused", 0) >= 1
    assert joins_lines(cs, again) == []  # the joins lie inside the reused result
    assert cs.report()["counters"].get("join_key_measurements", 0) == 0


def test_join_keys_are_measured_after_the_action_and_used_by_the_next_query(
    shuffle_joins, forced, tmp_path
):
    """The default: a join input's key counts are measured by a job after the query's own
    action (not inside cs.sql, so a first occurrence runs no job of Criss's own for them),
    and the next query with that join uses them."""
    spark = shuffle_joins
    cs = criss.session(
        spark,
        home=tmp_path / "home",
        min_ref=1,
        eager_results=False,
        min_texec=1e9,  # nothing cached: the repeat plans its joins again
        runtime_filters=False,
        bloom_join=False,
        **FAST,
    )
    got = {"df": cs.sql(ORDERS_1PCT)}
    assert cs.report()["counters"].get("join_key_measurements", 0) == 0  # none in cs.sql
    assert not any("APPLIED" in ln for ln in joins_lines(cs, got["df"]))
    assert any("measured after this query's action" in ln for ln in joins_lines(cs, got["df"]))
    assert cs.last_query_summary(settle=False)["join_key_measurements_after_action"] >= 1
    assert_same_rows(got["df"].collect(), spark.sql(ORDERS_1PCT).collect())
    assert cs.report()["counters"]["join_key_measurements"] == 2  # both inputs, after it

    again = cs.sql(ORDERS_1PCT)
    assert_same_rows(again.collect(), spark.sql(ORDERS_1PCT).collect())
    assert any("semi_prefilter APPLIED" in ln for ln in joins_lines(cs, again)), joins_lines(
        cs, again
    )
    assert cs.report()["counters"]["join_key_measurements"] == 2  # measured once


def test_key_filters_are_not_considered_before_an_input_recurs_or_is_measured(
    shuffle_joins, forced, tmp_path, monkeypatch
):
    """With ``min_ref=2`` the key filters need an input computed by an earlier query (to
    measure it) or measured before: on a first sight of unseen inputs none is considered,
    and no join of the plan is read from the JVM. The next query computing the same inputs
    has their keys measured after its action, and the one after that applies the filter."""
    from criss.bridge.joins import JoinPlan

    reads = []
    node_at = JoinPlan.node_at
    monkeypatch.setattr(
        JoinPlan, "node_at", lambda self, path: reads.append(path) or node_at(self, path)
    )
    spark = shuffle_joins
    # nothing fits the cache: each repeat plans its joins again
    options = {"memory_capacity": 1, "disk_capacity": 1, "bloom_join": False, **FAST}
    cs = criss.session(spark, home=tmp_path / "home", min_ref=2, **options)
    first = cs.sql(ORDERS_1PCT)
    assert reads == []
    lines = joins_lines(cs, first)
    assert len(lines) == 1 and "key_filters not applied" in lines[0], lines
    assert "min_ref=2" in lines[0]
    assert cs.last_query_summary(settle=False)["joins_without_key_counts"] == 1
    assert_same_rows(first.collect(), spark.sql(ORDERS_1PCT).collect())

    second = cs.sql(ORDERS_1PCT)
    assert reads  # the joins are looked at now
    lines = joins_lines(cs, second)
    assert not any("key_filters" in ln for ln in lines)
    assert any("measured after this query's action" in ln for ln in lines), lines
    assert_same_rows(second.collect(), spark.sql(ORDERS_1PCT).collect())
    cs.settle_harvests()  # the measurements after the action

    third = cs.sql(ORDERS_1PCT)
    lines = joins_lines(cs, third)
    assert any("semi_prefilter APPLIED" in ln for ln in lines), lines
    assert_same_rows(third.collect(), spark.sql(ORDERS_1PCT).collect())
    assert cs.report()["counters"]["joins_without_key_counts"] == 1
    cs.close()
